"""Shipments coming into the queue: created, marked ready, enqueued or submitted at once,
and stale work sidelined (docs/architecture.md, "Operating under backlog")."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import timedelta
from typing import Unpack

from queues_app.ddb import batch, errors, replay
from queues_app.ddb.clock import to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.tables import SHIPMENTS_READY
from queues_app.figures import counters
from queues_app.shipments.records import (
    DEFAULT_QUEUE,
    MAX_PRIORITY,
    SPILLOVER_QUEUE,
    InvalidTransition,
    Placing,
    Shipment,
    ShipmentStatus,
    check_priority,
    queued_shipment,
    ready_sort_key,
    shipment_to_item,
    timed_sort_key,
)
from queues_app.shipments.store import ShipmentStore


class Intake:
    """Shipments coming into the queue: created (under construction or ready), marked
    ready, enqueued, submitted at once; and stale work sidelined to the spillover queue."""

    def __init__(self, store: ShipmentStore):
        self.store = store

    def create(
        self,
        data: dict,
        *,
        shipment_id: str | None = None,
        priority: int = 0,
        ready: bool = False,
        tenant: str | None = None,
        queue: str = DEFAULT_QUEUE,
    ) -> Shipment:
        check_priority(priority)
        if not isinstance(data, dict):
            raise errors.InvalidRequest("Shipment data must be a map of fields.")
        stamp = to_iso(self.store.clock())
        shipment = Shipment(
            shipment_id=shipment_id or uuid.uuid4().hex[:16],
            data=data,
            status=ShipmentStatus.READY_TO_SHIP if ready else ShipmentStatus.UNDER_CONSTRUCTION,
            priority=priority,
            queue=queue,
            created_at=stamp,
            updated_at=stamp,
            tenant=tenant,
        )
        self._put_new(shipment)
        return shipment

    def submit(self, data: dict, *, request_digest: str | None = None, **placing: Unpack[Placing]) -> Shipment:
        """Create a shipment ready to ship and queued (visible after `delay_seconds`), in
        one PutItem: what the API's enqueue does."""
        shipment = queued_shipment(data, moment=self.store.clock(), **placing)
        shipment.request_digest = request_digest
        self._put_new(shipment)
        counters.note(self.store.db, shipment.queue, "enqueued")
        return shipment

    def put_new_action(self, shipment: Shipment) -> dict:
        """The Put of a new shipment, for a transaction that writes it with other items."""
        return {
            "Put": {
                "TableName": self.store.table_name,
                "Item": marshal(shipment_to_item(shipment)),
                "ConditionExpression": "attribute_not_exists(id)",
            }
        }

    def _put_new(self, shipment: Shipment) -> None:
        exists = f"A shipment with id {shipment.shipment_id!r} exists already."
        self.store.db.put_new(self.store.table_name, shipment_to_item(shipment), key="id", exists=exists)

    def create_many(self, shipments: Iterable[Shipment], on_batch=None) -> int:
        return batch.put_items(
            self.store.db, self.store.table_name, (shipment_to_item(s) for s in shipments), on_batch=on_batch
        )

    def mark_ready(self, shipment_id: str, *, expected_version: int | None = None) -> Shipment:
        """Under construction -> ready to ship (not yet queued)."""
        return self.store.change(
            shipment_id,
            "mark ready",
            "SET #st = :ready",
            {":ready": ShipmentStatus.READY_TO_SHIP},
            allowed="#st = :uc",
            allowed_values={":uc": ShipmentStatus.UNDER_CONSTRUCTION},
            expected_version=expected_version,
        ).item

    def enqueue(self, shipment_id: str, *, expected_version: int | None = None, delay_seconds: float = 0) -> Shipment:
        """Put a ready shipment in its queue (visible after `delay_seconds`)."""
        current = self.store.get(shipment_id)
        if current.status == ShipmentStatus.UNDER_CONSTRUCTION:
            raise InvalidTransition(f"Shipment {shipment_id} is under construction; mark it ready first.")
        moment = self.store.clock()
        stamp = to_iso(moment)
        values = {":now": stamp}
        if delay_seconds and delay_seconds > 0:
            visible = to_iso(moment + timedelta(seconds=delay_seconds))
            update = (
                "SET enqueued_at = :now, first_enqueued_at = if_not_exists(first_enqueued_at, :now), "
                "visible_at = :visible, invisible_q = #queue, invisible_sk = :isk"
            )
            values.update({":visible": visible, ":isk": timed_sort_key(visible, shipment_id)})
        else:
            update = (
                "SET enqueued_at = :now, first_enqueued_at = if_not_exists(first_enqueued_at, :now), "
                "ready_q = #queue, ready_sk = :rsk"
            )
            values[":rsk"] = ready_sort_key(current.priority, stamp, shipment_id)
        queued = self.store.change(
            shipment_id,
            "enqueue",
            update,
            values,
            allowed="#st = :ready AND attribute_not_exists(ready_q) AND attribute_not_exists(invisible_q)",
            allowed_values={":ready": ShipmentStatus.READY_TO_SHIP},
            expected_version=expected_version if expected_version is not None else current.version,
            names={"#queue": "queue"},
        )
        if not queued.replayed:
            counters.note(self.store.db, queued.item.queue, "enqueued")
        return queued.item

    def sideline_stale(
        self, older_than_seconds: float, *, source: str = DEFAULT_QUEUE, target: str = SPILLOVER_QUEUE, limit: int = 100
    ) -> list[str]:
        """Move queued shipments that have waited longer than `older_than_seconds` from
        `source` to `target`, so fresh work is served first after a backlog. One Query
        per priority level reads exactly the stale ones (the sort key starts with the
        level, then the enqueue time); each move is conditioned on the entry as read."""
        cutoff = to_iso(self.store.clock() - timedelta(seconds=older_than_seconds))
        moved: list[str] = []
        for level in range(MAX_PRIORITY + 1):
            if len(moved) >= limit:
                break
            response = self.store.db.call(
                "query",
                TableName=self.store.table_name,
                IndexName=SHIPMENTS_READY.name,
                Limit=limit - len(moved),
                KeyConditionExpression="ready_q = :q AND ready_sk BETWEEN :lo AND :hi",
                ExpressionAttributeValues=marshal({":q": source, ":lo": f"{level}#", ":hi": f"{level}#{cutoff}"}),
            )
            for raw in response.get("Items", []):
                entry = unmarshal(raw)
                try:
                    self.store.db.call(
                        "update_item",
                        TableName=self.store.table_name,
                        Key=marshal({"id": entry["id"]}),
                        UpdateExpression="SET #queue = :target, ready_q = :target, updated_at = :now, "
                        "change = :change ADD version :one",
                        ConditionExpression="ready_q = :source AND ready_sk = :seen",
                        ExpressionAttributeNames={"#queue": "queue"},
                        ExpressionAttributeValues=marshal(
                            {
                                ":target": target,
                                ":source": source,
                                ":one": 1,
                                ":seen": entry["ready_sk"],
                                ":now": to_iso(self.store.clock()),
                                ":change": replay.change_id("sideline", target),
                            }
                        ),
                    )
                    moved.append(entry["id"])
                except errors.Conflict:
                    continue  # taken or changed meanwhile
        if moved:
            counters.note(self.store.db, source, "sidelined", len(moved))
        return moved
