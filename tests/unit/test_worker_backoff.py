"""The backoff both loops use on DynamoDB outages, and the loops using it."""

import logging
import random
import threading

from queues_app.ddb import errors
from queues_app.ddb.backoff import Backoff
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.worker import ShipmentWorker, demo_handler
from queues_app.tasks.downstream import RateLimitedDownstream
from queues_app.tasks.processor import TaskProcessor
from queues_app.tasks.queue import TaskQueue

log = logging.getLogger("tests.backoff")


class Ceiling(random.Random):
    """Full jitter at its top: uniform(a, b) is b, so the delays show the ceiling."""

    def uniform(self, a, b):
        return b


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def messages(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "tests.backoff"]


def test_consecutive_failures_give_growing_capped_delays_logged_once(caplog):
    clock = Clock()
    backoff = Backoff(log, base=0.5, cap=30, rng=Ceiling(), monotonic=clock)
    with caplog.at_level(logging.INFO, logger="tests.backoff"):
        delays = []
        for _ in range(10):
            delays.append(backoff.failed(errors.Unavailable("connection refused")))
            clock.t += delays[-1]
    assert delays == [0.5, 1, 2, 4, 8, 16, 30, 30, 30, 30]
    assert messages(caplog) == ["DynamoDB unavailable (connection refused); retrying with backoff up to 30 s"]


def test_success_logs_the_outage_length_once_and_starts_over(caplog):
    clock = Clock()
    backoff = Backoff(log, base=0.5, cap=30, rng=Ceiling(), monotonic=clock)
    with caplog.at_level(logging.INFO, logger="tests.backoff"):
        for _ in range(4):
            clock.t += backoff.failed(errors.Throttled("slow down"))
        backoff.succeeded()
        backoff.succeeded()
        again = backoff.failed(errors.Unavailable("gone"))
    assert again == 0.5 and backoff.failures == 1
    assert messages(caplog) == [
        "DynamoDB throttled (slow down); retrying with backoff up to 30 s",
        "DynamoDB answers again after 7.5 s (4 failed attempts)",
        "DynamoDB unavailable (gone); retrying with backoff up to 30 s",
    ]


def test_full_jitter_stays_within_the_ceiling_and_above_the_floor():
    backoff = Backoff(log, base=0.5, cap=30, rng=random.Random(7))
    for n in range(1, 30):
        delay = backoff.failed(errors.Unavailable("x"))
        assert 0.05 <= delay <= min(30, 0.5 * 2 ** (n - 1))


class Down:
    """A stand-in whose every call fails as DynamoDB does when it is unreachable."""

    def __init__(self, fail_times):
        self.calls = 0
        self.fail_times = fail_times

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.calls <= self.fail_times:
            raise errors.Unavailable("could not connect")
        return None


class RecordingStop(threading.Event):
    """A stop event whose waits return at once and are recorded (an injected sleep)."""

    def __init__(self, after=None):
        super().__init__()
        self.waits = []
        self.after = after

    def wait(self, timeout=None):
        self.waits.append(timeout)
        if self.after is not None and len(self.waits) >= self.after:
            self.set()
        return self.is_set()


def test_the_shipment_worker_backs_off_while_dynamodb_is_down(moto_db, caplog, monkeypatch):
    queue = ShipmentQueue(moto_db)
    down = Down(fail_times=6)
    monkeypatch.setattr(queue, "receive", down)
    worker = ShipmentWorker(
        queue,
        demo_handler(fail_share=0),
        backoff=Backoff(logging.getLogger("tests.backoff"), base=0.5, cap=4, rng=Ceiling()),
    )
    worker.stop_requested = RecordingStop()
    with caplog.at_level(logging.INFO, logger="tests.backoff"):
        worker.run(stop_when_empty=True)
    assert worker.stop_requested.waits == [0.5, 1, 2, 4, 4, 4]
    assert down.calls == 7 and worker.backoff.failures == 0
    assert [m.split(" (")[0].split(" after")[0] for m in messages(caplog)] == [
        "DynamoDB unavailable",
        "DynamoDB answers again",
    ]


def test_the_task_processor_backs_off_while_the_lease_cannot_be_acquired(moto_db, monkeypatch):
    tasks = TaskQueue(moto_db)
    processor = TaskProcessor(
        tasks,
        RateLimitedDownstream(100, fail_share=0),
        holder="p1",
        use_streams=False,
        backoff=Backoff(logging.getLogger("tests.backoff"), base=0.5, cap=30, rng=Ceiling()),
    )

    def unavailable():
        raise errors.Unavailable("could not connect")

    monkeypatch.setattr(processor.lease, "acquire", unavailable)
    stop = RecordingStop(after=8)
    processor.run(60, stop)
    assert stop.waits == [0.5, 1, 2, 4, 8, 16, 30, 30]
    assert processor.stats.errors == 8
