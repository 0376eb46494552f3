"""Audited changes of the named shipment queues' settings: created, changed, removed."""

from __future__ import annotations

from collections.abc import Mapping

from queues_app import event_names as named
from queues_app.operations.base import Recorder
from queues_app.shipments.named import NamedQueues, QueueSettings


class ShipmentQueueOperations:
    """Audited changes of shipment queues, each from the version it was decided on."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder
        self.queues = NamedQueues(recorder.db)

    def put_shipment_queue(self, data: Mapping[str, object]) -> tuple[QueueSettings, str]:
        """Create the queue (no version, or 0) or change it from `version`: (the settings as
        stored, and `created`, `changed` or `replayed`)."""
        queue_id = str(data.get("queue_id", ""))
        with self.recorder.telling_what_changed("shipment-queue", queue_id):
            before = next((queue for queue in self.queues.configured() if queue.queue_id == queue_id), None)
            queue = self.queues.put(data)
        if before is not None and before.version == queue.version:
            return queue, "replayed"  # the same change sent again: made already, recorded then
        created = queue.version == 1
        action = named.SHIPMENT_QUEUE_CREATED if created else named.SHIPMENT_QUEUE_EDITED
        summary = f"queue {queue.name} created" if created else f"queue {queue.name} changed to version {queue.version}"
        self.recorder.record(
            action, "shipment-queue", queue_id, summary, before.as_dict() if before else None, queue.as_dict()
        )
        return queue, "created" if created else "changed"

    def delete_shipment_queue(self, queue_id: str, version: int) -> QueueSettings:
        """Remove a queue's settings, from the version read, once it holds no shipment."""
        counts = self.recorder.shipments.counts(queue_id)
        holding = counts.queued + counts.in_flight + counts.delayed + counts.dlq
        with self.recorder.telling_what_changed("shipment-queue", queue_id):
            queue = self.queues.delete(queue_id, version, holding=holding)
        summary = f"queue {queue.name} removed"
        self.recorder.record(named.SHIPMENT_QUEUE_REMOVED, "shipment-queue", queue_id, summary, queue.as_dict(), None)
        return queue
