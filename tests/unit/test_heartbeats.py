"""Liveness heartbeats of the long-running processes (`queues_app/figures/heartbeats.py`):
throttled beats with a TTL, the listing, and where it is shown (System page, /metrics, /readyz)."""

import functools
import importlib
import io
import re
import threading
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from queues_app.ddb import meter
from queues_app.ddb.codec import unmarshal
from queues_app.figures import heartbeats
from queues_app.figures.heartbeats import (
    BEAT_SECONDS,
    EXPIRES_AFTER,
    HOLDING,
    PK,
    SHIPMENT_WORKER,
    STANDING_BY,
    STOPPED,
    TASK_PROCESSOR,
    Heartbeat,
    workers,
)
from queues_app.views import health


@pytest.fixture
def read_clock(clock, monkeypatch):
    """The pages, /metrics and /readyz read the heartbeats on the test's clock: a beat's
    age is what the test made it, however slow the machine."""
    monkeypatch.setattr(heartbeats, "workers", functools.partial(heartbeats.workers, clock=clock))
    return clock


def item(db, sk):
    raw = db.call("get_item", TableName=db.table("metrics"), Key={"pk": {"S": PK}, "sk": {"S": sk}}).get("Item")
    return unmarshal(raw)


def test_beats_are_written_at_most_once_per_interval(moto_db, clock):
    beat = Heartbeat(SHIPMENT_WORKER, moto_db, clock=clock, host="h1", pid=42)
    with meter.measure() as seen:
        written = [beat.beat(handled=n) for n in range(50)]  # a busy loop: one write
        clock.advance(BEAT_SECONDS / 2)
        written.append(beat.beat(handled=50))
        clock.advance(BEAT_SECONDS / 2)
        written.append(beat.beat(handled=51))
    assert written.count(True) == 2 and written[0] and written[-1]
    assert beat.writes == 2
    assert seen.calls == 0  # housekeeping: not the cost of a measured operation
    stored = item(moto_db, "shipment-worker#h1#42")
    assert stored["kind"] == SHIPMENT_WORKER and stored["host"] == "h1" and stored["pid"] == 42
    assert stored["handled"] == 51 and stored["state"] == "running"
    assert stored["started_at"] < stored["last_beat"]


def test_a_beat_sets_its_expiry_a_few_minutes_later(moto_db, clock):
    beat = Heartbeat(TASK_PROCESSOR, moto_db, clock=clock, host="h", pid=1)
    beat.beat()
    assert item(moto_db, beat.sk)["expires_at"] == int((clock.moment + EXPIRES_AFTER).timestamp())


def test_the_listing_ignores_expired_items_and_marks_stale_ones(moto_db, clock):
    Heartbeat(SHIPMENT_WORKER, moto_db, clock=clock, host="old", pid=1).beat()
    clock.advance(EXPIRES_AFTER.total_seconds() - 50)
    Heartbeat(SHIPMENT_WORKER, moto_db, clock=clock, host="quiet", pid=2).beat()
    clock.advance(35)
    Heartbeat(TASK_PROCESSOR, moto_db, clock=clock, host="fresh", pid=3).beat("holding the lease")
    clock.advance(20)  # "old" has expired (TTL not applied yet); "quiet" is 55 s old (> 3 beats)
    with meter.measure() as seen:
        listed = workers(moto_db, clock=clock)
    assert seen.calls == seen.calls_of("Query") == 1
    assert [(w.kind, w.name) for w in listed] == [("shipment-worker", "quiet:2"), ("task-processor", "fresh:3")]
    quiet, fresh = listed
    assert quiet.stale and not quiet.alive and quiet.age_seconds == pytest.approx(55, abs=0.1)
    assert not fresh.stale and fresh.alive and fresh.state == "holding the lease"


def test_a_graceful_stop_writes_stopped_at_once(moto_db, clock):
    beat = Heartbeat(SHIPMENT_WORKER, moto_db, clock=clock, host="h", pid=7)
    beat.beat(handled=3)
    assert beat.stopped(handled=4)  # not throttled
    (listed,) = workers(moto_db, clock=clock)
    assert listed.state == STOPPED and listed.handled == 4 and not listed.alive and not listed.stale


def test_a_failed_beat_is_logged_not_raised(moto_empty, clock, caplog):
    assert Heartbeat(SHIPMENT_WORKER, moto_empty, clock=clock).beat() is False
    assert "heartbeat" in caplog.text


def test_the_shipment_worker_beats_and_says_stopped(moto_db):
    from queues_app.shipments.queue import ShipmentQueue
    from queues_app.shipments.worker import ShipmentWorker, demo_handler

    queue = ShipmentQueue(moto_db)
    queue.create({}, shipment_id="s0", ready=True)
    queue.enqueue("s0")
    ShipmentWorker(queue, demo_handler(fail_share=0, work_seconds=0.0), idle_sleep=0.01).run(stop_when_empty=True)
    (listed,) = workers(moto_db)
    assert listed.kind == SHIPMENT_WORKER and listed.state == STOPPED and listed.handled == 1


def test_the_task_processor_says_whether_it_holds_the_lease(moto_db, monkeypatch):
    from queues_app.tasks.downstream import RateLimitedDownstream
    from queues_app.tasks.processor import TaskProcessor
    from queues_app.tasks.queue import TaskQueue

    states = []
    beat = Heartbeat.beat

    def recorded(self, state=None, handled=None, **options):
        states.append(state)
        return beat(self, state, handled, **options)

    monkeypatch.setattr(Heartbeat, "beat", recorded)
    tasks = TaskQueue(moto_db)
    tasks.create({"n": 1})
    processor = TaskProcessor(tasks, RateLimitedDownstream(rate=100, burst=10), use_streams=False)
    processor.run(5, until_empty=True)
    assert states[0] == "holding the lease" and states[-1] == "standing by"  # the lease let go
    (listed,) = workers(moto_db)
    assert listed.kind == TASK_PROCESSOR and listed.state == "standing by" and listed.handled == 1
    processor.stop()
    processor.run(5)  # stopped: its last beat
    assert workers(moto_db)[0].state == STOPPED


def test_the_system_page_lists_the_workers(supervisor_client, moto_db, read_clock):
    Heartbeat(SHIPMENT_WORKER, moto_db, clock=read_clock, host="box-a", pid=11).beat(handled=5)
    stale = Heartbeat(TASK_PROCESSOR, moto_db, clock=read_clock, host="box-b", pid=12)
    stale.started_at = stale.clock()
    stale._write(stale.clock() - heartbeats.timedelta(seconds=95))
    body = supervisor_client.get("/system/").content.decode()
    assert "Workers" in body
    assert "box-a:11" in body and "box-b:12" in body
    assert "stale" in body
    (row,) = [row for row in body.split("<tr") if "box-b:12" in row]
    (age,) = re.findall(r"(\d+) s ago", row)
    assert int(age) == 95  # its last beat was 95 s before the page was drawn


def test_the_system_page_says_when_no_worker_reported(supervisor_client, moto_db):
    body = supervisor_client.get("/system/").content.decode()
    assert "No worker has reported in the last 5 minutes" in body


def test_metrics_expose_the_workers(supervisor_client, moto_db):
    Heartbeat(SHIPMENT_WORKER, moto_db, host="box-a", pid=11).beat()
    Heartbeat(SHIPMENT_WORKER, moto_db, host="box-a", pid=12).beat()
    Heartbeat(TASK_PROCESSOR, moto_db, host="box-b", pid=13).stopped()
    text = supervisor_client.get("/metrics").content.decode()
    assert 'switchboard_worker_last_beat_age_seconds{host="box-a",kind="shipment-worker",pid="11"}' in text
    assert 'switchboard_workers{kind="shipment-worker"} 2.0' in text
    assert 'switchboard_workers{kind="task-processor"} 0.0' in text  # stopped: not counted


def test_readyz_lists_the_workers_and_stays_ready_when_they_are_stale(client, moto_db, read_clock):
    health.forget()
    beat = Heartbeat(SHIPMENT_WORKER, moto_db, clock=read_clock, host="box-a", pid=11)
    beat._write(beat.clock() - heartbeats.timedelta(minutes=2))
    response = client.get("/readyz")
    health.forget()
    assert response.status_code == 200
    (listed,) = response.json()["workers"]
    assert listed["kind"] == SHIPMENT_WORKER and listed["pid"] == 11 and listed["stale"] is True
    assert listed["last_beat_age_seconds"] == 120


def test_a_loop_slower_than_a_beat_is_stale_only_after_three_of_its_own_beats(moto_db, clock):
    Heartbeat(heartbeats.COLLECTOR, moto_db, clock=clock, host="h", pid=1, every=60).beat()
    clock.advance(100)
    assert not workers(moto_db, clock=clock)[0].stale
    clock.advance(100)
    assert workers(moto_db, clock=clock)[0].stale


class OneTurn(threading.Event):
    """The loop's stop event: its first wait between passes ends the loop."""

    def wait(self, timeout=None):
        self.set()
        return True


@pytest.mark.parametrize(
    ("command", "kind"), [("collect_metrics", heartbeats.COLLECTOR), ("escalate_callers", heartbeats.ESCALATOR)]
)
def test_the_command_loops_beat_and_say_stopped(moto_db, monkeypatch, command, kind):
    loops = importlib.import_module("queues_app.management.loops")
    monkeypatch.setattr(loops, "threading", SimpleNamespace(Event=OneTurn))  # the loop's Event only
    call_command(command, "--every", "30", stdout=io.StringIO(), stderr=io.StringIO())
    (listed,) = workers(moto_db)
    assert listed.kind == kind and listed.state == STOPPED and listed.handled == 1


def test_threads_sharing_a_heartbeat_write_the_sum_of_their_counts(moto_db, clock):
    shared = Heartbeat(SHIPMENT_WORKER, moto_db, clock=clock, every=10)
    shared.beat()  # written: the threads' beats fall within the interval, noted only (no request)
    start = threading.Barrier(4)

    def work(part):
        start.wait()
        for handled in range(1, 101):
            shared.beat(handled=handled, part=part)

    threads = [threading.Thread(target=work, args=(part,)) for part in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert shared.writes == 1
    shared.stopped()
    (listed,) = workers(moto_db, clock=clock)
    assert listed.state == STOPPED and listed.handled == 4 * 100


def test_a_failing_heartbeat_is_logged_once_until_it_is_written_again(moto_db, clock, caplog, monkeypatch):
    from queues_app.ddb import errors

    beat = Heartbeat(SHIPMENT_WORKER, moto_db, clock=clock, every=1)
    real_call = moto_db.call

    def down(operation, **params):
        raise errors.Unavailable("DynamoDB cannot be reached.")

    monkeypatch.setattr(moto_db, "call", down)
    with caplog.at_level("INFO", logger="queues_app.figures.heartbeats"):
        for _ in range(5):
            clock.advance(2)
            assert beat.beat() is False
        monkeypatch.setattr(moto_db, "call", real_call)
        clock.advance(2)
        assert beat.beat() is True
    messages = [r.getMessage() for r in caplog.records]
    assert sum("not written" in m for m in messages) == 1
    assert sum("written again" in m for m in messages) == 1


def test_the_overview_says_whether_workers_and_the_processor_report(supervisor_client, moto_db, read_clock):
    from django.urls import reverse

    def panel(name):
        return supervisor_client.get(reverse("home") + f"?panel={name}", HTTP_HX_REQUEST="true").content.decode()

    assert "No shipment worker is reporting." in panel("shipments")
    assert "No task processor is reporting." in panel("tasks")
    Heartbeat(SHIPMENT_WORKER, moto_db, clock=read_clock, host="a", pid=1).beat(handled=2)
    Heartbeat(SHIPMENT_WORKER, moto_db, clock=read_clock, host="b", pid=2).beat()
    Heartbeat(TASK_PROCESSOR, moto_db, clock=read_clock, host="a", pid=3).beat(HOLDING)
    Heartbeat(TASK_PROCESSOR, moto_db, clock=read_clock, host="b", pid=4).beat(STANDING_BY)
    assert "2 workers reporting; last heartbeat 0 s ago." in panel("shipments")
    assert "Processor: holding the lease; last heartbeat 0 s ago." in panel("tasks")
