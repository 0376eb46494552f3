"""`check_invariants` on the shipments table, on moto: clean after every kind of ordinary
operation, and each way of corrupting a shipment's index attributes by hand is found."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import marshal
from queues_app.monitoring import invariants
from queues_app.shipments.queue import RetryPolicy, ShipmentQueue, ShipmentState, ready_sort_key, timed_sort_key


@pytest.fixture
def queue(moto_db, clock):
    return ShipmentQueue(
        moto_db, clock=clock, retry=RetryPolicy(max_receives=2, backoff_base_seconds=10, backoff_max_seconds=60)
    )


def queued(queue, sid, priority=0, **options):
    queue.create({"to": "Lyon"}, shipment_id=sid, priority=priority, ready=True)
    return queue.enqueue(sid, **options)


@pytest.fixture
def busy(queue, clock):
    """Shipments in every state, reached through the ordinary operations only."""
    queue.create({"to": "Oslo"}, shipment_id="building")  # under construction
    queue.create({"to": "Rome"}, shipment_id="ready", ready=True)  # ready, not queued
    queued(queue, "waiting-low", priority=1)
    queued(queue, "waiting-high", priority=7)
    queued(queue, "later", delay_seconds=3600)  # delayed by the enqueue
    for sid in ("done", "in-flight", "failing", "dead", "restored", "removed", "removed-in-flight", "expired"):
        queued(queue, sid, priority=9)
    leases = {}
    for _ in range(8):
        lease = queue.receive(visibility_timeout=30)
        leases[lease.shipment.shipment_id] = lease
    assert set(leases) == {
        "done",
        "in-flight",
        "failing",
        "dead",
        "restored",
        "removed",
        "removed-in-flight",
        "expired",
    }
    queue.complete("done", leases["done"].receipt)
    queue.fail("failing", leases["failing"].receipt, "carrier down")  # delayed by the backoff
    queue.send_to_dlq("dead", "bad address")
    queue.send_to_dlq("restored", "bad address")
    queue.restore("restored")
    queue.remove("removed")
    queue.enqueue("removed")  # queued again
    queue.remove("removed-in-flight")  # ready, not queued
    queue.heartbeat("in-flight", leases["in-flight"].receipt, extend_seconds=3600)
    queue.set_priority("waiting-low", 4)
    queue.touch("waiting-high")
    clock.advance(31)  # "expired": the lease ran out, nobody took it again yet
    queued(queue, "taken", priority=0)
    # the head (priority 9, restored before "removed" was enqueued again): completed at once
    assert queue.dequeue().shipment_id == "restored"
    states = {
        sid: queue.get(sid).state
        for sid in (
            "building",
            "ready",
            "waiting-low",
            "waiting-high",
            "later",
            "done",
            "in-flight",
            "failing",
            "dead",
            "restored",
            "removed",
            "removed-in-flight",
            "expired",
            "taken",
        )
    }
    assert states == {
        "building": ShipmentState.UNDER_CONSTRUCTION,
        "ready": ShipmentState.READY,
        "waiting-low": ShipmentState.QUEUED,
        "waiting-high": ShipmentState.QUEUED,
        "later": ShipmentState.DELAYED,
        "done": ShipmentState.COMPLETED,
        "in-flight": ShipmentState.PROCESSING,
        "failing": ShipmentState.DELAYED,
        "dead": ShipmentState.IN_DLQ,
        "restored": ShipmentState.COMPLETED,
        "removed": ShipmentState.QUEUED,
        "removed-in-flight": ShipmentState.READY,
        "expired": ShipmentState.PROCESSING,
        "taken": ShipmentState.QUEUED,
    }
    return leases


def update(queue, sid, expression, values=None, names=None):
    params = {"TableName": queue.db.table("shipments"), "Key": marshal({"id": sid}), "UpdateExpression": expression}
    if values:
        params["ExpressionAttributeValues"] = marshal(values)
    if names:
        params["ExpressionAttributeNames"] = names
    queue.db.call("update_item", **params)


def put(queue, item):
    queue.db.call("put_item", TableName=queue.db.table("shipments"), Item=marshal(item))


def raw(queue, sid):
    from queues_app.ddb.codec import unmarshal

    return unmarshal(
        queue.db.call("get_item", TableName=queue.db.table("shipments"), Key=marshal({"id": sid}), ConsistentRead=True)[
            "Item"
        ]
    )


def violations(queue):
    return [str(v) for v in invariants.check(queue.db, passes=1).violations]


def assert_command_fails(capsys, *expected):
    with pytest.raises(CommandError) as caught:
        call_command("check_invariants", "--once")
    assert "violation" in str(caught.value)
    out = capsys.readouterr().out
    for text in expected:
        assert text in out
    return str(caught.value)


def test_a_clean_table_after_every_kind_of_operation(queue, busy, capsys):
    report = invariants.check(queue.db)
    assert report.violations == []
    assert report.passes == 1
    c = report.counts
    assert c["shipments"] == 14
    assert (
        c["shipments_under_construction"],
        c["shipments_ready"],
        c["shipments_queued"],
        c["shipments_delayed"],
        c["shipments_processing"],
        c["shipments_completed"],
        c["shipments_in_dlq"],
    ) == (1, 2, 4, 2, 2, 2, 1)
    call_command("check_invariants")
    out = capsys.readouterr().out
    assert out.startswith("OK: no violations; 0 agents")
    assert (
        "14 shipments (1 under construction, 2 ready, 4 queued, 2 delayed, 2 processing, 2 completed, 1 in DLQ)"
    ) in out


def test_leases_that_keep_expiring_end_in_the_dlq_and_stay_clean(queue, busy, clock):
    # Nobody completes anything any more: every queued or delayed shipment is received
    # until its leases have run out twice (max 2), and the receive after that dead-letters it.
    for _ in range(20):
        clock.advance(3601)  # past every delay, backoff and lease
        while queue.receive(visibility_timeout=5) is not None:
            pass
        assert violations(queue) == []
    counts = queue.counts()
    assert (counts.queued, counts.delayed, counts.in_flight) == (0, 0, 0)
    assert counts.dlq == 9  # dead, expired, in-flight, failing, later, waiting-low/high, removed, taken
    assert queue.get("expired").dlq_reason.startswith("lease expired after 2 receives")


def test_an_empty_shipments_table_is_clean(moto_db, capsys):
    assert invariants.check(moto_db, passes=1).counts["shipments"] == 0
    call_command("check_invariants", "--once")
    assert "WAITING items, 0 shipments." in capsys.readouterr().out


def test_a_processing_shipment_still_in_the_ready_index(queue, busy, capsys):
    shipment = queue.get("in-flight")
    stale = ready_sort_key(shipment.priority, shipment.enqueued_at, "in-flight")
    update(queue, "in-flight", "SET ready_q = :q, ready_sk = :sk", {":q": "live", ":sk": stale})
    assert violations(queue) == [
        "[shipments.index] shipment in-flight: processing but in the ready index (ready_q, ready_sk)"
    ]
    assert_command_fails(capsys, "[shipments.index] shipment in-flight")


def test_a_dlq_shipment_without_its_sort_key(queue, busy, capsys):
    update(queue, "dead", "REMOVE dlq_sk")
    assert violations(queue) == [
        "[shipments.index] shipment dead: dlq_q without dlq_sk (an incomplete dlq index entry)"
    ]
    assert_command_fails(capsys, "[shipments.index] shipment dead")


def test_a_dlq_shipment_in_no_index_at_all(queue, busy):
    update(queue, "dead", "REMOVE dlq_sk, dlq_q")
    assert violations(queue) == [
        "[shipments.index] shipment dead: in DLQ but not in the dlq index (no dlq_q or dlq_sk)"
    ]


def test_a_ready_shipment_both_queued_and_delayed(queue, busy, capsys):
    shipment = queue.get("waiting-low")
    visible = to_iso(now() + timedelta(minutes=5))
    update(
        queue,
        "waiting-low",
        "SET invisible_q = :q, invisible_sk = :sk, visible_at = :v",
        {":q": "live", ":sk": timed_sort_key(visible, "waiting-low"), ":v": visible},
    )
    assert shipment.state == ShipmentState.QUEUED
    assert violations(queue) == [
        (
            "[shipments.index] shipment waiting-low: ready to ship but both queued and delayed: "
            "in the ready and the invisible index"
        )
    ]
    message = assert_command_fails(capsys, "shipment waiting-low")
    assert "1 violation(s) found" in message


def test_a_stale_ready_sort_key_after_a_priority_change(queue, busy, capsys):
    shipment = queue.get("waiting-high")
    update(queue, "waiting-high", "SET priority = :p", {":p": 2})
    expected = ready_sort_key(2, shipment.enqueued_at, "waiting-high")
    assert violations(queue) == [
        (
            f"[shipments.sort_key] shipment waiting-high: ready_sk is {shipment.ready_sk!r}, expected {expected!r} "
            f"(priority 2, enqueued at {shipment.enqueued_at})"
        )
    ]
    assert_command_fails(capsys, "[shipments.sort_key] shipment waiting-high")


def test_a_completed_shipment_with_a_receipt(queue, busy, capsys):
    update(queue, "done", "SET receipt = :r", {":r": "abc123"})
    assert violations(queue) == ["[shipments.lease] shipment done: completed but holds a receipt (abc123)"]
    assert_command_fails(capsys, "[shipments.lease] shipment done")


def test_stale_invisible_and_dlq_sort_keys_and_a_foreign_queue(queue, busy):
    update(queue, "in-flight", "SET visible_at = :v", {":v": "2000-01-01T00:00:00.000000Z"})
    update(queue, "dead", "SET dlq_q = :q", {":q": "other"})
    found = violations(queue)
    assert any(v.startswith("[shipments.sort_key] shipment in-flight: invisible_sk is") for v in found)
    assert "[shipments.index] shipment dead: dlq_q is 'other' but the shipment's queue is 'live'" in found
    assert len(found) == 2


def test_unknown_status_and_lease_attributes_out_of_place(queue, busy):
    put(queue, {"id": "odd", "type": "shipment", "status": "LOST", "queue": "live", "data": {}})
    update(queue, "in-flight", "REMOVE receipt")
    update(queue, "building", "SET ready_q = :q", {":q": "live"})
    update(queue, "later", "REMOVE visible_at")
    found = violations(queue)
    assert (
        "[shipments.status] shipment odd: unknown status 'LOST' (expected one of UNDER_CONSTRUCTION, "
        "READY_TO_SHIP, PROCESSING_SHIPMENT, COMPLETED, IN_DLQ)" in found
    )
    assert "[shipments.lease] shipment in-flight: processing without a receipt" in found
    assert "[shipments.index] shipment building: ready_q without ready_sk (an incomplete ready index entry)" in found
    assert "[shipments.index] shipment building: under construction but in the ready index (ready_q)" in found
    assert any(
        v.startswith("[shipments.sort_key] shipment later: invisible_sk is") and "no visible_at" in v for v in found
    )
    report = invariants.check(queue.db, passes=1)
    assert report.counts["shipments_unknown"] == 1
    assert "1 with an unknown status" in report.summary()


def test_a_dlq_shipment_that_kept_its_lease(queue, busy):
    item = raw(queue, "dead")
    put(
        queue,
        {
            **item,
            "receipt": "r1",
            "visible_at": item["dlq_at"],
            "invisible_q": "live",
            "invisible_sk": timed_sort_key(item["dlq_at"], "dead"),
        },
    )
    found = violations(queue)
    assert "[shipments.index] shipment dead: in DLQ but in the invisible index (invisible_q, invisible_sk)" in found
    assert "[shipments.lease] shipment dead: in DLQ but holds a receipt (r1)" in found


def test_shipment_violations_are_confirmed_across_passes(queue, busy):
    update(queue, "done", "SET receipt = :r", {":r": "abc123"})

    def heal(seconds):
        update(queue, "done", "REMOVE receipt")

    report = invariants.check(queue.db, pause=0.01, sleep=heal)
    assert report.violations == [] and report.passes == 2
    update(queue, "done", "SET receipt = :r", {":r": "abc123"})
    report = invariants.check(queue.db, pause=0.01, sleep=lambda s: None)
    assert [v.key for v in report.violations] == [("shipments.lease", "shipment done")]
    assert report.passes == 3


def test_every_corruption_at_once_is_listed_and_the_command_exits_non_zero(queue, busy):
    from django.core.management import ManagementUtility

    update(queue, "dead", "REMOVE dlq_sk")
    update(queue, "done", "SET receipt = :r", {":r": "abc123"})
    update(queue, "waiting-high", "SET priority = :p", {":p": 2})
    subjects = {v.subject for v in invariants.find_violations(queue.db, passes=1)}
    assert subjects == {"shipment dead", "shipment done", "shipment waiting-high"}
    with pytest.raises(SystemExit) as caught:
        ManagementUtility(["manage.py", "check_invariants", "--once"]).execute()
    assert caught.value.code == 1
