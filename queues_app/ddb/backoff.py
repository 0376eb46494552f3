"""Backoff for DynamoDB outages: a loop that meets `Unavailable` or `Throttled` waits
longer after each consecutive failure (capped, full jitter), and says so once when the
outage starts and once when DynamoDB answers again, never once per attempt."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable

from queues_app.ddb import errors

TRANSIENT = (errors.Unavailable, errors.Throttled)


class Backoff:
    """`failed(exc)` after each failed call returns how long to wait before the next
    (uniform in [floor, min(cap, base * 2**(n-1))] for the n-th failure in a row);
    `succeeded()` after a call that worked ends the outage and starts over."""

    def __init__(
        self,
        logger: logging.Logger,
        *,
        base: float = 0.5,
        cap: float = 30.0,
        floor: float = 0.05,
        rng: random.Random | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ):
        self.log = logger
        self.base = base
        self.cap = cap
        self.floor = min(floor, base)
        self.rng = rng or random.Random()
        self.monotonic = monotonic
        self.failures = 0
        self.since: float | None = None

    @property
    def failing(self) -> bool:
        return self.failures > 0

    def ceiling(self) -> float:
        return min(self.cap, self.base * 2 ** max(self.failures - 1, 0))

    def failed(self, exc: errors.DynamoError) -> float:
        self.failures += 1
        if self.failures == 1:
            self.since = self.monotonic()
            state = "throttled" if isinstance(exc, errors.Throttled) else "unavailable"
            self.log.warning("DynamoDB %s (%s); retrying with backoff up to %g s", state, exc.message, self.cap)
        return max(self.floor, self.rng.uniform(0, self.ceiling()))

    def succeeded(self) -> None:
        if not self.failures:
            return
        down = self.monotonic() - (self.since if self.since is not None else self.monotonic())
        self.log.info("DynamoDB answers again after %.1f s (%d failed attempts)", down, self.failures)
        self.failures = 0
        self.since = None
