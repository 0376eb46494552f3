"""Audited changes of shipments: enqueue (through admission), touch, set the priority,
send to the DLQ, restore, remove, one at a time or on a selection."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from queues_app import event_names as named
from queues_app.admission import Admitted, ShipmentAdmission
from queues_app.ddb import errors
from queues_app.ddb.replay import Done
from queues_app.operations.base import Recorder
from queues_app.operations.bulk import (
    DONE_ALREADY,
    GONE,
    SHIPMENT_CHANGES,
    SHIPMENT_EFFECTS,
    SHIPMENT_STATES,
    BulkReport,
    Effect,
    Seen,
    each_seen,
)
from queues_app.shipments.queue import Shipment
from queues_app.shipments.records import DEFAULT_DLQ_REASON


class ShipmentOperations:
    """Audited changes of shipments."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder
        self.db, self.shipments, self.trace_id = recorder.db, recorder.shipments, recorder.trace_id

    def submit_shipment(self, data: dict, **options: Any) -> Admitted:
        """Enqueue through admission (`ShipmentAdmission.submit`'s options: queue, tenant,
        priority, delay_seconds, shipment_id, request_digest), recorded with the request's trace id."""
        admitted = ShipmentAdmission(self.db).submit(data, trace_id=self.trace_id, **options)
        queue = admitted.shipment.queue
        where = "the spillover queue (tenant over its rate)" if admitted.sidelined else f"the {queue} queue"
        delay_seconds = options.get("delay_seconds") or 0
        delay = f", visible in {delay_seconds:g} s" if delay_seconds else ""
        summary = f"enqueued in {where}{delay}"
        shipment = admitted.shipment
        self.recorder.record(named.SHIPMENT_ENQUEUED, "shipment", shipment.shipment_id, summary, None, shipment)
        return admitted

    def _shipment_change(
        self,
        action: str,
        shipment_id: str,
        summary: Callable[[Shipment], str],
        change: Callable[[], Done[Shipment]],
        before: Shipment | None = None,
    ) -> Done[Shipment]:
        before = before or self.shipments.get(shipment_id)
        with self.recorder.telling_what_changed("shipment", shipment_id):
            done = change()
        if not done.replayed:
            self.recorder.record(action, "shipment", shipment_id, summary(done.item), before, done.item)
        return done

    def touch(self, shipment_id: str, *, expected_version: int | None = None) -> Done[Shipment]:
        return self._shipment_change(
            named.SHIPMENT_TOUCHED,
            shipment_id,
            lambda s: "sent to the back of its priority",
            lambda: self.shipments.touch(shipment_id, expected_version=expected_version),
        )

    def set_priority(self, shipment_id: str, priority: int, *, expected_version: int | None = None) -> Done[Shipment]:
        return self._shipment_change(
            named.SHIPMENT_PRIORITY,
            shipment_id,
            lambda s: f"priority set to {s.priority}",
            lambda: self.shipments.set_priority(shipment_id, priority, expected_version=expected_version),
        )

    def send_to_dlq(self, shipment_id: str, reason: str, *, expected_version: int | None = None) -> Done[Shipment]:
        return self._shipment_change(
            named.SHIPMENT_DEAD_LETTERED,
            shipment_id,
            lambda s: f"sent to the DLQ: {reason}",
            lambda: self.shipments.send_to_dlq(shipment_id, reason, expected_version=expected_version),
        )

    def restore(
        self, shipment_id: str, *, expected_version: int | None = None, before: Shipment | None = None
    ) -> Done[Shipment]:
        return self._shipment_change(
            named.SHIPMENT_RESTORED,
            shipment_id,
            lambda s: "restored from the DLQ",
            lambda: self.shipments.restore(shipment_id, expected_version=expected_version),
            before,
        )

    def remove(self, shipment_id: str, *, expected_version: int | None = None) -> Done[Shipment]:
        return self._shipment_change(
            named.SHIPMENT_REMOVED,
            shipment_id,
            lambda s: "removed from the queue",
            lambda: self.shipments.remove(shipment_id, expected_version=expected_version),
        )

    def shipments_effect(self, action: str, selection: Iterable[Seen]) -> Effect:
        """What a bulk shipment action would do to each shipment, from the shipments now
        (one BatchGetItem per 100): those changed since they were shown are passed over."""
        if action not in SHIPMENT_EFFECTS:
            raise errors.InvalidRequest(f"Unknown shipment action {action!r}.")
        did, acts_on = SHIPMENT_EFFECTS[action]
        seen = each_seen(selection)
        found = {s.shipment_id: s for s in self.shipments.get_many(list(seen))}
        effect = Effect(did)
        for shipment_id, shown in seen.items():
            shipment = found.get(shipment_id)
            if shipment is None:
                effect.pass_over(shipment_id, GONE)
            elif shipment.version != shown.version:
                if shipment.change == SHIPMENT_CHANGES[action](shown.version):
                    effect.pass_over(shipment_id, DONE_ALREADY)
                else:
                    effect.changed_since(shipment_id, shipment_id, shipment.state.replace("_", " "))
            elif shipment.state in acts_on:
                effect.acting.append(shown)
            else:
                effect.pass_over(shipment_id, SHIPMENT_STATES[shipment.state])
        return effect

    def on_shipments(self, action: str, selection: Iterable[Seen], reason: str = "") -> BulkReport:
        """Restore, touch or send to the DLQ a selection, each shipment only as it was shown:
        the shipments it applies to as they are now, the others passed over with the reason."""
        do: dict[str, Callable[[Seen], object]] = {
            "restore": lambda seen: self.restore(seen.item_id, expected_version=seen.version),
            "touch": lambda seen: self.touch(seen.item_id, expected_version=seen.version),
            "dlq": lambda seen: self.send_to_dlq(
                seen.item_id, reason or DEFAULT_DLQ_REASON, expected_version=seen.version
            ),
        }
        return self.shipments_effect(action, selection).apply(do[action])

    def restore_many(self, selection: Iterable[Seen]) -> BulkReport:
        return self.on_shipments("restore", selection)

    def send_many_to_dlq(self, selection: Iterable[Seen], reason: str) -> BulkReport:
        return self.on_shipments("dlq", selection, reason)

    def touch_many(self, selection: Iterable[Seen]) -> BulkReport:
        return self.on_shipments("touch", selection)
