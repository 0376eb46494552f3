"""What a shipment is: its statuses and states, the record and the receipt a consumer
holds, the retry policy, the item layout in the shipments table and its sort keys.

The index layout is explained in docs/architecture.md.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TypedDict, Unpack

from queues_app.ddb import errors
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.codec import record_from_item
from queues_app.ddb.tables import SHIPMENTS_DLQ, SHIPMENTS_INVISIBLE, SHIPMENTS_READY

DEFAULT_DLQ_REASON = "Sent to the DLQ by a supervisor"  # when a supervisor gives none
DEFAULT_QUEUE = "live"
SPILLOVER_QUEUE = "spillover"  # sidelined work, taken only when the live queue is caught up
MAX_PRIORITY = 9  # priorities run from 0 to 9, higher first

# index -> (partition key attribute, sort key attribute); each index is sparse.
INDEX_KEYS = {
    index.name: (index.partition_key, index.sort_key or "")
    for index in (SHIPMENTS_READY, SHIPMENTS_INVISIBLE, SHIPMENTS_DLQ)
}


class ShipmentStatus:
    UNDER_CONSTRUCTION = "UNDER_CONSTRUCTION"
    READY_TO_SHIP = "READY_TO_SHIP"
    PROCESSING = "PROCESSING_SHIPMENT"
    COMPLETED = "COMPLETED"
    IN_DLQ = "IN_DLQ"

    ALL = (UNDER_CONSTRUCTION, READY_TO_SHIP, PROCESSING, COMPLETED, IN_DLQ)
    LABELS = {
        UNDER_CONSTRUCTION: "Under construction",
        READY_TO_SHIP: "Ready to ship",
        PROCESSING: "Processing",
        COMPLETED: "Completed",
        IN_DLQ: "In DLQ",
    }


class ShipmentState:
    """Where a shipment is; derived from its status and which index holds it."""

    UNDER_CONSTRUCTION = "under_construction"
    READY = "ready"  # ready to ship, not in a queue
    QUEUED = "queued"
    DELAYED = "delayed"  # queued, but not visible before visible_at (backoff or delay)
    PROCESSING = "processing"
    COMPLETED = "completed"
    IN_DLQ = "in_dlq"

    LABELS = {
        UNDER_CONSTRUCTION: "Under construction",
        READY: "Ready",
        QUEUED: "Queued",
        DELAYED: "Delayed",
        PROCESSING: "In flight",
        COMPLETED: "Completed",
        IN_DLQ: "In the DLQ",
    }


class ReceiptInvalid(errors.Conflict):
    """The receipt no longer holds the shipment (lease ran out and it went elsewhere,
    or it was completed, failed, removed or sent to the DLQ)."""


class InvalidTransition(errors.Conflict):
    """The lifecycle does not allow this change from the shipment's current state."""


@dataclass
class Shipment:
    shipment_id: str
    data: dict
    status: str
    version: int = 1
    priority: int = 0
    queue: str = DEFAULT_QUEUE
    created_at: str = ""
    updated_at: str = ""
    enqueued_at: str | None = None  # position in the queue (touch moves it)
    first_enqueued_at: str | None = None  # kept through retries and restores
    visible_at: str | None = None  # deadline of the lease, or end of a delay
    receipt: str | None = None
    receive_count: int = 0  # every receive, ever (history)
    attempts: int = 0  # receives since the last restore: these decide the DLQ
    first_attempt_at: str | None = None
    last_attempt_at: str | None = None
    failure_reasons: list[dict] = field(default_factory=list)
    lease_expirations: int = 0
    dlq_at: str | None = None
    dlq_reason: str | None = None
    completed_at: str | None = None
    restored_count: int = 0
    tenant: str | None = None
    trace_id: str | None = None  # given by the API caller, carried into the audit trail and logs
    ready_sk: str | None = None
    invisible_sk: str | None = None
    dlq_sk: str | None = None
    change: str | None = None  # the request that made this version (ddb/replay.py)
    request_digest: str | None = None  # the body of the request that created it under an idempotency key

    @property
    def state(self) -> str:
        if self.status == ShipmentStatus.UNDER_CONSTRUCTION:
            return ShipmentState.UNDER_CONSTRUCTION
        if self.status == ShipmentStatus.PROCESSING:
            return ShipmentState.PROCESSING
        if self.status == ShipmentStatus.COMPLETED:
            return ShipmentState.COMPLETED
        if self.status == ShipmentStatus.IN_DLQ:
            return ShipmentState.IN_DLQ
        if self.ready_sk:
            return ShipmentState.QUEUED
        if self.invisible_sk:
            return ShipmentState.DELAYED
        return ShipmentState.READY

    @property
    def status_label(self) -> str:
        return ShipmentStatus.LABELS.get(self.status, self.status)

    @property
    def state_label(self) -> str:
        return ShipmentState.LABELS.get(self.state, self.state)

    @property
    def deadline(self) -> datetime | None:
        return from_iso(self.visible_at)


@dataclass
class Receipt:
    """What a consumer holds after a receive: the shipment and the receipt that proves it."""

    shipment: Shipment
    receipt: str
    deadline: datetime


@dataclass(frozen=True)
class RetryPolicy:
    max_receives: int = 5
    backoff_base_seconds: float = 2.0
    backoff_max_seconds: float = 300.0

    def delay_after(self, receive_count: int) -> float:
        """Exponential backoff with full jitter on the upper half."""
        ceiling = min(self.backoff_max_seconds, self.backoff_base_seconds * 2 ** max(receive_count - 1, 0))
        return ceiling / 2 + random.uniform(0, ceiling / 2)

    @classmethod
    def from_settings(cls, name: str = "SWITCHBOARD_SHIPMENT_RETRY") -> RetryPolicy:
        from django.conf import settings

        config = getattr(settings, name, {}) or {}
        return cls(
            max_receives=int(config.get("max_receives", 5)),
            backoff_base_seconds=float(config.get("backoff_base_seconds", 2.0)),
            backoff_max_seconds=float(config.get("backoff_max_seconds", 300.0)),
        )


@dataclass
class Counts:
    queued: int = 0
    in_flight: int = 0
    delayed: int = 0
    dlq: int = 0
    capped: bool = False  # True when a count stopped at the cap


@dataclass
class RestoreReport:
    restored: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


class Placing(TypedDict, total=False):
    """Where and how a new shipment is queued: written once, passed on as keywords from
    admission to the queue to the record."""

    priority: int  # 0 (default) to MAX_PRIORITY
    tenant: str | None
    queue: str  # DEFAULT_QUEUE when left out
    delay_seconds: float  # invisible this long first
    shipment_id: str | None  # made up when left out
    trace_id: str | None


def queued_shipment(data: dict, *, moment: datetime, **placing: Unpack[Placing]) -> Shipment:
    """A new shipment, ready to ship and queued at `moment` (visible after `delay_seconds`)."""
    priority, delay_seconds = placing.get("priority", 0), placing.get("delay_seconds", 0)
    check_priority(priority)
    if not isinstance(data, dict):
        raise errors.InvalidRequest("Shipment data must be a map of fields.")
    stamp = to_iso(moment)
    shipment = Shipment(
        shipment_id=placing.get("shipment_id") or uuid.uuid4().hex[:16],
        data=data,
        status=ShipmentStatus.READY_TO_SHIP,
        priority=priority,
        queue=placing.get("queue", DEFAULT_QUEUE),
        created_at=stamp,
        updated_at=stamp,
        tenant=placing.get("tenant"),
        trace_id=placing.get("trace_id"),
        enqueued_at=stamp,
        first_enqueued_at=stamp,
    )
    if delay_seconds and delay_seconds > 0:
        shipment.visible_at = to_iso(moment + timedelta(seconds=delay_seconds))
        shipment.invisible_sk = timed_sort_key(shipment.visible_at, shipment.shipment_id)
    else:
        shipment.ready_sk = ready_sort_key(priority, stamp, shipment.shipment_id)
    return shipment


def check_priority(priority) -> None:
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= MAX_PRIORITY:
        raise errors.InvalidRequest(f"priority must be a whole number from 0 to {MAX_PRIORITY}.")


def ready_sort_key(priority: int, enqueued_at: str, shipment_id: str) -> str:
    return f"{MAX_PRIORITY - priority}#{enqueued_at}#{shipment_id}"


def timed_sort_key(moment: str, shipment_id: str) -> str:
    return f"{moment}#{shipment_id}"


def shipment_from_item(item: dict) -> Shipment:
    return record_from_item(Shipment, item, named={"shipment_id": "id"}, data=item.get("data") or {})


def shipment_to_item(shipment: Shipment) -> dict:
    item = {
        "id": shipment.shipment_id,
        "type": "shipment",
        "data": shipment.data,
        "status": shipment.status,
        "version": shipment.version,
        "priority": shipment.priority,
        "queue": shipment.queue,
        "created_at": shipment.created_at,
        "updated_at": shipment.updated_at,
        "enqueued_at": shipment.enqueued_at,
        "first_enqueued_at": shipment.first_enqueued_at,
        "visible_at": shipment.visible_at,
        "receipt": shipment.receipt,
        "receive_count": shipment.receive_count,
        "attempts": shipment.attempts,
        "first_attempt_at": shipment.first_attempt_at,
        "last_attempt_at": shipment.last_attempt_at,
        "failure_reasons": shipment.failure_reasons,
        "lease_expirations": shipment.lease_expirations,
        "dlq_at": shipment.dlq_at,
        "dlq_reason": shipment.dlq_reason,
        "completed_at": shipment.completed_at,
        "restored_count": shipment.restored_count,
        "tenant": shipment.tenant,
        "trace_id": shipment.trace_id,
        "ready_sk": shipment.ready_sk,
        "invisible_sk": shipment.invisible_sk,
        "dlq_sk": shipment.dlq_sk,
        "change": shipment.change,
        "request_digest": shipment.request_digest,
    }
    for index_pk, attr in INDEX_KEYS.values():
        if item[attr]:
            item[index_pk] = shipment.queue
    return item
