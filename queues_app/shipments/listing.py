"""Looking at shipments without changing them: the lists the pages show (queued, in
flight, delayed, the DLQ), a page at a time from the sparse indexes, and the depths
from COUNT queries, each bounded however large the backlog."""

from __future__ import annotations

from typing import Any

from queues_app.ddb.codec import unmarshal
from queues_app.ddb.paging import Page, decode_cursor, encode_cursor
from queues_app.shipments.records import (
    DEFAULT_QUEUE,
    INDEX_KEYS,
    MAX_PRIORITY,
    Counts,
    Shipment,
    ShipmentStatus,
)
from queues_app.shipments.store import ShipmentStore


class Listing(ShipmentStore):
    def list_queue(self, queue: str = DEFAULT_QUEUE, *, cursor: str | None = None, limit: int = 25) -> Page[Shipment]:
        """Queued shipments in the order receive takes them: priority, then time."""
        ids, next_cursor = self._index_page("ready", queue, cursor=cursor, limit=limit)
        return Page(self.get_many(ids), next_cursor)

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
        return Page(self.get_many(ids), next_cursor)

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
        return Page(self.get_many(ids), next_cursor)

    def _index_page(
        self, index: str, queue: str, *, cursor: str | None, limit: int, forward: bool = True, extra: dict | None = None
    ) -> tuple[list[str], str | None]:
        """One page of an index (a single Limit-bounded Query): the ids and the next cursor."""
        pk, _sk = INDEX_KEYS[index]
        params: dict[str, Any] = {
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
        purpose = f"shipments:{index}:{queue}"  # a cursor serves the list it came from
        start = decode_cursor(cursor, purpose=purpose)
        if start:
            params["ExclusiveStartKey"] = start
        response = self.db.call("query", **params)
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
            "TableName": self.table,
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
        response = self.db.call("query", **params)
        return response["Count"], bool(response.get("LastEvaluatedKey"))

    def oldest_queued_at(self, queue: str = DEFAULT_QUEUE) -> str | None:
        """The earliest first-enqueue time among queued shipments: one Limit-1 query per
        priority level that has any (at most ten), since the index sorts by priority first."""
        oldest = None
        for level in range(MAX_PRIORITY + 1):
            response = self.db.call(
                "query",
                TableName=self.table,
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
