"""What may enter the queues: backpressure on callers and shipments, each tenant's fair
share of the live shipment queue (article 004), and each API token's requests
(API_RATE_LIMIT)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Unpack

from queues_app.centre.call_center import CallCenter
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now
from queues_app.ddb.errors import Backpressure, InvalidRequest, RateLimited, TenantOverRate
from queues_app.ddb.windows import Blocks
from queues_app.figures import counters
from queues_app.shipments.fairness import FairnessPolicy, TenantLimiter
from queues_app.shipments.named import NamedQueues
from queues_app.shipments.queue import DEFAULT_QUEUE, SPILLOVER_QUEUE, Shipment, ShipmentQueue
from queues_app.shipments.records import Placing


@dataclass
class BacklogBounds:
    """How many callers may wait and live shipments may queue before enqueues are refused
    (429 with `Retry-After`): `BACKLOG_BOUND_CALLS`, `BACKLOG_BOUND_SHIPMENTS`."""

    bounds: dict[str, int] = field(default_factory=lambda: {counters.CALLS: 1000, counters.LIVE: 10_000})
    retry_after_seconds: int = 5
    depth_cache_seconds: float = 1.0  # one COUNT per queue and process per second at most

    @classmethod
    def from_settings(cls) -> BacklogBounds:
        from django.conf import settings

        config = getattr(settings, "SWITCHBOARD_FAIRNESS", {})
        given = {"bounds": config.get("backlog_bounds"), **config}
        return cls(
            **{
                name: given[name]
                for name in ("bounds", "retry_after_seconds", "depth_cache_seconds")
                if given.get(name) is not None
            }
        )


class BackpressureGate:
    """Refuses an enqueue while its queue's backlog is past the bound. The depth comes
    from a capped COUNT query (the bound + 1), remembered for a second per process so
    that a burst of enqueues costs one query, not one each."""

    _cache: dict[tuple[str, str], tuple[float, int]] = {}
    _lock = threading.Lock()

    def __init__(self, db: Dynamo | None = None, bounds: BacklogBounds | None = None):
        self.db = db or default()
        self.bounds = bounds or BacklogBounds.from_settings()

    def check(self, queue: str) -> None:
        bound = self.bounds.bounds.get(queue)
        if bound is None:
            return
        depth = self.depth(queue, bound)
        if depth > bound:
            raise Backpressure(queue, depth, bound, self.bounds.retry_after_seconds)

    def depth(self, queue: str, bound: int) -> int:
        key = (self.db.prefix, queue)
        with self._lock:
            cached = self._cache.get(key)
        if cached and time.monotonic() - cached[0] < self.bounds.depth_cache_seconds:
            return cached[1]
        if queue == counters.CALLS:
            depth, _more = CallCenter(self.db).line.count_waiting(cap=bound + 1)
        else:
            depth = ShipmentQueue(self.db).count_queued(queue, cap=bound + 1)
        with self._lock:
            self._cache[key] = (time.monotonic(), depth)
        return depth

    @classmethod
    def forget(cls) -> None:
        with cls._lock:
            cls._cache.clear()


@dataclass
class Admitted:
    shipment: Shipment
    sidelined: bool  # True: over its tenant's rate, sent to the spillover queue


class ShipmentAdmission:
    """Where a new shipment goes: refused under backpressure, live within its tenant's
    rate, spillover above it."""

    def __init__(
        self, db: Dynamo | None = None, policy: FairnessPolicy | None = None, bounds: BacklogBounds | None = None
    ):
        self.db = db or default()
        self.policy = policy or FairnessPolicy.from_settings()
        self.shipments = ShipmentQueue(self.db)
        self.gate = BackpressureGate(self.db, bounds)
        self.limiter = TenantLimiter(self.db, self.policy)

    def submit(self, data: dict, *, request_digest: str | None = None, **placing: Unpack[Placing]) -> Admitted:
        """The live queue, or the spillover queue for a tenant over its rate; or the named
        queue `placing` asks for (shipments/named.py), refused (429) for a tenant over that
        queue's rate."""
        if placing.get("queue") not in (None, DEFAULT_QUEUE):
            return self._submit_named(data, request_digest, placing)
        self.gate.check(counters.LIVE)
        tenant = placing.get("tenant")
        sidelined = tenant is not None and tenant != "" and not self.limiter.admit(tenant)
        placing["queue"] = SPILLOVER_QUEUE if sidelined else DEFAULT_QUEUE
        shipment = self.shipments.submit(data, request_digest=request_digest, **placing)
        if sidelined:
            counters.note(self.db, DEFAULT_QUEUE, "sidelined")
        return Admitted(shipment, sidelined)

    def _submit_named(self, data: dict, request_digest: str | None, placing: Placing) -> Admitted:
        queue = str(placing.get("queue"))
        configured = NamedQueues(self.db).settings_for(queue)
        if configured is None:
            known = ", ".join(each.queue_id for each in NamedQueues(self.db).all())
            raise InvalidRequest(f"queue: no shipment queue {queue!r}; the queues are {known}.", field="queue")
        tenant = placing.get("tenant")
        if tenant and configured.tenant_rate is not None:
            limiter = TenantLimiter(self.db, FairnessPolicy(tenant_rate=configured.tenant_rate))
            wait = limiter.wait(tenant, queue=queue)
            if wait:
                raise TenantOverRate(queue, tenant, wait)
        return Admitted(self.shipments.submit(data, request_digest=request_digest, **placing), False)


class TokenLimiter:
    """API_RATE_LIMIT: a fixed-window counter per API token in the metrics table (pk
    `TOKEN_RATE#<token id>`, sk the window's first second), so every worker of every host
    counts against the same quota, each taking it a block at a time (`windows.Blocks`: a
    hundredth of the quota, so a phone system's busy token costs a write per block, not
    per request, and its one partition stays cool). Once the window's quota is used the
    request is refused with the seconds left in the window."""

    _blocks = Blocks()

    def __init__(self, limit: tuple[int, int] | None = None, db: Dynamo | None = None, clock=None):
        from django.conf import settings

        self.limit = limit if limit is not None else settings.SWITCHBOARD_API_RATE_LIMIT
        self.db = db or default()
        self.clock = clock or now

    def admit(self, token_id: int) -> None:
        """Count one request of the token; RateLimited when it is over its quota."""
        if not self.limit:
            return
        quota, seconds = self.limit
        wait = self._blocks.count(self.db, f"TOKEN_RATE#{token_id}", quota, seconds, self.clock())
        if wait:
            raise RateLimited(quota, seconds, retry_after=wait)
