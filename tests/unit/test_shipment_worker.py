import io
import threading

from django.core.management import call_command

from queues_app.shipments.queue import RetryPolicy, ShipmentQueue, ShipmentState, ShipmentStatus
from queues_app.shipments.worker import HandlerFailed, ShipmentWorker, demo_handler


def make_queue(moto_db, n=3, **data):
    queue = ShipmentQueue(
        moto_db, retry=RetryPolicy(max_receives=2, backoff_base_seconds=0.01, backoff_max_seconds=0.02)
    )
    for i in range(n):
        queue.create(dict(data), shipment_id=f"s{i}", ready=True)
        queue.enqueue(f"s{i}")
    return queue


def test_it_completes_what_it_takes(moto_db):
    queue = make_queue(moto_db)
    worker = ShipmentWorker(queue, demo_handler(fail_share=0, work_seconds=0.01), idle_sleep=0.01)
    stats = worker.run(stop_when_empty=True)
    assert sorted(stats.completed_ids) == ["s0", "s1", "s2"]
    assert all(queue.get(f"s{i}").status == ShipmentStatus.COMPLETED for i in range(3))


def test_failures_retry_then_dead_letter(moto_db):
    queue = make_queue(moto_db, n=1, always_fail=True)
    worker = ShipmentWorker(queue, demo_handler(work_seconds=0.0), idle_sleep=0.01)
    worker.run(max_shipments=1)
    assert queue.get("s0").state == ShipmentState.DELAYED
    import time

    time.sleep(0.05)
    worker.run(max_shipments=1)
    dead = queue.get("s0")
    assert dead.status == ShipmentStatus.IN_DLQ
    assert len(dead.failure_reasons) == 2


def test_it_heartbeats_during_long_work(moto_db):
    queue = make_queue(moto_db, n=1)

    def slow(shipment, stop):
        # Works until the worker has heartbeated twice meanwhile (30 s at most), rather than
        # a fixed 0.5 s that a slow or paused machine may spend before the first beat.
        for _ in range(3000):
            if worker.stats.heartbeats >= 2 or stop.wait(0.01):
                return

    worker = ShipmentWorker(queue, slow, visibility_timeout=0.15, idle_sleep=0.01)
    stats = worker.run(max_shipments=1)
    assert stats.heartbeats >= 2
    assert stats.completed == 1 and stats.lost_leases == 0


def test_on_stop_it_gives_back_what_it_holds(moto_db):
    queue = make_queue(moto_db, n=1)
    started = threading.Event()

    def stuck(shipment, stop):
        started.set()
        stop.wait(60)  # until the worker gives it back and tells the handler to stop
        raise HandlerFailed("interrupted")

    worker = ShipmentWorker(queue, stuck, visibility_timeout=0.1, grace_seconds=0.05, idle_sleep=0.01)
    thread = threading.Thread(target=worker.run, kwargs={"max_shipments": 1})
    thread.start()
    assert started.wait(60)  # the shipment is in hand, however long that took
    worker.stop()
    thread.join(60)
    assert not thread.is_alive()
    assert worker.stats.released == 1
    back = queue.get("s0")
    assert back.state == ShipmentState.QUEUED
    assert back.receive_count == 1 and back.failure_reasons == []


def test_the_command_drains_the_queue(moto_db):
    make_queue(moto_db, n=2)
    out = io.StringIO()
    call_command("run_shipment_worker", "--until-empty", "--fail-share", "0", "--work-seconds", "0.01", stdout=out)
    assert "2 completed" in out.getvalue()
