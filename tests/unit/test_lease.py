"""The one fenced lease (`queues_app/ddb/lease.py`) on its two items: the task processor's
in the tasks table and the matching dispatcher's in the callcenter table, including lease
items as earlier versions stored them."""

from __future__ import annotations

from queues_app.centre import keys
from queues_app.ddb.codec import marshal
from queues_app.ddb.lease import Lease
from queues_app.routing import dispatch
from queues_app.tasks.processor_lease import processor_lease


class Clock:
    def __init__(self, at: float = 1000.0):
        self.at = at

    def __call__(self) -> float:
        return self.at


def stored(db, table: str, key: dict) -> dict:
    item = db.client.get_item(TableName=db.table(table), Key=marshal(key), ConsistentRead=True)["Item"]
    return {name: next(iter(value.values())) for name, value in item.items()}


def test_a_dispatcher_lease_stored_before_leases_had_a_generation_is_read_and_taken_over(moto_db):
    # As the dispatcher wrote it before: holder, address, lease_until, no generation.
    moto_db.client.put_item(
        TableName=moto_db.table("callcenter"),
        Item=marshal({**keys.lease(dispatch.LEASE_NAME), "holder": "old", "address": "10.0.0.1:4000",
                      "lease_until": 1002.0, "type": "lease"}),
    )  # fmt: skip
    clock = Clock()
    info = dispatch.current_holder(moto_db)
    assert info is not None and (info.holder, info.address, info.generation) == ("old", "10.0.0.1:4000", 0)
    assert info.live(clock())

    new = dispatch.matching_lease(moto_db, holder="new", address="10.0.0.2:5000", now=clock)
    assert not new.acquire()
    assert new.last_seen == info
    clock.at = 1003.0
    assert new.acquire() and new.generation == 1
    assert dispatch.current_holder(moto_db).address == "10.0.0.2:5000"


def test_a_task_lease_stored_before_is_renewed_by_its_holder(moto_db):
    moto_db.client.put_item(
        TableName=moto_db.table("tasks"),
        Item=marshal({"task_id": "LEASE#task-processor", "holder": "h", "lease_until": 1010.0, "generation": 4,
                      "acquired_at": 995.0, "expires_at": 4610, "type": "lease"}),
    )  # fmt: skip
    lease = processor_lease(moto_db, holder="h", duration=15, now=Clock())
    assert lease.acquire() and lease.generation == 5  # ours already: taken again, fenced anew
    assert lease.renew()
    assert float(stored(moto_db, "tasks", {"task_id": "LEASE#task-processor"})["lease_until"]) == 1015.0


def test_the_two_leases_are_items_of_their_own_tables_and_do_not_meet(moto_db):
    clock = Clock()
    tasks = processor_lease(moto_db, holder="same-name", now=clock)
    matching = dispatch.matching_lease(moto_db, holder="other", address="h:1", now=clock)
    assert tasks.acquire() and matching.acquire()
    assert tasks.current().holder == "same-name" and matching.current().holder == "other"
    assert tasks.current().address == ""  # the task lease publishes no address


def test_a_released_lease_names_nobody_and_its_generation_keeps_growing(moto_db):
    clock = Clock()
    first = dispatch.matching_lease(moto_db, holder="one", address="h:1", now=clock)
    second = dispatch.matching_lease(moto_db, holder="two", address="h:2", now=clock)
    assert first.acquire() and first.release()
    assert first.current() is None
    assert "address" not in stored(moto_db, "callcenter", keys.lease(dispatch.LEASE_NAME))
    assert second.acquire() and second.generation == 2  # free at once after a release


def test_a_holder_without_an_address_leaves_none_of_the_last_holders(moto_db):
    clock = Clock()
    first = dispatch.matching_lease(moto_db, holder="one", address="h:1", duration=3, now=clock)
    assert first.acquire()
    clock.at += 5  # ran out without a release (the process died)
    quiet = Lease(moto_db, table="callcenter", key=keys.lease(dispatch.LEASE_NAME), holder="two", now=clock)
    assert quiet.acquire()
    assert quiet.current().address == ""


def test_lease_until_is_counted_from_the_clock_read_before_the_request_and_held_ends_a_margin_early(moto_db):
    clock = Clock()
    lease = dispatch.matching_lease(moto_db, holder="one", address="h:1", duration=3, now=clock)
    assert lease.acquire()
    assert lease.until == 1003.0 and lease.margin == 0.3
    clock.at = 1002.6
    assert lease.held
    clock.at = 1002.71
    assert not lease.held and lease.remaining() == 0.0
