"""Looking at shipments without changing them: the lists the pages show (queued, in
flight, delayed, the DLQ), a page at a time from the sparse indexes, and the depths
from COUNT queries, each bounded however large the backlog."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.codec import unmarshal
from queues_app.ddb.paging import Page, decode_cursor, encode_cursor
from queues_app.shipments.records import (
    DEFAULT_QUEUE,
    INDEX_KEYS,
    MAX_PRIORITY,
    Counts,
    Shipment,
    ShipmentState,
    ShipmentStatus,
)
from queues_app.shipments.store import ShipmentStore

FILTERED_READ = 100  # index entries a filtered list reads per Query (then one BatchGetItem of those)
# The index and, for the shared `invisible` one, the status of each list.
LIST_INDEX = {
    "queue": ("ready", None),
    "in_flight": ("invisible", ShipmentStatus.PROCESSING),
    "delayed": ("invisible", ShipmentStatus.READY_TO_SHIP),
    "dlq": ("dlq", None),
}


@dataclass(frozen=True)
class ShipmentFilter:
    """What a list is narrowed to; empty fields match everything."""

    id_prefix: str | None = None
    tenant: str | None = None
    priority: int | None = None
    older_than_minutes: float | None = None

    def __bool__(self) -> bool:
        return any(v not in (None, "") for v in (self.id_prefix, self.tenant, self.priority, self.older_than_minutes))

    def cutoff(self, moment: datetime) -> str | None:
        """The latest time a shipment may have to count as older than asked."""
        if self.older_than_minutes is None:
            return None
        return to_iso(moment - timedelta(minutes=self.older_than_minutes))

    def matches(self, shipment: Shipment, view: str, cutoff: str | None) -> bool:
        if self.id_prefix and not shipment.shipment_id.startswith(self.id_prefix):
            return False
        if self.tenant and shipment.tenant != self.tenant:
            return False
        if self.priority is not None and shipment.priority != self.priority:
            return False
        if cutoff:
            moment, latest = from_iso(age_of(shipment, view)), from_iso(cutoff)
            return moment is not None and latest is not None and moment <= latest
        return True


# The state a shipment is in while it shows in each list.
LIST_STATE = {
    "queue": ShipmentState.QUEUED,
    "in_flight": ShipmentState.PROCESSING,
    "delayed": ShipmentState.DELAYED,
    "dlq": ShipmentState.IN_DLQ,
}


def in_list(shipment: Shipment, view: str, queue: str) -> bool:
    return shipment.queue == queue and shipment.state == LIST_STATE.get(view)


def age_of(shipment: Shipment, view: str) -> str | None:
    """The moment a list's age filter measures from: queued since (its place in the
    queue), in the DLQ since, or first enqueued for what is in flight or delayed."""
    if view == "queue":
        return shipment.enqueued_at
    if view == "dlq":
        return shipment.dlq_at
    return shipment.first_enqueued_at or shipment.created_at


class Listing:
    def __init__(self, store: ShipmentStore):
        self.store = store

    def list_filtered(
        self,
        view: str,
        queue: str,
        filters: ShipmentFilter,
        *,
        cursor: str | None = None,
        limit: int = 25,
        max_reads: int = 4,
    ) -> Page[Shipment]:
        """A list narrowed by `filters`, in the list's own order.

        What each filter costs (every read is bounded: at most `max_reads` Queries of
        FILTERED_READ index entries, each followed by one BatchGetItem):
        - priority on the queue, and age on the queue with a priority: a key condition on
          `ready_sk` (priority, then time): only matching entries are read;
        - age on the DLQ: a key condition on `dlq_sk` (DLQ time first): the same;
        - id prefix: a FilterExpression on the index (ids are in every index): entries
          are read but only matches are fetched;
        - tenant, priority elsewhere, age elsewhere: tested on the fetched shipments
          (tenants and ages are not in the KEYS_ONLY indexes).
        A page ends at its last shipment, so nothing read past it is lost; a page not
        full after `max_reads` ends where the reading stopped."""
        index, _ = LIST_INDEX[view]
        pk, sk = INDEX_KEYS[index]
        cutoff = filters.cutoff(self.store.clock())
        params = self._filtered_query(view, queue, filters, cutoff)
        purpose = f"shipments:{index}:{queue}"  # the same keys as the list without filters
        start = decode_cursor(cursor, purpose=purpose)
        found: list[tuple[Shipment, dict]] = []
        for _ in range(max_reads):
            params["Limit"] = FILTERED_READ
            if start:
                params["ExclusiveStartKey"] = start
            response = self.store.db.call("query", **params)
            # The index key of each entry: where the next page starts if the page ends there.
            entries = {i["id"]["S"]: {k: i[k] for k in ("id", pk, sk)} for i in response.get("Items", [])}
            found += [
                (s, entries[s.shipment_id])
                for s in self.store.get_many(list(entries))
                if filters.matches(s, view, cutoff)
            ]
            start = response.get("LastEvaluatedKey")
            if not start or len(found) > limit:
                break
        if len(found) > limit:
            found, start = found[:limit], found[limit - 1][1]
        return Page([s for s, _ in found], encode_cursor(start, purpose=purpose))

    def _filtered_query(self, view: str, queue: str, filters: ShipmentFilter, cutoff: str | None) -> dict[str, Any]:
        """The Query of a filtered list's index: what the index's key narrows (a priority,
        an age on the DLQ), and what a filter expression does (the status, an id prefix)."""
        index, status = LIST_INDEX[view]
        pk, sk = INDEX_KEYS[index]
        names = {"#pk": pk}
        values: dict[str, Any] = {":q": {"S": queue}}
        key = "#pk = :q"
        if index == "ready" and filters.priority is not None:
            level = f"{MAX_PRIORITY - filters.priority}#"
            names["#sk"] = sk
            if cutoff:
                key += " AND #sk BETWEEN :lo AND :hi"
                values.update({":lo": {"S": level}, ":hi": {"S": level + cutoff}})
            else:
                key += " AND begins_with(#sk, :level)"
                values[":level"] = {"S": level}
        elif index == "dlq" and cutoff:
            names["#sk"] = sk
            key += " AND #sk < :cutoff"
            values[":cutoff"] = {"S": cutoff}
        conditions = []
        if status:
            conditions.append("#st = :status")
            names["#st"] = "status"
            values[":status"] = {"S": status}
        if filters.id_prefix:
            conditions.append("begins_with(id, :prefix)")
            values[":prefix"] = {"S": filters.id_prefix}
        params: dict[str, Any] = {
            "TableName": self.store.table_name,
            "IndexName": index,
            "KeyConditionExpression": key,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        if conditions:
            params["FilterExpression"] = " AND ".join(conditions)
        return params

    def list_queue(self, queue: str = DEFAULT_QUEUE, *, cursor: str | None = None, limit: int = 25) -> Page[Shipment]:
        """Queued shipments in the order receive takes them: priority, then time."""
        ids, next_cursor = self._index_page("ready", queue, cursor=cursor, limit=limit)
        return Page(self.store.get_many(ids), next_cursor)

    def list_in_flight(
        self, queue: str = DEFAULT_QUEUE, *, cursor: str | None = None, limit: int = 25
    ) -> Page[Shipment]:
        """Shipments being processed, by deadline (delayed ones are left out)."""
        return self._list_invisible(queue, ShipmentStatus.PROCESSING, cursor=cursor, limit=limit)

    def list_delayed(self, queue: str = DEFAULT_QUEUE, *, cursor: str | None = None, limit: int = 25) -> Page[Shipment]:
        """Queued shipments waiting out a delay or a backoff, by the time they become visible."""
        return self._list_invisible(queue, ShipmentStatus.READY_TO_SHIP, cursor=cursor, limit=limit)

    def list_dlq(self, queue: str = DEFAULT_QUEUE, *, cursor: str | None = None, limit: int = 25) -> Page[Shipment]:
        """The dead-letter queue, oldest first."""
        ids, next_cursor = self._index_page("dlq", queue, cursor=cursor, limit=limit)
        return Page(self.store.get_many(ids), next_cursor)

    def _list_invisible(self, queue: str, status: str, *, cursor: str | None, limit: int) -> Page[Shipment]:
        ids, next_cursor = self._index_page(
            "invisible",
            queue,
            cursor=cursor,
            limit=limit,
            extra={
                "filter": "#st = :status",
                "names": {"#st": "status"},
                "values": {":status": {"S": status}},
            },
        )
        return Page(self.store.get_many(ids), next_cursor)

    def _index_page(
        self, index: str, queue: str, *, cursor: str | None, limit: int, forward: bool = True, extra: dict | None = None
    ) -> tuple[list[str], str | None]:
        """One page of an index (a single Limit-bounded Query): the ids and the next cursor."""
        pk, _sk = INDEX_KEYS[index]
        params: dict[str, Any] = {
            "TableName": self.store.table_name,
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
        purpose = f"shipments:{index}:{queue}"  # a cursor serves the list it came from
        start = decode_cursor(cursor, purpose=purpose)
        if start:
            params["ExclusiveStartKey"] = start
        response = self.store.db.call("query", **params)
        ids = [unmarshal(i)["id"] for i in response.get("Items", [])]
        return ids, encode_cursor(response.get("LastEvaluatedKey"), purpose=purpose)

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
        pk, _ = INDEX_KEYS[index]
        params: dict[str, Any] = {
            "TableName": self.store.table_name,
            "IndexName": index,
            "Select": "COUNT",
            "Limit": cap,
            "KeyConditionExpression": "#pk = :q",
            "ExpressionAttributeNames": {"#pk": pk},
            "ExpressionAttributeValues": {":q": {"S": queue}},
        }
        if status:
            params["FilterExpression"] = "#st = :st"
            params["ExpressionAttributeNames"]["#st"] = "status"
            params["ExpressionAttributeValues"][":st"] = {"S": status}
        response = self.store.db.call("query", **params)
        return response["Count"], bool(response.get("LastEvaluatedKey"))

    def oldest_queued_at(self, queue: str = DEFAULT_QUEUE) -> str | None:
        """The earliest first-enqueue time among queued shipments: one Limit-1 query per
        priority level that has any (at most ten), since the index sorts by priority first."""
        oldest = None
        for level in range(MAX_PRIORITY + 1):
            response = self.store.db.call(
                "query",
                TableName=self.store.table_name,
                IndexName="ready",
                Limit=1,
                KeyConditionExpression="ready_q = :q AND begins_with(ready_sk, :p)",
                ExpressionAttributeValues={":q": {"S": queue}, ":p": {"S": f"{level}#"}},
            )
            for raw in response.get("Items", []):
                stamp = unmarshal(raw)["ready_sk"].split("#")[1]
                oldest = stamp if oldest is None or stamp < oldest else oldest
        return oldest


# The lists a page (or the admin) can show: view name -> (title, Listing method).
LISTS = {
    "queue": ("Queued", Listing.list_queue),
    "in_flight": ("In flight", Listing.list_in_flight),
    "delayed": ("Delayed", Listing.list_delayed),
    "dlq": ("Dead-letter queue", Listing.list_dlq),
}
