"""Fairness between tenants under backlog: per-tenant rate limits into the live queue,
and sidelining old work to the spillover queue, which `FairConsumer` takes only when the
live queue is caught up (the bounds of what may enter at all are in `admission.py`).
Details in docs/architecture.md.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now
from queues_app.ddb.windows import count_in_window
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.records import DEFAULT_QUEUE, SPILLOVER_QUEUE, Receipt


@dataclass
class FairnessPolicy:
    tenant_rate: float = 10.0  # shipments a second per tenant into the live queue
    tenant_rates: dict[str, float] = field(default_factory=dict)  # per-tenant overrides
    spillover_after_seconds: float = 300.0  # live work older than this is sidelined

    @classmethod
    def from_settings(cls) -> FairnessPolicy:
        from django.conf import settings

        config = getattr(settings, "SWITCHBOARD_FAIRNESS", {})
        return cls(
            **{
                name: config[name]
                for name in ("tenant_rate", "tenant_rates", "spillover_after_seconds")
                if name in config
            }
        )

    def rate_for(self, tenant: str) -> float:
        return float(self.tenant_rates.get(tenant, self.tenant_rate))


class TenantLimiter:
    """A fixed-window counter per tenant in the metrics table: one conditional ADD per
    enqueue, refused once the window's quota is used."""

    def __init__(
        self, db: Dynamo | None = None, policy: FairnessPolicy | None = None, clock: Callable[[], datetime] = now
    ):
        self.db = db or default()
        self.policy = policy or FairnessPolicy.from_settings()
        self.clock = clock

    def window(self, tenant: str) -> tuple[int, int]:
        """(window seconds, quota): 10/s is 10 a second; 0.2/s is 1 every 5 seconds."""
        rate = self.policy.rate_for(tenant)
        if rate <= 0:
            return 1, 0
        seconds = 1 if rate >= 1 else math.ceil(1 / rate)
        return seconds, max(1, round(rate * seconds))

    def admit(self, tenant: str) -> bool:
        return not self.wait(tenant)

    def wait(self, tenant: str, *, queue: str | None = None) -> int:
        """Count one shipment of `tenant` (into `queue`, for a named queue's own windows):
        0 when it is within its rate, else the seconds left in the window."""
        seconds, quota = self.window(tenant)
        if quota == 0:
            return seconds
        key = f"RATE#{queue}#{tenant}" if queue else f"RATE#{tenant}"
        return count_in_window(self.db, key, quota, seconds, self.clock())


class SweepSchedule:
    """When the next sweep for stale live work is due, shared by every consumer of one
    process, so that they do not all read and move the same entries at once. After a
    sweep that moved nothing the next one waits longer (`idle_seconds`): an idle sweep
    still costs one Query per priority level."""

    def __init__(self):
        self._lock = threading.Lock()
        self._next: dict[str, float] = {}

    def claim(self, key: str) -> bool:
        """True for the one caller that should sweep now."""
        with self._lock:
            if time.monotonic() < self._next.get(key, 0.0):
                return False
            self._next[key] = float("inf")  # swept now: nobody else until it is done
            return True

    def done(self, key: str, after_seconds: float) -> None:
        with self._lock:
            self._next[key] = time.monotonic() + after_seconds


_sweeps = SweepSchedule()


class FairConsumer:
    """Receives from the live queue first and the spillover queue only when the live one has
    nothing visible. Before that, when a sweep is due, it sidelines live work that waited
    longer than the policy's bound, all of it at once (up to `sweep_limit`), so fresh
    work is not left waiting behind old work that is still to be moved."""

    def __init__(
        self,
        shipments: ShipmentQueue,
        policy: FairnessPolicy | None = None,
        *,
        sweep_seconds: float = 2.0,
        sweep_limit: int = 2000,
        schedule: SweepSchedule | None = None,
    ):
        self.shipments = shipments
        self.policy = policy or FairnessPolicy.from_settings()
        self.sweep_seconds = sweep_seconds
        self.sweep_limit = sweep_limit
        self.schedule = schedule or _sweeps
        # After a sweep that found nothing stale, the next is this far off: work is then
        # sidelined at most this late (a quarter of the bound, and never over 30 s).
        self.idle_seconds = max(sweep_seconds, min(self.policy.spillover_after_seconds / 4, 30.0))

    def receive(self, *, visibility_timeout: float = 30.0) -> Receipt | None:
        self._maybe_sweep()
        lease = self.shipments.receive(DEFAULT_QUEUE, visibility_timeout=visibility_timeout)
        if lease is None:
            lease = self.shipments.receive(SPILLOVER_QUEUE, visibility_timeout=visibility_timeout)
        return lease

    def _maybe_sweep(self) -> None:
        key = self.shipments.db.table("shipments")
        if not self.schedule.claim(key):
            return
        moved: list[str] = []
        try:
            moved = self.shipments.sideline_stale(self.policy.spillover_after_seconds, limit=self.sweep_limit)
        finally:
            self.schedule.done(key, self.sweep_seconds if moved else self.idle_seconds)
