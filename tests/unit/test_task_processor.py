"""The task processor on moto: the lease, the token bucket, the processing loop."""

import io
import signal
import threading

import pytest
from botocore.exceptions import ClientError
from django.core.management import call_command

from queues_app.tasks.downstream import AtCapacity, DownstreamFailed, RateLimitedDownstream, TokenBucket
from queues_app.tasks.processor import TaskProcessor
from queues_app.tasks.processor_lease import LEASE_PREFIX, processor_lease
from queues_app.tasks.queue import ExpiryPolicy, TaskQueue, TaskStatus
from queues_app.tasks.streams import StreamWaker, wakes


class FakeTime:
    """Seconds (epoch or monotonic) that only move when the test says so."""

    def __init__(self, start=1_700_000_000.0):
        self.value = start

    def __call__(self):
        return self.value

    def advance(self, seconds):
        self.value += seconds


@pytest.fixture
def tasks(moto_db, clock):
    return TaskQueue(moto_db, clock=clock, expiry=ExpiryPolicy(pending_seconds=60, finished_seconds=10))


def lease(db, holder, now, duration=10.0):
    return processor_lease(db, holder=holder, duration=duration, margin=0.5, now=now)


class Recording:
    """A downstream that records the order of the calls; `then` runs after each call."""

    def __init__(self, then=None):
        self.calls = []
        self.then = then

    def process(self, task):
        self.calls.append(task.task_id)
        if self.then:
            self.then(task)
        if task.payload.get("fail"):
            raise DownstreamFailed("no")
        return "ok"


def stop_at_refusal(worker, refusals=1):
    """A stop event for `worker.run`, set once the lease has been refused `refusals` times:
    the run ends then, however long the machine took to get there."""
    stop, acquire, refused = threading.Event(), worker.lease.acquire, []

    def acquire_or_count():
        held = acquire()
        if not held:
            refused.append(True)
            if len(refused) >= refusals:
                stop.set()
        return held

    worker.lease.acquire = acquire_or_count
    return stop


# Runs end when the queue is empty (or on a stop event); their time box only ends a broken
# run, so that a slow machine cannot make a test fail.
BOX = 30.0


def processor(tasks, downstream, **options):
    options = {
        "holder": "p1",
        "use_streams": False,
        "poll_seconds": 0.02,
        "sweep_every": 60.0,
        "capacity_wait": 0.01,
        **options,
    }
    return TaskProcessor(tasks, downstream, **options)


# --- the lease --------------------------------------------------------------------


def test_a_second_holder_cannot_acquire_a_live_lease_but_can_once_it_expired(moto_db):
    now = FakeTime()
    first, second = lease(moto_db, "a", now), lease(moto_db, "b", now)
    assert first.acquire() and first.held
    assert not second.acquire()
    assert second.last_seen.holder == "a" and second.last_seen.lease_until == pytest.approx(now() + 10)
    now.advance(9.9)
    assert not second.acquire()
    assert not first.held  # within the margin: the holder stops acting before the lease ends
    now.advance(0.2)
    assert second.acquire() and second.held
    assert second.generation == first.generation + 1
    assert first.current().holder == "b"


def test_renew_and_release_only_by_the_holder(moto_db):
    now = FakeTime()
    first, second = lease(moto_db, "a", now), lease(moto_db, "b", now)
    assert not second.renew()  # never held it
    assert first.acquire()
    now.advance(6)
    assert first.renew()
    now.advance(6)
    assert not second.acquire()  # renewed: live until 6 + 10
    assert first.held and first.remaining() == pytest.approx(16 - 12 - 0.5)
    # A forged generation does not help a non-holder either.
    second.generation = first.generation
    assert not second.renew() and not second.release()
    assert first.current().holder == "a"
    # Once taken over, the old holder's renew and release are refused.
    now.advance(11)
    third = lease(moto_db, "c", now)
    assert third.acquire()
    assert not first.renew() and not first.held
    assert not first.release()
    assert third.release()
    assert third.current() is None
    assert second.acquire()  # released: free at once


def test_the_same_holder_acquiring_again_bumps_the_generation(moto_db):
    now = FakeTime()
    old_self, new_self = lease(moto_db, "a", now), lease(moto_db, "a", now)
    assert old_self.acquire() and new_self.acquire()
    assert new_self.generation == old_self.generation + 1
    assert not old_self.renew()  # the fencing token: only the newest acquisition renews
    assert new_self.renew()
    assert new_self.release()
    assert old_self.acquire() and old_self.generation == 3  # it only grows, across releases too


def test_the_lease_item_stays_out_of_the_queue(moto_db, tasks):
    now = FakeTime()
    assert lease(moto_db, "a", now).acquire()
    item = moto_db.client.get_item(TableName=tasks.table_name, Key={"task_id": {"S": LEASE_PREFIX + "task-processor"}})
    assert "expires_at" in item["Item"] and "task_status" not in item["Item"]
    assert tasks.pending_ids() == [] and tasks.count(TaskStatus.PENDING) == (0, False)
    assert tasks.sweep_expired().shed == 0


# --- the token bucket ---------------------------------------------------------------


def test_the_token_bucket_allows_a_burst_then_the_rate():
    clock = FakeTime(0.0)
    bucket = TokenBucket(rate=2, burst=3, clock=clock)
    assert [bucket.try_acquire() for _ in range(4)] == [True, True, True, False]
    assert bucket.wait_time() == pytest.approx(0.5)
    clock.advance(0.25)
    assert not bucket.try_acquire()
    clock.advance(0.25)
    assert bucket.try_acquire() and not bucket.try_acquire()
    clock.advance(100)
    assert bucket.tokens == pytest.approx(3)  # saved up to the burst, no more


def test_the_token_bucket_rejects_nonsense():
    with pytest.raises(ValueError):
        TokenBucket(rate=0)
    with pytest.raises(ValueError):
        TokenBucket(rate=1, burst=0.5)
    assert TokenBucket(rate=0.2).burst == 1  # a slow rate still lets one call through


def test_the_demo_downstream_is_at_capacity_when_the_bucket_is_empty(tasks):
    clock = FakeTime(0.0)
    downstream = RateLimitedDownstream(rate=1, burst=1, clock=clock)
    task = tasks.create(task_id="t")
    assert downstream.process(task) == "ok"
    with pytest.raises(AtCapacity) as raised:
        downstream.process(task)
    assert raised.value.retry_after == pytest.approx(1.0)
    clock.advance(1)
    assert downstream.process(task) == "ok"
    assert (downstream.accepted, downstream.refused) == (2, 1)
    with pytest.raises(DownstreamFailed):
        RateLimitedDownstream(rate=10, fail_share=1.0).process(task)


# --- processing ----------------------------------------------------------------------


def test_it_processes_newest_first(tasks, clock):
    for i in range(5):
        tasks.create({"n": i}, task_id=f"t{i}")
        clock.advance(1)

    def newer_work_arrives(task):
        if task.task_id == "t4":
            clock.advance(1)
            tasks.create(task_id="t9")  # newer than everything left: it goes next

    downstream = Recording(then=newer_work_arrives)
    stats = processor(tasks, downstream).run(BOX, until_empty=True)
    assert downstream.calls == ["t4", "t9", "t3", "t2", "t1", "t0"]
    assert stats.processed == 6 and list(stats.finished_ids) == downstream.calls
    assert all(tasks.get(i).status == TaskStatus.SUCCESS for i in downstream.calls)
    assert stats.leases_acquired == 1 and stats.lease_lost == 0
    assert len(stats.lease_intervals) == 1
    assert processor_lease(tasks.db, holder="x").current() is None  # released at the end of the time box


def test_failures_end_in_failure(tasks, clock):
    tasks.create({"fail": True}, task_id="bad")
    clock.advance(1)
    tasks.create(task_id="good")
    stats = processor(tasks, Recording()).run(BOX, until_empty=True)
    assert (stats.processed, stats.failed) == (1, 1)
    assert tasks.get("bad").status == TaskStatus.FAILURE and tasks.get("bad").result == "no"
    assert tasks.get("good").status == TaskStatus.SUCCESS


def test_a_downstream_crash_is_a_failed_task(tasks):
    tasks.create(task_id="t")

    class Broken:
        def process(self, task):
            raise RuntimeError("boom")

    stats = processor(tasks, Broken()).run(BOX, until_empty=True)
    assert stats.failed == 1 and "boom" in tasks.get("t").result


def test_at_capacity_tasks_go_back_to_pending(tasks, clock):
    for i in range(5):
        tasks.create(task_id=f"t{i}")
        clock.advance(1)
    frozen = FakeTime(0.0)  # the bucket never refills
    downstream = RateLimitedDownstream(rate=1, burst=2, clock=frozen)
    stop, process = threading.Event(), downstream.process

    def refuse_then_stop(task):  # the run ends once a task was refused
        try:
            return process(task)
        except AtCapacity:
            stop.set()
            raise

    downstream.process = refuse_then_stop
    stats = processor(tasks, downstream).run(BOX, stop)
    downstream.process = process
    assert stats.processed == 2 and stats.released_at_capacity >= 1
    assert [tasks.get(f"t{i}").status for i in (4, 3)] == [TaskStatus.SUCCESS] * 2
    pending = [f"t{i}" for i in (2, 1, 0)]
    assert all(tasks.get(i).status == TaskStatus.PENDING for i in pending)
    assert tasks.get("t2").attempts >= 1  # taken, refused, given back: still the newest pending
    assert tasks.pending_ids() == pending
    # Capacity comes back: the rest is processed, newest first.
    frozen.advance(10)
    downstream.bucket.burst = 10
    recorder_order = []
    original = downstream.process
    downstream.process = lambda task: (recorder_order.append(task.task_id), original(task))[1]
    processor(tasks, downstream).run(BOX, until_empty=True)
    assert recorder_order == pending


def test_without_the_lease_it_does_nothing(tasks):
    tasks.create(task_id="t")
    other = processor_lease(tasks.db, holder="other", duration=30)
    assert other.acquire()
    downstream = Recording()
    worker = processor(tasks, downstream, acquire_retry=0.05)
    stats = worker.run(BOX, stop_at_refusal(worker, 2))
    assert downstream.calls == [] and stats.processed == 0
    assert stats.lease_refused >= 2 and stats.leases_acquired == 0 and not stats.lease_intervals
    assert tasks.get("t").status == TaskStatus.PENDING


def test_a_lost_lease_stops_processing_at_once(tasks, clock):
    for i in range(3):
        tasks.create(task_id=f"t{i}")
        clock.advance(1)
    now = FakeTime()
    usurper = lease(tasks.db, "b", now)

    def stall_and_lose(task):
        now.advance(20)  # a long pause: our lease ran out and another host took over
        assert usurper.acquire()

    downstream = Recording(then=stall_and_lose)
    worker = processor(tasks, downstream, lease=lease(tasks.db, "p1", now), acquire_retry=0.05)
    stats = worker.run(BOX, stop_at_refusal(worker))  # refused once it has lost the lease
    assert downstream.calls == ["t2"]  # the call in hand is recorded; nothing after it
    assert stats.processed == 1 and stats.lease_lost == 1
    assert tasks.get("t1").status == TaskStatus.PENDING and tasks.get("t0").status == TaskStatus.PENDING
    assert usurper.current().holder == "b"


def test_a_task_in_hand_goes_back_when_the_lease_is_lost_before_the_call(tasks, clock):
    tasks.create(task_id="t")
    now = FakeTime()
    usurper = lease(tasks.db, "b", now)
    downstream = Recording()
    worker = processor(tasks, downstream, lease=lease(tasks.db, "p1", now), acquire_retry=0.05)
    take_next = worker.tasks.take_next

    def take_then_stall(**kwargs):
        task = take_next(**kwargs)
        if task:
            now.advance(20)
            usurper.acquire()
        return task

    worker.tasks.take_next = take_then_stall
    stats = worker.run(BOX, stop_at_refusal(worker))  # refused once it has lost the lease
    assert downstream.calls == [] and stats.given_back == 1 and stats.lease_lost == 1
    assert tasks.get("t").status == TaskStatus.PENDING


def test_the_sweeper_counts_shed_tasks(tasks, clock):
    for i in range(3):
        tasks.create(task_id=f"old{i}")
    clock.advance(120)  # past the pending expiry
    tasks.create(task_id="fresh")
    downstream = Recording()
    stats = processor(tasks, downstream).run(BOX, until_empty=True)
    assert stats.shed == 3 and stats.sweeps == 1
    assert downstream.calls == ["fresh"]
    assert sum(row["shed"] for row in tasks.shed_history(minutes=5)) == 3


def test_a_dead_processors_task_in_hand_is_recovered(tasks, clock):
    tasks.create(task_id="orphan")
    tasks.take("orphan")  # its processor died holding it
    clock.advance(20)
    tasks.create(task_id="recent")
    tasks.take("recent")  # taken a moment ago (by someone alive, for all we know): left alone
    tasks.create(task_id="fresh")
    downstream = Recording()
    stats = processor(tasks, downstream, lease_seconds=15).run(BOX, until_empty=True)
    assert stats.recovered == 1 and downstream.calls == ["fresh", "orphan"]
    assert tasks.get("orphan").status == TaskStatus.SUCCESS and tasks.get("orphan").attempts == 2
    assert tasks.get("recent").status == TaskStatus.TAKEN


def test_without_a_stream_it_polls(moto_db, tasks):
    # A table without a stream, and an endpoint that does not serve streams: both degrade.
    no_stream = StreamWaker(moto_db, logical_table="shipments")
    assert not no_stream.open() and "no stream" in no_stream.reason
    assert no_stream.wait(0.01) is False

    class NoStreams:
        def describe_stream(self, **kwargs):
            raise ClientError({"Error": {"Code": "UnknownOperationException", "Message": "nope"}}, "DescribeStream")

    refused = StreamWaker(moto_db, client=NoStreams())
    assert not refused.open() and "UnknownOperationException" in refused.reason
    tasks.create(task_id="t")
    worker = processor(tasks, Recording(), waker=refused)
    # Stop after the second idle wait (whatever the machine's speed): the first one
    # counts as an idle timeout, the second sets the stop.
    stop, waits, wait = threading.Event(), [], refused.wait

    def wait_then_stop(timeout, stop_event=None):
        waits.append(timeout)
        woke = wait(timeout, stop_event)
        if len(waits) >= 2:
            stop.set()
        return woke

    refused.wait = wait_then_stop
    stats = worker.run(60, stop)
    assert not worker.streams and stats.processed == 1 and stats.idle_timeouts >= 1


def test_a_broken_stream_is_reopened_and_wakes_the_caller(moto_db):
    pending = {"eventName": "INSERT", "dynamodb": {"NewImage": {"task_status": {"S": "PENDING"}}}}

    class FlakyStreams:
        def __init__(self):
            self.next = []  # what the next GetRecords answers; empty after that
            self.iterators = 0

        def describe_stream(self, **kwargs):
            return {"StreamDescription": {"Shards": [{"ShardId": "s1", "SequenceNumberRange": {}}]}}

        def get_shard_iterator(self, **kwargs):
            self.iterators += 1
            return {"ShardIterator": f"it{self.iterators}"}

        def get_records(self, **kwargs):
            answer, self.next = self.next, []
            if answer == "expired":
                raise ClientError({"Error": {"Code": "ExpiredIteratorException", "Message": "old"}}, "GetRecords")
            return {"Records": answer, "NextShardIterator": kwargs["ShardIterator"]}

    client = FlakyStreams()
    waker = StreamWaker(moto_db, client=client, step=0.01)
    assert waker.open() and waker.available  # the moto table has a stream ARN; the client is ours
    assert waker.wait(0.03) is False  # nothing new
    client.next = "expired"
    assert waker.wait(0.03) is True  # the read failed: records may be missed, look at the queue
    assert waker.wait(0.03) is True and client.iterators == 2  # re-opened at LATEST, and look again
    assert waker.wait(0.03) is False
    client.next = [pending]
    assert waker.wait(0.03) is True  # a pending task arrived


def test_which_stream_records_wake_the_processor():
    def record(event, image):
        return {"eventName": event, "dynamodb": {"NewImage": image} if image is not None else {}}

    pending = {"task_id": {"S": "t"}, "task_status": {"S": "PENDING"}}
    assert wakes(record("INSERT", pending))
    assert wakes(record("MODIFY", pending))  # given back to the queue
    assert not wakes(record("MODIFY", {**pending, "task_status": {"S": "SUCCESS"}}))
    assert not wakes(record("MODIFY", {"task_id": {"S": "LEASE#task-processor"}, "holder": {"S": "a"}}))
    assert not wakes(record("REMOVE", None))


def test_the_command_processes_and_restores_signal_handlers(moto_db, tasks, clock, settings):
    settings.SWITCHBOARD_TASK_EXPIRY = {"pending_seconds": 60, "finished_seconds": 10}
    for i in range(3):
        tasks.create(task_id=f"t{i}")
        clock.advance(1)
    before = signal.getsignal(signal.SIGTERM)
    out = io.StringIO()
    # Until the queue is empty; the time box is only a safety net, so a slow machine
    # cannot make this fail.
    call_command(
        "run_task_processor",
        "--until-empty",
        "--time-box",
        "30",
        "--poll",
        "0.02",
        "--rate",
        "100",
        "--fail-share",
        "0",
        "--holder",
        "cmd",
        stdout=out,
    )
    assert signal.getsignal(signal.SIGTERM) is before
    assert "3 processed" in out.getvalue()
    assert all(tasks.get(f"t{i}").status == TaskStatus.SUCCESS for i in range(3))
