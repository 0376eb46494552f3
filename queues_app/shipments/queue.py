"""The shipments priority queue: a queue over an existing table, with visibility
timeouts, retries with backoff, a dead-letter queue and selective restore.

Where the article keeps one sparse index of everything queued (waiting and in flight
alike) and its peek reads up to 250 entries to skip those in flight, each state here
has its own sparse index, so no read ever has to skip anything:

    ready      ready_q = <queue>      ready_sk = <9-priority>#<enqueued_at>#<id>
    invisible  invisible_q = <queue>  invisible_sk = <visible_at>#<id>   (in flight, or delayed)
    dlq        dlq_q = <queue>        dlq_sk = <dlq_at>#<id>

A peek reads the head of `invisible` up to now (a lease that ran out or a delay that is
over; work that has waited longest goes first), else the head of `ready`, then claims
one entry with an update conditioned on the index sort key it saw: three requests at
most, whatever the backlog or the number in flight. A claim that loses a race moves
on to the next entry it already read.

States (`state` property): under construction, ready (not queued), queued, delayed,
processing, completed, in DLQ. Every change is conditioned on the state it expects,
and, when the caller passes one, on the version it saw.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from queues_app.ddb import batch, errors
from queues_app.agents import keys
from queues_app.monitoring import counters
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.contention import ContentionGauge
from queues_app.ddb.paging import Page, decode_cursor, encode_cursor
from queues_app.ddb.clock import from_iso, now, to_iso
from queues_app.ddb.codec import marshal, unmarshal

DEFAULT_QUEUE = "live"
SPILLOVER_QUEUE = "spillover"  # sidelined work, taken only when the live queue is caught up
MAX_FAILURE_REASONS = 10
CLAIM_ROUNDS = 3  # reads of `ready` in one receive when other consumers take every entry read
_contention = ContentionGauge()


def reset_contention() -> None:
    """Start afresh, as a process with no recent races (benchmarks measuring a lone consumer)."""
    _contention.reset()


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
        UNDER_CONSTRUCTION: "Under construction", READY: "Ready", QUEUED: "Queued", DELAYED: "Delayed",
        PROCESSING: "In flight", COMPLETED: "Completed", IN_DLQ: "In the DLQ",
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
    def from_settings(cls) -> RetryPolicy:
        from django.conf import settings

        config = getattr(settings, "SWITCHBOARD_SHIPMENT_RETRY", {}) or {}
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


def shipment_from_item(item: dict) -> Shipment:
    return Shipment(
        shipment_id=item["id"],
        data=item.get("data") or {},
        status=item["status"],
        version=int(item.get("version", 1)),
        priority=int(item.get("priority", 0)),
        queue=item.get("queue", DEFAULT_QUEUE),
        created_at=item.get("created_at", ""),
        updated_at=item.get("updated_at", ""),
        enqueued_at=item.get("enqueued_at"),
        first_enqueued_at=item.get("first_enqueued_at"),
        visible_at=item.get("visible_at"),
        receipt=item.get("receipt"),
        receive_count=int(item.get("receive_count", 0)),
        attempts=int(item.get("attempts", 0)),
        first_attempt_at=item.get("first_attempt_at"),
        last_attempt_at=item.get("last_attempt_at"),
        failure_reasons=list(item.get("failure_reasons") or []),
        lease_expirations=int(item.get("lease_expirations", 0)),
        dlq_at=item.get("dlq_at"),
        dlq_reason=item.get("dlq_reason"),
        completed_at=item.get("completed_at"),
        restored_count=int(item.get("restored_count", 0)),
        tenant=item.get("tenant"),
        trace_id=item.get("trace_id"),
        ready_sk=item.get("ready_sk"),
        invisible_sk=item.get("invisible_sk"),
        dlq_sk=item.get("dlq_sk"),
    )


def ready_sort_key(priority: int, enqueued_at: str, shipment_id: str) -> str:
    return f"{keys.MAX_PRIORITY - priority}#{enqueued_at}#{shipment_id}"


def timed_sort_key(moment: str, shipment_id: str) -> str:
    return f"{moment}#{shipment_id}"


class ShipmentQueue:
    """Every operation on shipments. `clock` is injectable for tests."""

    def __init__(
        self,
        db: Dynamo | None = None,
        *,
        retry: RetryPolicy | None = None,
        clock: Callable[[], datetime] = now,
        candidate_limit: int = 5,
    ):
        self.db = db or default()
        self._retry = retry
        self.clock = clock
        self.candidate_limit = candidate_limit

    @property
    def table(self) -> str:
        return self.db.table("shipments")

    @property
    def retry(self) -> RetryPolicy:
        if self._retry is None:
            self._retry = RetryPolicy.from_settings()
        return self._retry

    # --- reading ----------------------------------------------------------------------

    def get(self, shipment_id: str) -> Shipment:
        response = self.db.call("get_item", TableName=self.table, Key=marshal({"id": shipment_id}),
                                ConsistentRead=True)
        if "Item" not in response:
            raise errors.NotFound(f"No shipment with id {shipment_id!r}.")
        return shipment_from_item(unmarshal(response["Item"]))

    def get_many(self, shipment_ids: list[str]) -> list[Shipment]:
        """BatchGetItem, in the order asked; unknown ids are skipped."""
        unique = list(dict.fromkeys(shipment_ids))
        items = batch.get_items(self.db, self.table, [{"id": i} for i in unique], consistent=True)
        found = {item["id"]: shipment_from_item(item) for item in items}
        return [found[i] for i in shipment_ids if i in found]

    def _index_page(self, index: str, queue: str, *, cursor: str | None, limit: int,
                    forward: bool = True, extra: dict | None = None) -> tuple[list[str], str | None]:
        pk, _sk = _INDEX_KEYS[index]
        params = {
            "TableName": self.table,
            "IndexName": index,
            "KeyConditionExpression": "#pk = :q",
            "ExpressionAttributeNames": {"#pk": pk},
            "ExpressionAttributeValues": {":q": {"S": queue}},
            "Limit": limit,
            "ScanIndexForward": forward,
        }
        if extra:
            params["FilterExpression"] = extra["filter"]
            params["ExpressionAttributeNames"].update(extra.get("names", {}))
            params["ExpressionAttributeValues"].update(extra.get("values", {}))
        start = decode_cursor(cursor)
        if start:
            params["ExclusiveStartKey"] = start
        response = self.db.call("query", **params)
        ids = [unmarshal(i)["id"] for i in response.get("Items", [])]
        return ids, encode_cursor(response.get("LastEvaluatedKey"))

    def list_queue(self, queue: str = DEFAULT_QUEUE, *, cursor: str | None = None, limit: int = 25) -> Page[Shipment]:
        """Queued shipments in the order receive takes them: priority, then time."""
        ids, next_cursor = self._index_page("ready", queue, cursor=cursor, limit=limit)
        return Page(self.get_many(ids), next_cursor)

    def list_in_flight(self, queue: str = DEFAULT_QUEUE, *, cursor: str | None = None,
                       limit: int = 25) -> Page[Shipment]:
        """Shipments being processed, by deadline (delayed ones are left out)."""
        return self._list_invisible(queue, ShipmentStatus.PROCESSING, cursor=cursor, limit=limit)

    def list_delayed(self, queue: str = DEFAULT_QUEUE, *, cursor: str | None = None,
                     limit: int = 25) -> Page[Shipment]:
        """Queued shipments waiting out a delay or a backoff, by the time they become visible."""
        return self._list_invisible(queue, ShipmentStatus.READY_TO_SHIP, cursor=cursor, limit=limit)

    def _list_invisible(self, queue: str, status: str, *, cursor: str | None, limit: int) -> Page[Shipment]:
        ids, next_cursor = self._index_page("invisible", queue, cursor=cursor, limit=limit, extra={
            "filter": "#st = :status", "names": {"#st": "status"}, "values": {":status": {"S": status}},
        })
        return Page(self.get_many(ids), next_cursor)

    def list_dlq(self, queue: str = DEFAULT_QUEUE, *, cursor: str | None = None, limit: int = 25) -> Page[Shipment]:
        """The dead-letter queue, oldest first."""
        ids, next_cursor = self._index_page("dlq", queue, cursor=cursor, limit=limit)
        return Page(self.get_many(ids), next_cursor)

    def counts(self, queue: str = DEFAULT_QUEUE, cap: int = 10_000) -> Counts:
        """Depths from COUNT queries on the sparse indexes, each stopping at `cap` items,
        so the cost is bounded however large the backlog."""
        result = Counts()
        result.queued, more_q = self._count("ready", queue, cap)
        result.dlq, more_d = self._count("dlq", queue, cap)
        result.in_flight, more_p = self._count("invisible", queue, cap, status=ShipmentStatus.PROCESSING)
        result.delayed, more_r = self._count("invisible", queue, cap, status=ShipmentStatus.READY_TO_SHIP)
        result.capped = more_q or more_d or more_p or more_r
        return result

    def count_queued(self, queue: str = DEFAULT_QUEUE, cap: int = 10_000) -> int:
        """Queued (visible) shipments, one COUNT query stopping at `cap`."""
        return self._count("ready", queue, cap)[0]

    def _count(self, index: str, queue: str, cap: int, status: str | None = None) -> tuple[int, bool]:
        pk, _ = _INDEX_KEYS[index]
        params = {
            "TableName": self.table, "IndexName": index, "Select": "COUNT", "Limit": cap,
            "KeyConditionExpression": "#pk = :q", "ExpressionAttributeNames": {"#pk": pk},
            "ExpressionAttributeValues": {":q": {"S": queue}},
        }
        if status:
            params["FilterExpression"] = "#st = :st"
            params["ExpressionAttributeNames"]["#st"] = "status"
            params["ExpressionAttributeValues"][":st"] = {"S": status}
        response = self.db.call("query", **params)
        return response["Count"], bool(response.get("LastEvaluatedKey"))

    def oldest_queued_at(self, queue: str = DEFAULT_QUEUE) -> str | None:
        """The earliest first-enqueue time among queued shipments: one Limit-1 query per
        priority level that has any (at most ten), since the index sorts by priority first."""
        oldest = None
        for level in range(keys.MAX_PRIORITY + 1):
            response = self.db.call(
                "query", TableName=self.table, IndexName="ready", Limit=1,
                KeyConditionExpression="ready_q = :q AND begins_with(ready_sk, :p)",
                ExpressionAttributeValues={":q": {"S": queue}, ":p": {"S": f"{level}#"}},
            )
            for raw in response.get("Items", []):
                stamp = unmarshal(raw)["ready_sk"].split("#")[1]
                oldest = stamp if oldest is None or stamp < oldest else oldest
        return oldest

    # --- lifecycle ----------------------------------------------------------------------

    def create(self, data: dict, *, shipment_id: str | None = None, priority: int = 0, ready: bool = False,
               tenant: str | None = None, queue: str = DEFAULT_QUEUE) -> Shipment:
        _check_priority(priority)
        if not isinstance(data, dict):
            raise errors.InvalidRequest("Shipment data must be a map of fields.")
        stamp = to_iso(self.clock())
        shipment = Shipment(
            shipment_id=shipment_id or uuid.uuid4().hex[:16], data=data,
            status=ShipmentStatus.READY_TO_SHIP if ready else ShipmentStatus.UNDER_CONSTRUCTION,
            priority=priority, queue=queue, created_at=stamp, updated_at=stamp, tenant=tenant,
        )
        try:
            self.db.call("put_item", TableName=self.table, Item=marshal(shipment_to_item(shipment)),
                         ConditionExpression="attribute_not_exists(id)")
        except errors.Conflict as exc:
            raise errors.Conflict(f"A shipment with id {shipment.shipment_id!r} exists already.") from exc
        return shipment

    def submit(self, data: dict, *, priority: int = 0, tenant: str | None = None, queue: str = DEFAULT_QUEUE,
               delay_seconds: float = 0, shipment_id: str | None = None, trace_id: str | None = None) -> Shipment:
        """Create a shipment ready to ship and queued (visible after `delay_seconds`), in
        one PutItem: what the API's enqueue does."""
        _check_priority(priority)
        if not isinstance(data, dict):
            raise errors.InvalidRequest("Shipment data must be a map of fields.")
        moment = self.clock()
        stamp = to_iso(moment)
        shipment = Shipment(
            shipment_id=shipment_id or uuid.uuid4().hex[:16], data=data, status=ShipmentStatus.READY_TO_SHIP,
            priority=priority, queue=queue, created_at=stamp, updated_at=stamp, tenant=tenant,
            trace_id=trace_id, enqueued_at=stamp, first_enqueued_at=stamp,
        )
        if delay_seconds and delay_seconds > 0:
            shipment.visible_at = to_iso(moment + timedelta(seconds=delay_seconds))
            shipment.invisible_sk = timed_sort_key(shipment.visible_at, shipment.shipment_id)
        else:
            shipment.ready_sk = ready_sort_key(priority, stamp, shipment.shipment_id)
        try:
            self.db.call("put_item", TableName=self.table, Item=marshal(shipment_to_item(shipment)),
                         ConditionExpression="attribute_not_exists(id)")
        except errors.Conflict as exc:
            raise errors.Conflict(f"A shipment with id {shipment.shipment_id!r} exists already.") from exc
        counters.note(self.db, queue, "enqueued")
        return shipment

    def sideline_stale(self, older_than_seconds: float, *, source: str = DEFAULT_QUEUE,
                       target: str = SPILLOVER_QUEUE, limit: int = 100) -> list[str]:
        """Move queued shipments that have waited longer than `older_than_seconds` from
        `source` to `target`, so fresh work is served first after a backlog. One Query
        per priority level reads exactly the stale ones (the sort key starts with the
        level, then the enqueue time); each move is conditioned on the entry as read."""
        cutoff = to_iso(self.clock() - timedelta(seconds=older_than_seconds))
        moved: list[str] = []
        for level in range(keys.MAX_PRIORITY + 1):
            if len(moved) >= limit:
                break
            response = self.db.call(
                "query", TableName=self.table, IndexName="ready", Limit=limit - len(moved),
                KeyConditionExpression="ready_q = :q AND ready_sk BETWEEN :lo AND :hi",
                ExpressionAttributeValues=marshal({":q": source, ":lo": f"{level}#", ":hi": f"{level}#{cutoff}"}),
            )
            for raw in response.get("Items", []):
                entry = unmarshal(raw)
                try:
                    self.db.call(
                        "update_item", TableName=self.table, Key=marshal({"id": entry["id"]}),
                        UpdateExpression="SET #queue = :target, ready_q = :target, updated_at = :now ADD version :one",
                        ConditionExpression="ready_q = :source AND ready_sk = :seen",
                        ExpressionAttributeNames={"#queue": "queue"},
                        ExpressionAttributeValues=marshal({":target": target, ":source": source, ":one": 1,
                                                           ":seen": entry["ready_sk"], ":now": to_iso(self.clock())}),
                    )
                    moved.append(entry["id"])
                except errors.Conflict:
                    continue  # taken or changed meanwhile
        if moved:
            counters.note(self.db, source, "sidelined", len(moved))
        return moved

    def create_many(self, shipments: Iterable[Shipment], on_batch=None) -> int:
        return batch.put_items(self.db, self.table, (shipment_to_item(s) for s in shipments), on_batch=on_batch)

    def mark_ready(self, shipment_id: str, *, expected_version: int | None = None) -> Shipment:
        """Under construction -> ready to ship (not yet queued)."""
        return self._change(
            shipment_id, "mark ready",
            "SET #st = :ready", {":ready": ShipmentStatus.READY_TO_SHIP},
            allowed="#st = :uc", allowed_values={":uc": ShipmentStatus.UNDER_CONSTRUCTION},
            expected_version=expected_version,
        )

    def enqueue(self, shipment_id: str, *, expected_version: int | None = None,
                delay_seconds: float = 0) -> Shipment:
        """Put a ready shipment in its queue (visible after `delay_seconds`)."""
        current = self.get(shipment_id)
        if current.status == ShipmentStatus.UNDER_CONSTRUCTION:
            raise InvalidTransition(f"Shipment {shipment_id} is under construction; mark it ready first.")
        moment = self.clock()
        stamp = to_iso(moment)
        values = {":now": stamp}
        if delay_seconds and delay_seconds > 0:
            visible = to_iso(moment + timedelta(seconds=delay_seconds))
            update = ("SET enqueued_at = :now, first_enqueued_at = if_not_exists(first_enqueued_at, :now), "
                      "visible_at = :visible, invisible_q = #queue, invisible_sk = :isk")
            values.update({":visible": visible, ":isk": timed_sort_key(visible, shipment_id)})
        else:
            update = ("SET enqueued_at = :now, first_enqueued_at = if_not_exists(first_enqueued_at, :now), "
                      "ready_q = #queue, ready_sk = :rsk")
            values[":rsk"] = ready_sort_key(current.priority, stamp, shipment_id)
        queued = self._change(
            shipment_id, "enqueue", update, values,
            allowed="#st = :ready AND attribute_not_exists(ready_q) AND attribute_not_exists(invisible_q)",
            allowed_values={":ready": ShipmentStatus.READY_TO_SHIP},
            expected_version=expected_version if expected_version is not None else current.version,
            names={"#queue": "queue"},
        )
        counters.note(self.db, queued.queue, "enqueued")
        return queued

    def receive(self, queue: str = DEFAULT_QUEUE, *, visibility_timeout: float = 30.0) -> Receipt | None:
        """Receive one shipment for `visibility_timeout` seconds, or None when nothing is
        visible. At most three requests when uncontended."""
        moment = self.clock()
        stamp = to_iso(moment)
        due = self.db.call(
            "query", TableName=self.table, IndexName="invisible", Limit=self.candidate_limit,
            KeyConditionExpression="invisible_q = :q AND invisible_sk < :now",
            ExpressionAttributeValues={":q": {"S": queue}, ":now": {"S": stamp}},
        ).get("Items", [])
        for raw in due:
            entry = unmarshal(raw)
            if entry.get("status") == ShipmentStatus.PROCESSING and \
                    int(entry.get("attempts", 0)) >= self.retry.max_receives:
                self._dead_letter_expired(entry, stamp)
                continue
            lease = self._claim(entry["id"], "invisible_sk", entry["invisible_sk"], moment, visibility_timeout,
                                expired_lease=entry.get("status") == ShipmentStatus.PROCESSING)
            if lease:
                return lease
        for _round in range(CLAIM_ROUNDS):
            ready = [unmarshal(raw) for raw in self.db.call(
                "query", TableName=self.table, IndexName="ready", Limit=self.candidate_limit,
                KeyConditionExpression="ready_q = :q", ExpressionAttributeValues={":q": {"S": queue}},
            ).get("Items", [])]
            if not ready:
                return None
            for entry in _contention.order(ready):
                lease = self._claim(entry["id"], "ready_sk", entry["ready_sk"], moment, visibility_timeout)
                _contention.observe(lost=lease is None)
                if lease:
                    return lease
            # Every entry read was taken by other consumers meanwhile: the queue is not
            # empty, so read its head again rather than report nothing visible.
        return None

    def _claim(self, shipment_id: str, seen_attr: str, seen: str, moment: datetime, timeout: float,
               *, expired_lease: bool = False, final: bool = False) -> Receipt | None:
        stamp = to_iso(moment)
        deadline = moment + timedelta(seconds=timeout)
        receipt = uuid.uuid4().hex
        status = ShipmentStatus.COMPLETED if final else ShipmentStatus.PROCESSING
        sets = ["#st = :status", "receipt = :receipt", "last_attempt_at = :now",
                "first_attempt_at = if_not_exists(first_attempt_at, :now)", "updated_at = :now"]
        removes = ["ready_q", "ready_sk"]
        values = {":status": status, ":receipt": receipt, ":now": stamp, ":one": 1, ":seen": seen,
                  ":expired": 1 if expired_lease else 0}
        if final:
            sets += ["completed_at = :now"]
            removes += ["invisible_q", "invisible_sk", "visible_at", "receipt"]
            sets.remove("receipt = :receipt")
            del values[":receipt"]
        else:
            sets += ["visible_at = :deadline", "invisible_q = #queue", "invisible_sk = :isk"]
            values.update({":deadline": to_iso(deadline), ":isk": timed_sort_key(to_iso(deadline), shipment_id)})
        try:
            response = self.db.call(
                "update_item", TableName=self.table, Key=marshal({"id": shipment_id}),
                UpdateExpression=f"SET {', '.join(sets)} REMOVE {', '.join(removes)} "
                "ADD version :one, receive_count :one, attempts :one, lease_expirations :expired",
                ConditionExpression=f"{seen_attr} = :seen",
                ExpressionAttributeNames={"#st": "status", **({} if final else {"#queue": "queue"})},
                ExpressionAttributeValues=marshal(values),
                ReturnValues="ALL_NEW",
            )
        except errors.Conflict:
            return None  # another consumer took it, or it moved: try the next one
        shipment = shipment_from_item(unmarshal(response["Attributes"]))
        if expired_lease:
            counters.note(self.db, shipment.queue, "expired_leases")
        if shipment.receive_count == 1 and shipment.first_enqueued_at:
            # Age at the first attempt only: retries would hide how long new work waits.
            counters.note_first_attempt(self.db, shipment.queue,
                                       (moment - from_iso(shipment.first_enqueued_at)).total_seconds())
        return Receipt(shipment, receipt if not final else "", deadline)

    def _dead_letter_expired(self, entry: dict, stamp: str) -> None:
        reason = f"lease expired after {entry.get('attempts')} receives (maximum {self.retry.max_receives})"
        try:
            self._to_dlq_update(entry["id"], reason, stamp, condition="invisible_sk = :seen",
                                values={":seen": entry["invisible_sk"]})
        except errors.Conflict:
            pass  # someone else moved it first

    def dequeue(self, queue: str = DEFAULT_QUEUE) -> Shipment | None:
        """Take the head of the queue and remove it at once (at-most-once: if the caller
        then fails, the shipment is not retried). Prefer receive + complete."""
        moment = self.clock()
        ready = self.db.call(
            "query", TableName=self.table, IndexName="ready", Limit=self.candidate_limit,
            KeyConditionExpression="ready_q = :q", ExpressionAttributeValues={":q": {"S": queue}},
        ).get("Items", [])
        for raw in ready:
            entry = unmarshal(raw)
            lease = self._claim(entry["id"], "ready_sk", entry["ready_sk"], moment, 0, final=True)
            if lease:
                return lease.shipment
        return None

    def heartbeat(self, shipment_id: str, receipt: str, *, extend_seconds: float = 30.0) -> Receipt:
        """Push the lease's deadline out while the work goes on."""
        moment = self.clock()
        deadline = moment + timedelta(seconds=extend_seconds)
        shipment = self._with_receipt(
            shipment_id, receipt, "heartbeat",
            "SET visible_at = :deadline, invisible_sk = :isk, updated_at = :now",
            {":deadline": to_iso(deadline), ":isk": timed_sort_key(to_iso(deadline), shipment_id),
             ":now": to_iso(moment)},
        )
        return Receipt(shipment, receipt, deadline)

    def release(self, shipment_id: str, receipt: str) -> Shipment:
        """Give a held shipment back untouched (a worker shutting down): it returns to its
        place in the queue at once, and the receive does not count as a failure."""
        for attempt in range(5):
            current = self.get(shipment_id)
            self._check_receipt(current, receipt, "release")
            position = current.enqueued_at or to_iso(self.clock())
            try:
                # Conditioned on the version too: the sort key is built from the priority read.
                return self._with_receipt(
                    shipment_id, receipt, "release",
                    "SET #st = :ready, ready_q = #queue, ready_sk = :rsk, updated_at = :now "
                    "REMOVE receipt, visible_at, invisible_q, invisible_sk",
                    {":ready": ShipmentStatus.READY_TO_SHIP, ":now": to_iso(self.clock()), ":v": current.version,
                     ":rsk": ready_sort_key(current.priority, position, shipment_id)},
                    names={"#queue": "queue"}, extra_condition="version = :v",
                )
            except ReceiptInvalid as exc:
                # Still ours but changed since we read it (a supervisor set its priority): read again.
                if attempt == 4 or not exc.current or _receipt_problem(exc.current, receipt):
                    raise
        raise AssertionError("unreachable")

    def complete(self, shipment_id: str, receipt: str) -> Shipment:
        """Done: the shipment leaves the queue and stays in the table."""
        done = self._with_receipt(
            shipment_id, receipt, "complete",
            "SET #st = :completed, completed_at = :now, updated_at = :now "
            "REMOVE receipt, visible_at, invisible_q, invisible_sk",
            {":completed": ShipmentStatus.COMPLETED, ":now": to_iso(self.clock())},
        )
        counters.note(self.db, done.queue, "completed")
        return done

    def fail(self, shipment_id: str, receipt: str, reason: str) -> Shipment:
        """Processing failed: retry after an exponential backoff, or after the maximum
        number of receives, to the DLQ with the reason."""
        current = self.get(shipment_id)
        self._check_receipt(current, receipt, "fail")
        moment = self.clock()
        stamp = to_iso(moment)
        entry = [{"at": stamp, "reason": (reason or "unspecified")[:500], "receive": current.receive_count}]
        if current.attempts >= self.retry.max_receives:
            dlq_reason = f"failed {current.attempts} times (maximum {self.retry.max_receives}): {reason}"
            return self._to_dlq_update(
                shipment_id, dlq_reason, stamp,
                condition="#st = :processing AND receipt = :receipt",
                values={":processing": ShipmentStatus.PROCESSING, ":receipt": receipt}, failure=entry,
                receipt_check=(receipt, "fail"),
            )
        visible = to_iso(moment + timedelta(seconds=self.retry.delay_after(current.attempts)))
        reasons = (current.failure_reasons + entry)[-MAX_FAILURE_REASONS:]
        return self._with_receipt(
            shipment_id, receipt, "fail",
            "SET #st = :ready, visible_at = :visible, invisible_sk = :isk, failure_reasons = :reasons, "
            "updated_at = :now REMOVE receipt",
            {":ready": ShipmentStatus.READY_TO_SHIP, ":visible": visible,
             ":isk": timed_sort_key(visible, shipment_id), ":reasons": reasons, ":now": stamp},
        )

    def _check_receipt(self, shipment: Shipment, receipt: str, action: str) -> None:
        problem = _receipt_problem(shipment_to_item(shipment), receipt)
        if problem:
            raise ReceiptInvalid(f"Cannot {action} shipment {shipment.shipment_id}: {problem}")

    def _with_receipt(self, shipment_id: str, receipt: str, action: str, update: str, values: dict,
                      names: dict | None = None, extra_condition: str | None = None) -> Shipment:
        try:
            return self._update(
                shipment_id, update + " ADD version :one",
                "#st = :processing AND receipt = :receipt" + (f" AND {extra_condition}" if extra_condition else ""),
                {**values, ":one": 1, ":processing": ShipmentStatus.PROCESSING, ":receipt": receipt}, names,
            )
        except errors.Conflict as exc:
            problem = _receipt_problem(exc.current, receipt) or "it changed meanwhile"
            raise ReceiptInvalid(f"Cannot {action} shipment {shipment_id}: {problem}",
                                 current=exc.current) from exc

    def _update(self, shipment_id: str, update: str, condition: str, values: dict,
                names: dict | None = None) -> Shipment:
        """One conditional UpdateItem returning the new shipment. A failed condition raises
        Conflict carrying the item as it was, or NotFound when there is no such item."""
        params = {}
        used = _used_names({"#st": "status", **(names or {})}, update, condition)
        if used:  # DynamoDB refuses an empty map as well as unused names
            params["ExpressionAttributeNames"] = used
        try:
            response = self.db.call(
                "update_item", TableName=self.table, Key=marshal({"id": shipment_id}),
                UpdateExpression=update, ConditionExpression=condition,
                ExpressionAttributeValues=marshal(values),
                ReturnValues="ALL_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD", **params,
            )
        except errors.Conflict as exc:
            if not exc.current:
                raise errors.NotFound(f"No shipment with id {shipment_id!r}.") from exc
            raise
        return shipment_from_item(unmarshal(response["Attributes"]))

    # --- supervisor actions ---------------------------------------------------------------

    def remove(self, shipment_id: str, *, expected_version: int | None = None) -> Shipment:
        """Take the shipment off the queue (waiting, delayed or in flight); it stays in the
        table as ready to ship, and a consumer holding it can no longer complete it."""
        return self._change(
            shipment_id, "remove",
            "SET #st = :ready, removed_at = :now REMOVE ready_q, ready_sk, invisible_q, invisible_sk, "
            "visible_at, receipt",
            {":ready": ShipmentStatus.READY_TO_SHIP, ":now": to_iso(self.clock())},
            allowed="attribute_exists(ready_q) OR attribute_exists(invisible_q)",
            expected_version=expected_version,
        )

    def restore(self, shipment_id: str, *, expected_version: int | None = None) -> Shipment:
        """Back to the queue from the DLQ or from processing, keeping its history (first
        enqueue time, receive count, failure reasons)."""
        current = self.get(shipment_id)
        stamp = to_iso(self.clock())
        return self._change(
            shipment_id, "restore",
            "SET #st = :ready, enqueued_at = :now, ready_q = #queue, ready_sk = :rsk, restored_at = :now, "
            "attempts = :zero REMOVE dlq_q, dlq_sk, invisible_q, invisible_sk, visible_at, receipt "
            "ADD restored_count :one",
            {":ready": ShipmentStatus.READY_TO_SHIP, ":now": stamp, ":zero": 0,
             ":rsk": ready_sort_key(current.priority, stamp, shipment_id)},
            allowed="#st IN (:dlq, :processing)",
            allowed_values={":dlq": ShipmentStatus.IN_DLQ, ":processing": ShipmentStatus.PROCESSING},
            expected_version=expected_version if expected_version is not None else current.version,
            names={"#queue": "queue"},
        )

    def touch(self, shipment_id: str, *, expected_version: int | None = None) -> Shipment:
        """Send a queued shipment to the back of its priority level."""
        current = self.get(shipment_id)
        stamp = to_iso(self.clock())
        return self._change(
            shipment_id, "touch", "SET enqueued_at = :now, ready_sk = :rsk",
            {":now": stamp, ":rsk": ready_sort_key(current.priority, stamp, shipment_id)},
            allowed="attribute_exists(ready_q)",
            expected_version=expected_version if expected_version is not None else current.version,
        )

    def set_priority(self, shipment_id: str, priority: int, *, expected_version: int | None = None) -> Shipment:
        """Change the priority (0-9, higher first); a queued shipment moves at once and keeps
        its time within the new level."""
        _check_priority(priority)
        current = self.get(shipment_id)
        if current.state in (ShipmentState.COMPLETED,):
            raise InvalidTransition(f"Shipment {shipment_id} is completed; its priority no longer matters.")
        values: dict = {":priority": priority}
        update = "SET priority = :priority"
        allowed = "attribute_not_exists(ready_q)"
        if current.ready_sk:
            update += ", ready_sk = :rsk"
            values[":rsk"] = ready_sort_key(priority, current.enqueued_at or to_iso(self.clock()), shipment_id)
            allowed = "ready_sk = :seen_rsk"
            values[":seen_rsk"] = current.ready_sk
        return self._change(
            shipment_id, "set priority", update, values, allowed=allowed,
            expected_version=expected_version if expected_version is not None else current.version,
        )

    def send_to_dlq(self, shipment_id: str, reason: str, *, expected_version: int | None = None) -> Shipment:
        """Take a shipment that is queued, delayed, in flight or ready to the DLQ."""
        current = self.get(shipment_id)
        if current.state not in (ShipmentState.QUEUED, ShipmentState.DELAYED, ShipmentState.PROCESSING,
                                 ShipmentState.READY):
            raise InvalidTransition(f"Shipment {shipment_id} is {current.state.replace('_', ' ')}; "
                                    "only queued, delayed, in-flight or ready shipments go to the DLQ.")
        version = expected_version if expected_version is not None else current.version
        return self._to_dlq_update(shipment_id, reason or "sent by a supervisor", to_iso(self.clock()),
                                   condition="version = :v", values={":v": version},
                                   conflict_version=version)

    def _to_dlq_update(self, shipment_id: str, reason: str, stamp: str, *, condition: str, values: dict,
                       failure: list[dict] | None = None, receipt_check: tuple[str, str] | None = None,
                       conflict_version: int | None = None) -> Shipment:
        sets = ("#st = :dlq, dlq_at = :now, dlq_reason = :reason, dlq_q = #queue, dlq_sk = :dsk, "
                "updated_at = :now")
        all_values = {**values, ":dlq": ShipmentStatus.IN_DLQ, ":now": stamp, ":reason": reason[:500],
                      ":dsk": timed_sort_key(stamp, shipment_id), ":one": 1}
        if failure:
            sets += ", failure_reasons = list_append(if_not_exists(failure_reasons, :empty), :failure)"
            all_values.update({":empty": [], ":failure": failure})
        try:
            return self._update(
                shipment_id,
                f"SET {sets} REMOVE ready_q, ready_sk, invisible_q, invisible_sk, visible_at, receipt ADD version :one",
                condition, all_values, {"#queue": "queue"},
            )
        except errors.Conflict as exc:
            if receipt_check:
                problem = _receipt_problem(exc.current, receipt_check[0]) or "it changed meanwhile"
                raise ReceiptInvalid(f"Cannot {receipt_check[1]} shipment {shipment_id}: {problem}",
                                     current=exc.current) from exc
            raise _stale(shipment_id, "send to the DLQ", exc.current, conflict_version) from exc

    def restore_many(self, shipment_ids: Iterable[str], *, rate_per_second: float | None = None,
                     on_progress: Callable[[int, int], None] | None = None) -> RestoreReport:
        """Restore each shipment from the DLQ, at most `rate_per_second` a second."""
        report = RestoreReport()
        ids = list(shipment_ids)
        interval = 1.0 / rate_per_second if rate_per_second else 0.0
        next_at = time.monotonic()
        for index, shipment_id in enumerate(ids, 1):
            if interval:
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                next_at = max(next_at, time.monotonic()) + interval
            try:
                shipment = self.get(shipment_id)
                if shipment.status != ShipmentStatus.IN_DLQ:
                    report.skipped.append((shipment_id, f"not in the DLQ ({shipment.state.replace('_', ' ')})"))
                else:
                    self.restore(shipment_id, expected_version=shipment.version)
                    report.restored.append(shipment_id)
            except errors.DynamoError as exc:
                if isinstance(exc, (errors.Unavailable, errors.Throttled)):
                    raise
                report.skipped.append((shipment_id, exc.message))
            if on_progress:
                on_progress(index, len(ids))
        return report

    def dlq_matching(self, queue: str = DEFAULT_QUEUE, *, reason_contains: str | None = None,
                     older_than_seconds: float | None = None, newer_than_seconds: float | None = None,
                     limit: int = 1000) -> list[Shipment]:
        """DLQ shipments whose reason contains a text and whose time in the DLQ is within
        bounds, read a page at a time (up to `limit`)."""
        moment = self.clock()
        found: list[Shipment] = []
        cursor = None
        while len(found) < limit:
            page = self.list_dlq(queue, cursor=cursor, limit=100)
            for shipment in page.items:
                age = (moment - from_iso(shipment.dlq_at)).total_seconds() if shipment.dlq_at else 0
                if reason_contains and reason_contains.lower() not in (shipment.dlq_reason or "").lower():
                    continue
                if older_than_seconds is not None and age < older_than_seconds:
                    continue
                if newer_than_seconds is not None and age > newer_than_seconds:
                    continue
                found.append(shipment)
            cursor = page.next_cursor
            if not cursor:
                break
        return found[:limit]

    # --- shared update with condition and a clear conflict ------------------------------

    def _change(self, shipment_id: str, action: str, update: str, values: dict, *, allowed: str,
                allowed_values: dict | None = None, expected_version: int | None = None,
                names: dict | None = None) -> Shipment:
        condition = f"({allowed})"
        all_values = {**values, **(allowed_values or {}), ":one": 1, ":now": values.get(":now") or to_iso(self.clock())}
        if expected_version is not None:
            condition += " AND version = :v"
            all_values[":v"] = expected_version
        update = update if "updated_at" in update else update.replace("SET ", "SET updated_at = :now, ", 1)
        try:
            return self._update(shipment_id, _add_version(update), "attribute_exists(id) AND " + condition,
                                all_values, names)
        except errors.Conflict as exc:
            raise _stale(shipment_id, action, exc.current, expected_version) from exc


@dataclass
class RestoreReport:
    restored: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


_INDEX_KEYS = {
    "ready": ("ready_q", "ready_sk"),
    "invisible": ("invisible_q", "invisible_sk"),
    "dlq": ("dlq_q", "dlq_sk"),
}


def shipment_to_item(shipment: Shipment) -> dict:
    item = {
        "id": shipment.shipment_id, "type": "shipment", "data": shipment.data, "status": shipment.status,
        "version": shipment.version, "priority": shipment.priority, "queue": shipment.queue,
        "created_at": shipment.created_at, "updated_at": shipment.updated_at,
        "enqueued_at": shipment.enqueued_at, "first_enqueued_at": shipment.first_enqueued_at,
        "visible_at": shipment.visible_at, "receipt": shipment.receipt, "receive_count": shipment.receive_count,
        "attempts": shipment.attempts,
        "first_attempt_at": shipment.first_attempt_at, "last_attempt_at": shipment.last_attempt_at,
        "failure_reasons": shipment.failure_reasons, "lease_expirations": shipment.lease_expirations,
        "dlq_at": shipment.dlq_at, "dlq_reason": shipment.dlq_reason, "completed_at": shipment.completed_at,
        "restored_count": shipment.restored_count, "tenant": shipment.tenant, "trace_id": shipment.trace_id,
        "ready_sk": shipment.ready_sk, "invisible_sk": shipment.invisible_sk, "dlq_sk": shipment.dlq_sk,
    }
    for attr, index_pk in (("ready_sk", "ready_q"), ("invisible_sk", "invisible_q"), ("dlq_sk", "dlq_q")):
        if item[attr]:
            item[index_pk] = shipment.queue
    return item


def _add_version(update: str) -> str:
    """Every change bumps the version (an update expression may have one ADD clause)."""
    if " ADD " in update:
        return update.replace(" ADD ", " ADD version :one, ", 1)
    return update + " ADD version :one"


def _used_names(names: dict, *expressions: str) -> dict:
    """DynamoDB refuses placeholders an expression does not use."""
    text = " ".join(expressions)
    return {k: v for k, v in names.items() if k in text}


def _check_priority(priority) -> None:
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= keys.MAX_PRIORITY:
        raise errors.InvalidRequest(f"priority must be a whole number from 0 to {keys.MAX_PRIORITY}.")


def _state_of(item: dict) -> str:
    return shipment_from_item(item).state.replace("_", " ")


def _receipt_problem(item: dict, receipt: str) -> str | None:
    status = item.get("status")
    if status == ShipmentStatus.PROCESSING and item.get("receipt") == receipt:
        return None
    if status == ShipmentStatus.PROCESSING:
        return "your lease ran out and another consumer holds it now"
    if status == ShipmentStatus.COMPLETED:
        return "it is completed already"
    if status == ShipmentStatus.IN_DLQ:
        return "it was sent to the DLQ"
    return f"it is {_state_of(item)} now (your lease ran out or it was taken back)"


def _stale(shipment_id: str, action: str, current: dict, expected_version: int | None) -> errors.Conflict:
    state = _state_of(current)
    version = current.get("version")
    if expected_version is not None and version != expected_version:
        return errors.Conflict(
            f"Cannot {action} shipment {shipment_id}: it changed since you saw it "
            f"(version {expected_version} -> {version}, now {state}). Reload and try again.",
            current=current,
        )
    return InvalidTransition(f"Cannot {action} shipment {shipment_id}: it is {state}.", current=current)
