"""The task processor: one active processor across all hosts works the LIFO task queue
against a downstream of limited throughput, while it holds the processor lease; woken by
the table's stream, time-boxed, and sweeping expired work as it goes. How and why is
explained in docs/architecture.md.
"""

from __future__ import annotations

import itertools
import logging
import os
import random
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from queues_app.ddb import errors
from queues_app.ddb.backoff import TRANSIENT, Backoff
from queues_app.ddb.clock import from_iso
from queues_app.ddb.lease import Lease
from queues_app.tasks.downstream import AtCapacity, Downstream, DownstreamFailed
from queues_app.tasks.processor_lease import LEASE_NAME, processor_lease
from queues_app.tasks.queue import TaskQueue
from queues_app.tasks.records import IllegalTransition, Task, TaskStatus
from queues_app.tasks.streams import StreamWaker
from queues_app.tracing import traced

log = logging.getLogger(__name__)

_TRANSIENT = TRANSIENT


def default_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


# --- the processor --------------------------------------------------------------------


@dataclass
class ProcessorStats:
    processed: int = 0  # downstream succeeded -> SUCCESS
    failed: int = 0  # downstream failed -> FAILURE
    released_at_capacity: int = 0  # downstream at capacity -> back to PENDING
    shed: int = 0  # expired pending tasks counted and deleted by the sweeper
    lease_lost: int = 0  # renewals refused: another host had taken over
    leases_acquired: int = 0
    lease_refused: int = 0  # acquire attempts while another host held the lease
    recovered: int = 0  # TAKEN tasks nobody worked on any more, given back
    given_back: int = 0  # tasks in hand given back because the lease was lost or on a stop
    stream_wakeups: int = 0  # idle waits ended by a stream record
    idle_timeouts: int = 0  # idle waits that ran out (the poll)
    sweeps: int = 0
    errors: int = 0  # DynamoDB errors survived (unavailable, throttled, lost updates)
    # The last task ids marked SUCCESS or FAILURE, in order, and the last stretches this
    # processor held the lease: (holder, start, end) in epoch seconds. Bounded: the
    # command runs for days.
    finished_ids: deque[str] = field(default_factory=lambda: deque(maxlen=10_000))
    lease_intervals: deque[tuple[str, float, float]] = field(default_factory=lambda: deque(maxlen=1_000))


class TaskProcessor:
    def __init__(
        self,
        tasks: TaskQueue | None,
        downstream: Downstream,
        *,
        holder: str | None = None,
        lease_name: str = LEASE_NAME,
        lease_seconds: float = 15.0,
        poll_seconds: float = 5.0,
        sweep_every: float = 5.0,
        acquire_retry: float = 1.0,
        capacity_wait: float = 1.0,
        recover_after: float | None = None,
        use_streams: bool = True,
        waker: StreamWaker | None = None,
        lease: Lease | None = None,
        now: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
    ):
        self.tasks = tasks or TaskQueue()
        self.downstream = downstream
        self.holder = holder or default_holder()
        self.lease = lease or processor_lease(
            self.tasks.db, name=lease_name, holder=self.holder, duration=lease_seconds, now=now
        )
        self.lease_seconds = self.lease.duration
        self.renew_every = self.lease_seconds / 3
        self.poll_seconds = poll_seconds
        self.sweep_every = sweep_every
        self.acquire_retry = acquire_retry
        self.capacity_wait = capacity_wait
        # TAKEN longer than this while we hold the lease: its processor is gone (0: never).
        self.recover_after = self.lease_seconds if recover_after is None else recover_after
        self.waker = waker if waker is not None else (StreamWaker(self.tasks.db) if use_streams else None)
        self.now = now
        self.monotonic = monotonic
        self.stop_requested = threading.Event()
        self.stats = ProcessorStats()
        self._holding = False
        self._held_since = 0.0
        self._next_renew = 0.0
        self._next_sweep = 0.0
        self._waker_opened = False
        self._rng = random.Random()
        # DynamoDB outages: growing, capped waits, logged once when they start and end.
        self.backoff = backoff or Backoff(log, monotonic=monotonic)
        self._standing_by: tuple[str, ...] | None = None  # whom we last said we wait for

    def stop(self) -> None:
        self.stop_requested.set()

    @property
    def streams(self) -> bool:
        return bool(self.waker and self.waker.available)

    # --- the loop -----------------------------------------------------------------

    def run(
        self, time_box_seconds: float, stop_event: threading.Event | None = None, *, until_empty: bool = False
    ) -> ProcessorStats:
        """Work for at most `time_box_seconds` (less on a stop, or when `until_empty` and
        nothing is pending), then release the lease."""
        stop = stop_event or self.stop_requested
        deadline = self.monotonic() + time_box_seconds
        if self.waker is not None and not self._waker_opened:
            # Before the first look at the queue: a task created after it wakes us.
            self.waker.open()
            self._waker_opened = True
        # Liveness (figures.heartbeats): one write per ~10 s saying whether we hold the lease.
        from queues_app.figures import heartbeats as hb

        if getattr(self, "liveness", None) is None:
            self.liveness = hb.Heartbeat(hb.TASK_PROCESSOR, self.tasks.db)
        try:
            while not stop.is_set() and self.monotonic() < deadline:
                held = self._hold_lease(stop, deadline)
                self.liveness.beat(hb.HOLDING if held else hb.STANDING_BY, self.stats.processed + self.stats.failed)
                if not held:
                    continue
                self._housekeeping()
                try:
                    task = self.tasks.take_next(newest_first=True)
                except _TRANSIENT as exc:
                    self._trouble("take", exc, stop, deadline)
                    continue
                self.backoff.succeeded()
                if task is None:
                    if until_empty:
                        break
                    self._idle(stop, deadline)
                    continue
                self._handle(task, stop, deadline)
        finally:
            self._let_go()
            done = self.stats.processed + self.stats.failed
            if stop.is_set():
                self.liveness.stopped(done)
            else:
                self.liveness.beat(hb.STANDING_BY, done, force=True)  # the lease let go
        return self.stats

    def run_forever(
        self,
        time_box_seconds: float,
        stop_event: threading.Event | None = None,
        *,
        max_seconds: float | None = None,
        rest: float = 0.0,
    ) -> ProcessorStats:
        """Time box after time box until stopped (or `max_seconds` have passed); `rest`
        seconds between boxes give a waiting host its chance at the lease."""
        stop = stop_event or self.stop_requested
        end = None if max_seconds is None else self.monotonic() + max_seconds
        while not stop.is_set():
            box = time_box_seconds if end is None else min(time_box_seconds, end - self.monotonic())
            if box <= 0:
                break
            self.run(box, stop)
            if rest and not stop.is_set():
                stop.wait(rest)
        return self.stats

    # --- the lease ----------------------------------------------------------------

    def _hold_lease(self, stop: threading.Event, deadline: float) -> bool:
        """True when we hold the lease (acquired or renewed as due); otherwise waits a
        while and returns False."""
        if self._holding:
            return self._keep_lease()
        try:
            acquired = self.lease.acquire()
        except _TRANSIENT as exc:
            self._trouble("acquire", exc, stop, deadline)
            return False
        self.backoff.succeeded()
        if acquired:
            self._holding = True
            self._held_since = self.now()
            self._next_renew = self.monotonic() + self.renew_every
            self._next_sweep = 0.0  # housekeeping first: recover what a dead holder left
            self.stats.leases_acquired += 1
            if self._standing_by is not None:
                log.info("took the lease %s (generation %s)", self.lease.name, self.lease.generation)
            else:
                log.info("lease %s acquired by %s (generation %s)", self.lease.name, self.holder, self.lease.generation)
            self._standing_by = None
            return True
        self.stats.lease_refused += 1
        self._say_standing_by()
        pause = self.lease.wait_hint(self.acquire_retry) * self._rng.uniform(1.0, 1.2)
        stop.wait(max(0.0, min(pause, deadline - self.monotonic())))
        return False

    def _keep_lease(self) -> bool:
        """Renew when a third of the lease has passed. False (and we stop holding) when
        it was lost, or could not be renewed before it ran out."""
        if self.monotonic() < self._next_renew and self.lease.held:
            return True
        try:
            renewed = self.lease.renew()
        except _TRANSIENT as exc:
            self.stats.errors += 1
            left = self.lease.remaining()
            pause = self.backoff.failed(exc)
            if left > 0:
                # Still ours for a while: try again soon, and stop when it runs out.
                self._next_renew = self.monotonic() + min(pause, max(0.05, left / 4))
                return True
            log.warning("lease %s: could not be renewed before it ran out", self.lease.name)
            renewed = False
        else:
            self.backoff.succeeded()
        if renewed:
            self._next_renew = self.monotonic() + self.renew_every
            return True
        self._end_holding()
        self.stats.lease_lost += 1
        return False

    def _say_standing_by(self) -> None:
        """Once per holder (a renewal is no news): who holds the lease, and until when."""
        seen = self.lease.last_seen
        key = (seen.holder,) if seen else ()
        if key == self._standing_by:
            return
        self._standing_by = key
        if seen is None:
            log.info("standing by: the lease %s is busy", self.lease.name)
            return
        until = time.strftime("%H:%M:%S", time.gmtime(seen.lease_until))
        left = max(0.0, seen.lease_until - self.now())
        log.info(
            "standing by: the lease %s is held by %s until %s UTC (%.0f s)", self.lease.name, seen.holder, until, left
        )

    def _end_holding(self) -> None:
        if self._holding:
            self._holding = False
            self.stats.lease_intervals.append((self.holder, self._held_since, self.now()))

    def _let_go(self) -> None:
        self._end_holding()
        if self.lease.generation is None:
            return
        try:
            self.lease.release()
            log.info("lease %s released by %s", self.lease.name, self.holder)
        except errors.DynamoError as exc:
            log.warning("lease %s: release failed (%s); it will run out", self.lease.name, exc.message)

    # --- tasks --------------------------------------------------------------------

    def _handle(self, task: Task, stop: threading.Event, deadline: float) -> None:
        with traced(task.trace_id):
            self._handle_traced(task, stop, deadline)

    def _handle_traced(self, task: Task, stop: threading.Event, deadline: float) -> None:
        if not self._keep_lease():
            self._give_back(task)  # lost the lease between taking and calling: not ours to do
            return
        started = self.monotonic()
        try:
            result = self.downstream.process(task)
        except AtCapacity as exc:
            if self._give_back(task, counter="released_at_capacity"):
                log.info("task %s released: downstream full", task.task_id)
            wait = min(max(exc.retry_after, 0.01), self.capacity_wait)
            stop.wait(max(0.0, min(wait, deadline - self.monotonic())))
            return
        except DownstreamFailed as exc:
            self._finish(task, TaskStatus.FAILURE, str(exc), self.monotonic() - started)
            return
        except Exception as exc:  # a downstream bug is a failed task, not a dead processor
            log.exception("downstream crashed on task %s", task.task_id)
            self._finish(task, TaskStatus.FAILURE, f"downstream error: {exc!r}", self.monotonic() - started)
            return
        except BaseException:
            self._give_back(task)  # interrupted (Ctrl-C): someone else may do it
            raise
        self._finish(task, TaskStatus.SUCCESS, result, self.monotonic() - started)

    def _finish(self, task: Task, status: str, result: str | None, took: float = 0.0) -> None:
        try:
            if status == TaskStatus.SUCCESS:
                self.tasks.succeed(task.task_id, result, take=task.attempts)
                self.stats.processed += 1
                log.info("task %s succeeded in %.2f s", task.task_id, took)
            else:
                self.tasks.fail(task.task_id, result, take=task.attempts)
                self.stats.failed += 1
                log.warning("task %s failed (%s) in %.2f s", task.task_id, result, took)
            self.stats.finished_ids.append(task.task_id)
        except (IllegalTransition, errors.NotFound) as exc:
            # Given back by a holder that thought us dead, or deleted by TTL meanwhile.
            self.stats.errors += 1
            log.warning("task %s could not be marked %s: %s", task.task_id, status, exc.message)
        except _TRANSIENT as exc:
            # It stays TAKEN; it is recovered (back to PENDING) once it is old enough.
            self.stats.errors += 1
            log.warning("task %s could not be marked %s: %s", task.task_id, status, exc.message)

    def _give_back(self, task: Task, counter: str = "given_back") -> bool:
        try:
            self.tasks.release(task.task_id, take=task.attempts)
        except errors.DynamoError as exc:
            self.stats.errors += 1
            log.warning("task %s could not go back to PENDING: %s", task.task_id, exc.message)
            return False
        setattr(self.stats, counter, getattr(self.stats, counter) + 1)
        return True

    # --- waiting and housekeeping ---------------------------------------------------

    def _idle(self, stop: threading.Event, deadline: float) -> None:
        """Nothing pending: wait for the stream (or the poll interval), but no longer than
        the next renewal, the next sweep or the end of the time box."""
        moment = self.monotonic()
        timeout = min(self.poll_seconds, deadline - moment, self._next_renew - moment, self._next_sweep - moment)
        timeout = max(0.0, timeout)
        if self.waker is not None:  # without a stream it sleeps; a broken one it re-opens
            if self.waker.wait(timeout, stop):
                self.stats.stream_wakeups += 1
                return
        else:
            stop.wait(timeout)
        if not stop.is_set():
            self.stats.idle_timeouts += 1

    def _housekeeping(self) -> None:
        moment = self.monotonic()
        if moment < self._next_sweep:
            return
        self._next_sweep = moment + self.sweep_every
        try:
            report = self.tasks.sweep_expired()
            self.stats.sweeps += 1
            if report.shed:
                self.stats.shed += report.shed
                log.info("shed %d expired task(s), oldest %.0fs", report.shed, report.oldest_age or 0)
            if self.recover_after:
                self._recover_orphans()
        except _TRANSIENT as exc:
            self.stats.errors += 1
            self.backoff.failed(exc)  # logged once per outage; the next take waits
        except errors.DynamoError as exc:
            self.stats.errors += 1
            log.warning("housekeeping failed: %s", exc.message)

    def _recover_orphans(self, limit: int = 500) -> None:
        """TAKEN tasks older than `recover_after` while we hold the lease belong to no live
        processor (a previous holder stopped when its lease ran out): back to PENDING."""
        moment = self.tasks.clock()
        taken = self.tasks.each(TaskStatus.TAKEN, newest_first=False, page_size=100)
        for task in itertools.islice(taken, limit):
            taken_at = from_iso(task.taken_at)
            if taken_at is None or (moment - taken_at).total_seconds() < self.recover_after:
                continue
            if self._give_back(task, counter="recovered"):
                log.warning(
                    "task %s was TAKEN since %s by a processor that is gone; back to PENDING",
                    task.task_id,
                    task.taken_at,
                )

    def _trouble(self, what: str, exc: errors.DynamoError, stop: threading.Event, deadline: float) -> None:
        """`what` failed on an outage: wait the backoff's growing delay (logged once)."""
        self.stats.errors += 1
        log.debug("%s failed (%s)", what, exc.message)
        pause = self.backoff.failed(exc)
        stop.wait(max(0.0, min(pause, deadline - self.monotonic())))
