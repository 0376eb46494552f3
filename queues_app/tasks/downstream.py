"""The downstream the task processor calls: what it may answer (a result, at capacity,
failed), and a demo downstream of limited throughput behind a token bucket."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Protocol

from queues_app.tasks.records import Task

# --- rate limiting --------------------------------------------------------------------


class TokenBucket:
    """`rate` tokens a second, at most `burst` saved up (the bucket starts full).
    Thread-safe; `clock` is monotonic seconds (injectable for tests)."""

    def __init__(self, rate: float, burst: float | None = None, *, clock: Callable[[], float] = time.monotonic):
        if rate <= 0:
            raise ValueError("the rate must be positive")
        self.rate = float(rate)
        self.burst = float(burst if burst is not None else max(1.0, rate))
        if self.burst < 1:
            raise ValueError("the burst must allow at least one call")
        self.clock = clock
        self._tokens = self.burst
        self._updated = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        moment = self.clock()
        self._tokens = min(self.burst, self._tokens + (moment - self._updated) * self.rate)
        self._updated = moment

    @property
    def tokens(self) -> float:
        with self._lock:
            self._refill()
            return self._tokens

    def try_acquire(self, n: float = 1.0) -> bool:
        with self._lock:
            self._refill()
            if self._tokens >= n:
                self._tokens -= n
                return True
            return False

    def wait_time(self, n: float = 1.0) -> float:
        """Seconds until `n` tokens are there (0 when they are now)."""
        with self._lock:
            self._refill()
            return max(0.0, (n - self._tokens) / self.rate)


# --- the downstream -------------------------------------------------------------------


class AtCapacity(Exception):
    """The downstream cannot take this call now; try again after `retry_after` seconds."""

    def __init__(self, message: str = "the downstream is at capacity", *, retry_after: float = 0.0):
        super().__init__(message)
        self.retry_after = retry_after


class DownstreamFailed(Exception):
    """The downstream processed the task and rejected it: the task fails."""


class Downstream(Protocol):
    def process(self, task: Task) -> str | None:
        """Process one task; return a short result. Raise `AtCapacity` when it cannot take
        the call now, `DownstreamFailed` when the task failed."""


class RateLimitedDownstream:
    """A demo downstream (the article's throughput-constrained legacy system): at most
    `rate` calls a second (bursts of `burst`), and a share of the tasks fails."""

    def __init__(
        self,
        rate: float = 5.0,
        burst: float | None = None,
        *,
        fail_share: float = 0.0,
        work_seconds: float = 0.0,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ):
        if not 0.0 <= fail_share <= 1.0:
            raise ValueError("fail_share is a share between 0 and 1")
        self.bucket = TokenBucket(rate, burst, clock=clock)
        self.fail_share = fail_share
        self.work_seconds = work_seconds
        self.sleep = sleep
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.accepted = 0
        self.refused = 0

    def process(self, task: Task) -> str | None:
        if not self.bucket.try_acquire():
            with self._lock:
                self.refused += 1
            raise AtCapacity(retry_after=self.bucket.wait_time())
        with self._lock:
            self.accepted += 1
            unlucky = self._rng.random() < self.fail_share
        if self.work_seconds:
            self.sleep(self.work_seconds)
        if task.payload.get("always_fail") or unlucky:
            raise DownstreamFailed(f"the downstream rejected task {task.task_id}")
        return "ok"
