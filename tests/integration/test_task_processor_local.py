"""The task processor on DynamoDB Local: one active processor at a time, the stream wake-up,
and a dead processor's lease passing on."""

import itertools
import threading
import time

import pytest

from queues_app.tasks.downstream import RateLimitedDownstream
from queues_app.tasks.processor import TaskProcessor
from queues_app.tasks.processor_lease import processor_lease
from queues_app.tasks.queue import ExpiryPolicy, TaskQueue, TaskStatus
from tests.helpers.threads import in_thread, wait_for


@pytest.fixture
def tasks(local_db):
    return TaskQueue(local_db, expiry=ExpiryPolicy(pending_seconds=120, finished_seconds=30))


class Watched:
    """Wraps the shared downstream and notes who called it, and when."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []  # (holder, epoch seconds, task id)
        self._lock = threading.Lock()

    def for_holder(self, holder):
        watched = self

        class Caller:
            def process(self, task):
                with watched._lock:
                    watched.calls.append((holder, time.time(), task.task_id))
                return watched.inner.process(task)

        return Caller()


def test_two_processors_are_never_active_at_once(tasks):
    for i in range(20):
        tasks.create({"n": i}, task_id=f"early{i:02d}")
    downstream = Watched(RateLimitedDownstream(rate=40, burst=5, fail_share=0.1, seed=7))
    stop = threading.Event()
    # The lease is renewed once in each time box (at a third of it), and it lasts long enough
    # that a holder stalled for a few seconds (a slow or paused machine) still holds it: the
    # lease changes hands when a time box ends, never because a stall let it run out.
    processors = [
        TaskProcessor(
            tasks,
            downstream.for_holder(name),
            holder=name,
            lease_seconds=6.0,
            poll_seconds=0.5,
            sweep_every=1.0,
            acquire_retry=0.1,
            capacity_wait=0.05,
        )
        for name in ("alpha", "beta")
    ]
    # A rest between boxes long enough for the other, retrying every 0.1 s, to take the
    # lease even on a loaded machine (at 0.3 s a busy run once saw alpha take it back).
    runs = [in_thread(p.run_forever, 2.4, stop, rest=1.0) for p in processors]

    created = [f"early{i:02d}" for i in range(20)]
    started = time.monotonic()
    while time.monotonic() - started < 6.0:  # work keeps arriving while they take turns
        created.append(tasks.create(task_id=f"late{len(created):03d}").task_id)
        time.sleep(0.1)

    def all_finished():
        return sum(len(p.stats.finished_ids) for p in processors) >= len(created)

    drained = wait_for(all_finished, 120, step=0.1)
    stop.set()
    for thread, failures in runs:
        thread.join(60)
        assert not thread.is_alive() and not failures
    assert drained, [p.stats for p in processors]

    intervals = sorted((i for p in processors for i in p.stats.lease_intervals), key=lambda i: i[1])
    assert {holder for holder, _, _ in intervals} == {"alpha", "beta"}  # the lease changed hands
    for (_, _, end), (_, start, _) in itertools.pairwise(intervals):
        assert end <= start, f"two holders at once: {intervals}"
    # Every downstream call happened while its caller held the lease.
    for holder, moment, task_id in downstream.calls:
        assert any(h == holder and start <= moment <= end for h, start, end in intervals), (holder, task_id)

    finished = [t for p in processors for t in p.stats.finished_ids]
    assert len(finished) == len(set(finished)), "a task was processed twice"
    assert sorted(finished) == sorted(created)
    assert sum(p.stats.lease_lost for p in processors) == 0
    statuses = {tasks.get(t).status for t in finished}
    assert statuses <= {TaskStatus.SUCCESS, TaskStatus.FAILURE}
    assert processor_lease(tasks.db, holder="nobody").current() is None  # released on the way out


def test_the_stream_wakes_an_idle_processor(tasks):
    # The poll, the renewals (a third of the lease) and the sweeps, each of which would end
    # an idle wait without the stream, and the time box, are minutes away: however slow the
    # machine, only the stream can end the wait before the test is over.
    processor = TaskProcessor(
        tasks,
        RateLimitedDownstream(rate=10),
        holder="solo",
        lease_seconds=600,
        poll_seconds=600,
        sweep_every=600,
        acquire_retry=0.1,
    )
    stop = threading.Event()
    thread, failures = in_thread(processor.run, 1200, stop)
    try:
        assert wait_for(lambda: processor.stats.leases_acquired == 1 and processor.stats.sweeps == 1, 60)
        # Idle, waiting on the stream with a poll interval of 600 s. Writes that are not
        # pending work do not wake it: another lease's item, a task finished elsewhere.
        unrelated = processor_lease(tasks.db, name="some-other-role", holder="x", duration=5)
        assert unrelated.acquire() and unrelated.renew()
        time.sleep(1.0)
        assert processor.stats.stream_wakeups == 0

        tasks.create(task_id="wake-me")
        # Done well before the 600 s poll would have looked: the stream is what woke it (the
        # stats below say so; no figure of elapsed time is asserted).
        assert wait_for(lambda: tasks.get("wake-me").status == TaskStatus.SUCCESS, 60)
        time.sleep(0.6)  # its own TAKEN and SUCCESS records come through the stream: no wake-up
        assert processor.stats.stream_wakeups == 1
    finally:
        stop.set()  # a failed check must not leave it running for its long time box
        thread.join(60)
    assert not failures
    assert processor.streams, processor.waker.reason
    assert processor.stats.stream_wakeups >= 1 and processor.stats.idle_timeouts == 0
    assert processor.stats.processed == 1


class LeaseClock:
    """Epoch seconds for the processors' leases that move only when the test says so: a
    lease runs out when the test decides, not when a slow machine has used it up."""

    def __init__(self):
        self.value = time.time()

    def __call__(self):
        return self.value

    def advance(self, seconds):
        self.value += seconds


def test_a_dead_processors_lease_passes_on(tasks):
    for i in range(5):
        tasks.create(task_id=f"t{i}")
    hang, resumed = threading.Event(), threading.Event()
    now = LeaseClock()

    class Hangs:
        """The first call never returns in time: the processor is as good as dead."""

        def process(self, task):
            hang.wait(300)
            resumed.set()
            return "too late"

    dead = TaskProcessor(
        tasks, Hangs(), holder="dead", lease_seconds=1.5, poll_seconds=0.2, sweep_every=60, use_streams=False, now=now
    )
    stop = threading.Event()
    dead_thread, dead_failures = in_thread(dead.run, 600, stop)
    threads = [dead_thread]
    try:
        assert wait_for(lambda: tasks.count(TaskStatus.TAKEN)[0] == 1, 60)
        dead_until = dead.lease.until  # hung in the call: it renews no more

        survivor = TaskProcessor(
            tasks,
            RateLimitedDownstream(rate=50),
            holder="survivor",
            lease_seconds=3,
            poll_seconds=0.2,
            sweep_every=0.3,
            acquire_retry=0.2,
            recover_after=1.0,
            now=now,
        )
        thread, failures = in_thread(survivor.run, 600, stop)
        threads.append(thread)
        # It has to wait for the dead lease to run out ...
        assert wait_for(lambda: survivor.stats.lease_refused >= 1, 60)
        assert survivor.stats.leases_acquired == 0 and survivor.stats.processed == 0
        now.advance(2.0)  # ... which it now has
        assert wait_for(lambda: survivor.stats.processed == 5, 60), survivor.stats
        assert survivor.stats.recovered == 1  # the dead processor's task in hand, back to PENDING
        assert all(tasks.get(f"t{i}").status == TaskStatus.SUCCESS for i in range(5))
        holder = processor_lease(tasks.db, holder="x").current()
        assert holder.holder == "survivor" and holder.acquired_at >= dead_until

        # The hung call returns at last: the zombie's late result is refused and it stops.
        hang.set()
        assert resumed.wait(60)
        assert wait_for(lambda: dead.stats.lease_lost == 1, 60)
        assert dead.stats.processed == 0 and dead.stats.errors >= 1
    finally:
        hang.set()  # a failed check must not leave them running for their long time boxes
        stop.set()
        for t in threads:
            t.join(60)
    assert not failures and not dead_failures
    assert survivor.stats.lease_intervals[0][1] >= dead_until
