"""What the shipment worker and the task processor log: each outcome with its duration
and trace id, and a standby processor saying whom it waits for (once per change)."""

import logging
import threading

from queues_app.shipments.queue import RetryPolicy, ShipmentQueue
from queues_app.shipments.worker import ShipmentWorker, demo_handler
from queues_app.tasks.downstream import AtCapacity, DownstreamFailed
from queues_app.tasks.processor import TaskProcessor
from queues_app.tasks.processor_lease import processor_lease
from queues_app.tasks.queue import TaskQueue
from queues_app.tracing import TraceIdFilter


def lines(caplog, logger):
    return [(r.levelname, r.getMessage(), getattr(r, "trace_id", None)) for r in caplog.records if r.name == logger]


def test_shipment_outcomes_are_logged_with_duration_backoff_and_trace_id(moto_db, caplog, clock):
    # The queue's clock stands still (the retry is due 4 to 8 s after the failure, and the
    # log says how far off it is): a slow machine cannot take time off it.
    queue = ShipmentQueue(
        moto_db, clock=clock, retry=RetryPolicy(max_receives=2, backoff_base_seconds=8, backoff_max_seconds=8)
    )
    queue.submit({}, shipment_id="ok", trace_id="trace-ok")
    queue.create({"always_fail": True}, shipment_id="bad", ready=True)
    queue.enqueue("bad")
    caplog.handler.addFilter(TraceIdFilter())
    worker = ShipmentWorker(queue, demo_handler(fail_share=0, work_seconds=0.0, seed=1), idle_sleep=0.01)
    with caplog.at_level(logging.INFO, logger="queues_app"):
        worker.run(stop_when_empty=True)
    logged = lines(caplog, "queues_app.shipments.worker")
    completed = [line for line in logged if " completed in " in line[1]]
    assert len(completed) == 1 and completed[0][2] == "trace-ok"
    assert completed[0][1].startswith("shipment ok completed in 0.")
    failed = [line for line in logged if line[1].startswith("shipment bad failed")]
    assert len(failed) == 1 and failed[0][0] == "WARNING"
    assert "(demo carrier rejected shipment bad)" in failed[0][1]
    retry_in = float(failed[0][1].split("retry in ")[1].split(" s")[0])
    assert 3.9 <= retry_in <= 8.1  # the queue's backoff: half to all of 8 s


def test_a_dead_lettered_shipment_says_after_how_many_receives(moto_db, caplog):
    queue = ShipmentQueue(moto_db, retry=RetryPolicy(max_receives=1))
    queue.create({"always_fail": True}, shipment_id="dead", ready=True)
    queue.enqueue("dead")
    worker = ShipmentWorker(queue, demo_handler(work_seconds=0.0), idle_sleep=0.01)
    with caplog.at_level(logging.INFO, logger="queues_app"):
        worker.run(stop_when_empty=True)
    messages = [m for _, m, _ in lines(caplog, "queues_app.shipments.worker")]
    assert any(m.startswith("shipment dead dead-lettered after 1 receives (demo carrier rejected") for m in messages)


class Scripted:
    """A downstream answering from a script: "ok", "fail" or "full"."""

    def __init__(self, *answers):
        self.answers = list(answers)

    def process(self, task):
        answer = self.answers.pop(0) if self.answers else "ok"
        if answer == "fail":
            raise DownstreamFailed("carrier said no")
        if answer == "full":
            raise AtCapacity(retry_after=0.01)
        return "done"


def test_task_outcomes_are_logged_with_duration_and_trace_id(moto_db, caplog):
    tasks = TaskQueue(moto_db)
    tasks.create(task_id="t1", trace_id="trace-t1")
    caplog.handler.addFilter(TraceIdFilter())
    processor = TaskProcessor(tasks, Scripted("full", "fail"), holder="p1", use_streams=False, capacity_wait=0.01)
    with caplog.at_level(logging.INFO, logger="queues_app"):
        processor.run(5, until_empty=True)
        tasks.create(task_id="t2", trace_id="trace-t2")
        processor.run(5, until_empty=True)
    logged = [(m, t) for _, m, t in lines(caplog, "queues_app.tasks.processor") if m.startswith("task ")]
    assert logged[0] == ("task t1 released: downstream full", "trace-t1")
    assert logged[1][0].startswith("task t1 failed (carrier said no) in 0.") and logged[1][1] == "trace-t1"
    assert logged[2][0].startswith("task t2 succeeded in 0.") and logged[2][1] == "trace-t2"


def test_a_standby_processor_says_so_once_then_that_it_took_the_lease(moto_db, caplog):
    tasks = TaskQueue(moto_db)
    other = processor_lease(tasks.db, holder="other-host:1", duration=30)
    assert other.acquire()
    processor = TaskProcessor(tasks, Scripted(), holder="p1", use_streams=False, acquire_retry=0.02)
    # Three refusals, however long they take (the time boxes only end a broken run).
    standing_by, acquire = threading.Event(), processor.lease.acquire

    def acquire_or_count():
        held = acquire()
        if processor.stats.lease_refused >= 2 and not held:  # the third refusal
            standing_by.set()
        return held

    processor.lease.acquire = acquire_or_count
    with caplog.at_level(logging.INFO, logger="queues_app"):
        processor.run(30, standing_by)
        assert processor.stats.lease_refused >= 3
        other.release()
        processor.run(30, until_empty=True)
    messages = [m for _, m, _ in lines(caplog, "queues_app.tasks.processor")]
    standby = [m for m in messages if m.startswith("standing by")]
    assert len(standby) == 1
    assert standby[0].startswith("standing by: the lease task-processor is held by other-host:1 until ")
    assert "took the lease task-processor (generation 2)" in messages
