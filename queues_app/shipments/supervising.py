"""What supervisors do to shipments: touch, set the priority, remove, send to the DLQ
and restore from it (one at a time, by filter, or at a limited rate). Every change is
conditioned on the state it expects and, when the caller passes one, on the version."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from queues_app.ddb import errors, replay
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.codec import unmarshal
from queues_app.ddb.replay import Done
from queues_app.ddb.tables import SHIPMENTS_DLQ
from queues_app.shipments.records import (
    DEFAULT_QUEUE,
    InvalidTransition,
    RestoreReport,
    Shipment,
    ShipmentState,
    ShipmentStatus,
    check_priority,
    ready_sort_key,
)
from queues_app.shipments.store import ShipmentStore

DLQ_PAGE_SIZE = 100  # entries read from the DLQ index per request when filtering it


class Supervising:
    def __init__(self, store: ShipmentStore):
        self.store = store

    def remove(self, shipment_id: str, *, expected_version: int | None = None) -> Done[Shipment]:
        """Take the shipment off the queue (waiting, delayed or in flight); it stays in the
        table as ready to ship, and a consumer holding it can no longer complete it."""
        return self.store.change(
            shipment_id,
            "remove",
            "SET #st = :ready, removed_at = :now REMOVE ready_q, ready_sk, invisible_q, invisible_sk, "
            "visible_at, receipt",
            {":ready": ShipmentStatus.READY_TO_SHIP, ":now": to_iso(self.store.clock())},
            allowed="attribute_exists(ready_q) OR attribute_exists(invisible_q)",
            expected_version=expected_version,
        )

    def restore(self, shipment_id: str, *, expected_version: int | None = None) -> Done[Shipment]:
        """Back to the queue from the DLQ or from processing, keeping its history (first
        enqueue time, receive count, failure reasons)."""
        current = self.store.get(shipment_id)
        stamp = to_iso(self.store.clock())
        return self.store.change(
            shipment_id,
            "restore",
            "SET #st = :ready, enqueued_at = :now, ready_q = #queue, ready_sk = :rsk, restored_at = :now, "
            "attempts = :zero REMOVE dlq_q, dlq_sk, invisible_q, invisible_sk, visible_at, receipt "
            "ADD restored_count :one",
            {
                ":ready": ShipmentStatus.READY_TO_SHIP,
                ":now": stamp,
                ":zero": 0,
                ":rsk": ready_sort_key(current.priority, stamp, shipment_id),
            },
            allowed="#st IN (:dlq, :processing)",
            allowed_values={":dlq": ShipmentStatus.IN_DLQ, ":processing": ShipmentStatus.PROCESSING},
            expected_version=expected_version if expected_version is not None else current.version,
            names={"#queue": "queue"},
        )

    def touch(self, shipment_id: str, *, expected_version: int | None = None) -> Done[Shipment]:
        """Send a queued shipment to the back of its priority level."""
        current = self.store.get(shipment_id)
        stamp = to_iso(self.store.clock())
        return self.store.change(
            shipment_id,
            "touch",
            "SET enqueued_at = :now, ready_sk = :rsk",
            {":now": stamp, ":rsk": ready_sort_key(current.priority, stamp, shipment_id)},
            allowed="attribute_exists(ready_q)",
            expected_version=expected_version if expected_version is not None else current.version,
        )

    def set_priority(self, shipment_id: str, priority: int, *, expected_version: int | None = None) -> Done[Shipment]:
        """Change the priority (0-9, higher first); a queued shipment moves at once and keeps
        its time within the new level."""
        check_priority(priority)
        current = self.store.get(shipment_id)
        if expected_version is not None and current.version != expected_version:
            return self.store.done_or_stale(current, "set priority", expected_version, priority)
        if current.state in (ShipmentState.COMPLETED,):
            raise InvalidTransition(f"Shipment {shipment_id} is completed; its priority no longer matters.")
        values: dict = {":priority": priority}
        update = "SET priority = :priority"
        allowed = "attribute_not_exists(ready_q)"
        if current.ready_sk:
            update += ", ready_sk = :rsk"
            values[":rsk"] = ready_sort_key(priority, current.enqueued_at or to_iso(self.store.clock()), shipment_id)
            allowed = "ready_sk = :seen_rsk"
            values[":seen_rsk"] = current.ready_sk
        return self.store.change(
            shipment_id,
            "set priority",
            update,
            values,
            allowed=allowed,
            expected_version=expected_version if expected_version is not None else current.version,
            named=(priority,),
        )

    def send_to_dlq(self, shipment_id: str, reason: str, *, expected_version: int | None = None) -> Done[Shipment]:
        """Take a shipment that is queued, delayed, in flight or ready to the DLQ."""
        current = self.store.get(shipment_id)
        version = expected_version if expected_version is not None else current.version
        if current.version != version:
            return self.store.done_or_stale(current, "send to the DLQ", version)
        if current.state not in (
            ShipmentState.QUEUED,
            ShipmentState.DELAYED,
            ShipmentState.PROCESSING,
            ShipmentState.READY,
        ):
            raise InvalidTransition(
                f"Shipment {shipment_id} is {current.state.replace('_', ' ')}; "
                "only queued, delayed, in-flight or ready shipments go to the DLQ."
            )
        return self.store.to_dlq_update(
            shipment_id,
            reason or "sent by a supervisor",
            to_iso(self.store.clock()),
            condition="version = :v",
            values={":v": version},
            conflict_version=version,
            change=replay.change_id("send-to-the-DLQ", version),
        )

    def restore_many(
        self,
        shipment_ids: Iterable[str],
        *,
        rate_per_second: float | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> RestoreReport:
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
                shipment = self.store.get(shipment_id)
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

    def dlq_matching(
        self,
        queue: str = DEFAULT_QUEUE,
        *,
        reason_contains: str | None = None,
        older_than_seconds: float | None = None,
        newer_than_seconds: float | None = None,
        limit: int = 1000,
    ) -> list[Shipment]:
        """DLQ shipments whose reason contains a text and whose time in the DLQ is within
        bounds, oldest first, read a page at a time (up to `limit`)."""
        moment = self.store.clock()
        found: list[Shipment] = []
        if limit <= 0:
            return found
        pages = self.store.db.pages(
            "query",
            TableName=self.store.table_name,
            IndexName=SHIPMENTS_DLQ.name,
            KeyConditionExpression="dlq_q = :q",
            ExpressionAttributeValues={":q": {"S": queue}},
            PaginationConfig={"PageSize": DLQ_PAGE_SIZE},
        )
        for page in pages:
            for shipment in self.store.get_many([unmarshal(raw)["id"] for raw in page.get("Items", [])]):
                dlq_at = from_iso(shipment.dlq_at)
                age = (moment - dlq_at).total_seconds() if dlq_at else 0
                if reason_contains and reason_contains.lower() not in (shipment.dlq_reason or "").lower():
                    continue
                if older_than_seconds is not None and age < older_than_seconds:
                    continue
                if newer_than_seconds is not None and age > newer_than_seconds:
                    continue
                found.append(shipment)
            if len(found) >= limit:
                break  # enough: no further page is read
        return found[:limit]
