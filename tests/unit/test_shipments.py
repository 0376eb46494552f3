"""The shipments priority queue, single-threaded on moto."""

import pytest

from queues_app.ddb import errors, meter
from queues_app.shipments.queue import (
    InvalidTransition,
    ReceiptInvalid,
    RetryPolicy,
    ShipmentQueue,
    ShipmentState,
    ShipmentStatus,
)


@pytest.fixture
def queue(moto_db, clock):
    return ShipmentQueue(
        moto_db, clock=clock, retry=RetryPolicy(max_receives=3, backoff_base_seconds=10, backoff_max_seconds=60)
    )


def ready(queue, sid, priority=0, data=None):
    queue.create(data or {"to": "Lyon"}, shipment_id=sid, priority=priority, ready=True)
    return queue.enqueue(sid)


def test_a_shipment_under_construction_cannot_be_enqueued(queue):
    queue.create({"to": "Oslo"}, shipment_id="s1")
    with pytest.raises(InvalidTransition, match="under construction"):
        queue.enqueue("s1")
    made_ready = queue.mark_ready("s1", expected_version=1)
    assert made_ready.state == ShipmentState.READY
    assert queue.enqueue("s1").state == ShipmentState.QUEUED


def test_enqueueing_twice_is_refused(queue):
    ready(queue, "s1")
    with pytest.raises(errors.Conflict):
        queue.enqueue("s1")


def test_receive_takes_priority_then_time_and_hides_the_shipment(queue):
    ready(queue, "low-1")
    ready(queue, "high", priority=5)
    ready(queue, "low-2")
    lease = queue.receive(visibility_timeout=30)
    assert lease.shipment.shipment_id == "high"
    assert lease.shipment.status == ShipmentStatus.PROCESSING
    assert lease.shipment.receive_count == 1
    assert lease.shipment.first_attempt_at
    assert queue.receive().shipment.shipment_id == "low-1"
    assert queue.receive().shipment.shipment_id == "low-2"
    assert queue.receive() is None


def test_complete_with_the_receipt(queue):
    ready(queue, "s1")
    lease = queue.receive()
    done = queue.complete("s1", lease.receipt)
    assert done.status == ShipmentStatus.COMPLETED and done.state == ShipmentState.COMPLETED
    assert queue.get("s1").data == {"to": "Lyon"}  # stays in the table
    # Completed again with the same receipt (its first answer lost): answered as done, unchanged.
    again = queue.complete("s1", lease.receipt)
    assert again.status == ShipmentStatus.COMPLETED and again.version == done.version
    with pytest.raises(ReceiptInvalid, match="completed already"):
        queue.fail("s1", lease.receipt, "too late")
    with pytest.raises(ReceiptInvalid, match="completed already"):
        queue.heartbeat("s1", lease.receipt)


def test_an_expired_lease_goes_to_the_next_consumer_and_the_old_receipt_is_dead(queue, clock):
    ready(queue, "s1")
    first = queue.receive(visibility_timeout=30)
    clock.advance(31)
    second = queue.receive(visibility_timeout=30)
    assert second.shipment.shipment_id == "s1"
    assert second.shipment.receive_count == 2
    assert second.shipment.lease_expirations == 1
    with pytest.raises(ReceiptInvalid, match="another consumer holds it"):
        queue.complete("s1", first.receipt)
    with pytest.raises(ReceiptInvalid):
        queue.fail("s1", first.receipt, "late")
    assert queue.complete("s1", second.receipt).status == ShipmentStatus.COMPLETED


def test_heartbeat_keeps_the_lease(queue, clock):
    ready(queue, "s1")
    lease = queue.receive(visibility_timeout=30)
    clock.advance(20)
    queue.heartbeat("s1", lease.receipt, extend_seconds=30)
    clock.advance(20)
    assert queue.receive() is None  # still held
    assert queue.complete("s1", lease.receipt).status == ShipmentStatus.COMPLETED


def test_fail_retries_after_backoff_then_dead_letters(queue, clock):
    ready(queue, "s1")
    for attempt in (1, 2):
        lease = queue.receive()
        failed = queue.fail("s1", lease.receipt, f"carrier down #{attempt}")
        assert failed.state == ShipmentState.DELAYED
        assert queue.receive() is None  # not visible during the backoff
        clock.advance(61)
    lease = queue.receive()
    assert lease.shipment.receive_count == 3
    dead = queue.fail("s1", lease.receipt, "carrier down #3")
    assert dead.status == ShipmentStatus.IN_DLQ
    assert "failed 3 times" in dead.dlq_reason
    assert [r["reason"] for r in dead.failure_reasons] == ["carrier down #1", "carrier down #2", "carrier down #3"]
    assert [s.shipment_id for s in queue.list_dlq().items] == ["s1"]


def test_a_shipment_whose_leases_keep_expiring_goes_to_the_dlq(queue, clock):
    ready(queue, "poison")
    for _ in range(3):
        assert queue.receive(visibility_timeout=5).shipment.shipment_id == "poison"
        clock.advance(6)
    assert queue.receive() is None
    dead = queue.get("poison")
    assert dead.status == ShipmentStatus.IN_DLQ
    assert "lease expired after 3 receives" in dead.dlq_reason


def test_restore_from_the_dlq_keeps_history(queue, clock):
    ready(queue, "s1")
    first_enqueued = queue.get("s1").first_enqueued_at
    lease = queue.receive()
    queue.send_to_dlq("s1", "bad address")
    with pytest.raises(ReceiptInvalid, match="sent to the DLQ"):
        queue.complete("s1", lease.receipt)
    restored = queue.restore("s1").item
    assert restored.state == ShipmentState.QUEUED
    assert restored.first_enqueued_at == first_enqueued
    assert restored.receive_count == 1
    assert restored.restored_count == 1
    assert restored.dlq_reason == "bad address"  # kept as history
    assert queue.list_dlq().items == []


def test_restore_of_a_queued_shipment_is_an_invalid_transition(queue):
    ready(queue, "s1")
    with pytest.raises(InvalidTransition, match="queued"):
        queue.restore("s1")


def test_touch_sends_to_the_back_of_its_priority(queue):
    ready(queue, "a")
    ready(queue, "b")
    queue.touch("a")
    assert [s.shipment_id for s in queue.list_queue().items] == ["b", "a"]


def test_set_priority_reorders(queue):
    ready(queue, "a")
    ready(queue, "b")
    queue.set_priority("b", 9)
    assert [s.shipment_id for s in queue.list_queue().items] == ["b", "a"]
    assert queue.receive().shipment.shipment_id == "b"


def test_a_stale_version_is_a_conflict_that_says_what_changed(queue):
    shipment = ready(queue, "s1")
    queue.touch("s1", expected_version=shipment.version)
    with pytest.raises(errors.Conflict, match=rf"version {shipment.version} -> {shipment.version + 1}"):
        queue.set_priority("s1", 3, expected_version=shipment.version)


def test_unknown_ids_are_not_found(queue):
    for action in (
        lambda: queue.get("nope"),
        lambda: queue.touch("nope"),
        lambda: queue.restore("nope"),
        lambda: queue.complete("nope", "r"),
    ):
        with pytest.raises(errors.NotFound):
            action()


def test_remove_takes_it_off_the_queue_and_kills_the_receipt(queue):
    ready(queue, "s1")
    lease = queue.receive()
    removed = queue.remove("s1").item
    assert removed.state == ShipmentState.READY
    with pytest.raises(ReceiptInvalid):
        queue.complete("s1", lease.receipt)
    assert queue.receive() is None
    assert queue.enqueue("s1").state == ShipmentState.QUEUED


def test_dequeue_takes_and_removes_at_once(queue):
    ready(queue, "s1")
    taken = queue.dequeue()
    assert taken.shipment_id == "s1" and taken.status == ShipmentStatus.COMPLETED
    assert queue.dequeue() is None


def test_delayed_enqueue_becomes_visible_later(queue, clock):
    queue.create({}, shipment_id="later", ready=True)
    assert queue.enqueue("later", delay_seconds=30).state == ShipmentState.DELAYED
    assert queue.receive() is None
    clock.advance(31)
    assert queue.receive().shipment.shipment_id == "later"


def test_counts_and_lists(queue, clock):
    for i in range(3):
        ready(queue, f"q{i}")
    lease = queue.receive()
    ready(queue, "x")
    queue.send_to_dlq("x", "bad")
    counts = queue.counts()
    assert (counts.queued, counts.in_flight, counts.dlq, counts.delayed) == (2, 1, 1, 0)
    assert [s.shipment_id for s in queue.list_in_flight().items] == [lease.shipment.shipment_id]
    assert queue.oldest_queued_at() is not None


def test_selective_restore_by_filter(queue, clock):
    for sid, reason in (("a", "bad address"), ("b", "carrier down"), ("c", "bad address")):
        ready(queue, sid)
        queue.send_to_dlq(sid, reason)
    matching = queue.dlq_matching(reason_contains="ADDRESS")
    assert sorted(s.shipment_id for s in matching) == ["a", "c"]
    report = queue.restore_many([s.shipment_id for s in matching] + ["b-not-in-dlq"])
    assert sorted(report.restored) == ["a", "c"]
    assert report.skipped[0][0] == "b-not-in-dlq"
    assert [s.shipment_id for s in queue.list_dlq().items] == ["b"]


def test_receive_makes_at_most_three_requests(queue):
    for i in range(20):
        ready(queue, f"s{i}")
    for _ in range(10):
        queue.receive()
    with meter.measure() as measured:
        assert queue.receive() is not None
    assert measured.calls <= 3


def test_a_restored_shipment_gets_a_fresh_retry_budget_but_keeps_its_history(queue, clock):
    ready(queue, "s1")
    for _ in range(3):
        queue.fail("s1", queue.receive().receipt, "down")
        clock.advance(61)
    assert queue.get("s1").status == ShipmentStatus.IN_DLQ
    queue.restore("s1")
    lease = queue.receive()
    again = queue.fail("s1", lease.receipt, "down again")
    assert again.state == ShipmentState.DELAYED  # one failure after a restore is not the end
    assert again.receive_count == 4 and again.attempts == 1
    assert len(again.failure_reasons) == 4


def test_a_stale_receipt_on_a_taken_back_shipment_is_receipt_invalid(queue):
    ready(queue, "s1")
    lease = queue.receive()
    queue.remove("s1")
    with pytest.raises(ReceiptInvalid, match="ready"):
        queue.fail("s1", lease.receipt, "late")
    with pytest.raises(ReceiptInvalid):
        queue.release("s1", lease.receipt)
