"""/api/shipment-queues: the named shipment queues (each its visibility timeout, retries,
backoff and tenant rate), read with what each holds now, created, changed from the version
read, and removed once empty; with their inputs and outputs."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Schema, Status
from pydantic import Field, StringConstraints

from queues_app import inputs
from queues_app.api.common import api_operations, note_change, replayed
from queues_app.api.openapi import ITEM_CHANGES, READS, answers
from queues_app.api.schemas import InputSchema, Version
from queues_app.ddb.client import default
from queues_app.shipments import named
from queues_app.shipments.named import NamedQueues, QueueSettings
from queues_app.shipments.queue import ShipmentQueue

router = Router()

QueueId = Annotated[str, StringConstraints(pattern=inputs.SHORT_NAME_PATTERN)]
QueryVersion = Annotated[int, Field(ge=inputs.VERSION_MIN, le=inputs.VERSION_MAX)]


class ShipmentQueueIn(InputSchema):
    """A shipment queue's settings. A setting left out takes the deployment's
    (SWITCHBOARD_SHIPMENT_RETRY; 30 s leases; no tenant rate but `live`'s)."""

    name: str | None = Field(None, description="As supervisors read it (the id when left out).", examples=["Returns"])
    visibility_timeout_seconds: int | None = Field(
        None,
        description=f"How long a receive holds a shipment (1 to {named.MAX_VISIBILITY_SECONDS:,} s).",
        examples=[120],
    )
    max_receives: int | None = Field(
        None, description=f"Receives before the DLQ (1 to {named.MAX_RECEIVES:,}).", examples=[3]
    )
    backoff_base_seconds: float | None = Field(
        None, description="The first retry's delay; each next one doubles, with jitter.", examples=[5]
    )
    backoff_max_seconds: float | None = Field(None, description="The longest delay between retries.", examples=[600])
    tenant_rate: float | None = Field(
        None,
        description="Shipments a second each tenant may send; more are refused (429 with Retry-After). Null: no limit.",
        examples=[2],
    )
    version: Version | None = Field(
        None, description="The queue's `version` as you last read it; leave out (or 0) to create it.", examples=[1]
    )

    PROBLEMS: ClassVar[dict[str, str]] = {"name": f"the queue's name, {inputs.NAME_PROBLEM}"}


class ShipmentQueueOut(Schema):
    queue_id: str
    name: str
    visibility_timeout_seconds: int
    max_receives: int
    backoff_base_seconds: float
    backoff_max_seconds: float
    tenant_rate: float | None
    version: int = Field(description="0 for `live` while it runs on the deployment's settings.")
    queued: int = Field(description="Shipments visible in the queue now (counted up to 10,000).")
    delayed: int = Field(description="Waiting for their delay or a retry's backoff.")
    in_flight: int = Field(description="Received, their lease running.")
    dlq: int = Field(description="In the queue's dead-letter queue.")


class ShipmentQueuesOut(Schema):
    queues: list[ShipmentQueueOut]


def queue_to_json(queue: QueueSettings) -> dict[str, Any]:
    counts = ShipmentQueue().counts(queue.queue_id)
    return {
        **queue.as_dict(),
        "queued": counts.queued,
        "delayed": counts.delayed,
        "in_flight": counts.in_flight,
        "dlq": counts.dlq,
    }


@router.get(
    "shipment-queues",
    url_name="api-shipment-queues",
    operation_id="listShipmentQueues",
    summary="The shipment queues",
    **answers({200: (ShipmentQueuesOut, "Every queue, by id, with what it holds now.", ())}, *READS),
)
def list_shipment_queues(request: HttpRequest):
    """Every shipment queue a shipment may be sent to (`live` always), with its settings
    and what it holds."""
    return {"queues": [queue_to_json(queue) for queue in NamedQueues(default()).all()]}


@router.get(
    "shipment-queues/{queue_id}",
    url_name="api-shipment-queue",
    operation_id="getShipmentQueue",
    summary="Read a shipment queue",
    **answers({200: (ShipmentQueueOut, "The queue and what it holds now.", ())}, 400, 404, *READS),
)
def shipment_queue_detail(request: HttpRequest, queue_id: QueueId):
    return queue_to_json(NamedQueues(default()).get(queue_id))


@router.put(
    "shipment-queues/{queue_id}",
    url_name="api-shipment-queue",
    operation_id="putShipmentQueue",
    summary="Create or change a shipment queue",
    **answers(
        {
            201: (ShipmentQueueOut, "The queue, created (version 1).", ("Location", "Idempotent-Replayed")),
            200: (
                ShipmentQueueOut,
                "The queue, changed: its new `version` (`Idempotent-Replayed: true`: this change was made already).",
                ("Location", "Idempotent-Replayed"),
            ),
        },
        *ITEM_CHANGES,
    ),
)
def put_shipment_queue(request: HttpRequest, queue_id: QueueId, payload: ShipmentQueueIn, response: HttpResponse):
    """Create the queue (no `version`) or change it from the `version` you read (409 from
    an older one). Every setting is checked (400 naming the field). `spillover` and
    `callbacks` are the system's own."""
    data = {"queue_id": queue_id, **payload.model_dump(exclude_unset=True)}
    if data.get("version") is None:
        data.pop("version", None)
    queue, outcome = api_operations(request).put_shipment_queue(data)
    note_change(request, "shipment_queue.put", queue.queue_id, f"{outcome}, version {queue.version}")
    response["Location"] = f"/api/shipment-queues/{queue.queue_id}"
    replayed(response, outcome == "replayed")
    return Status(201 if outcome == "created" else 200, queue_to_json(queue))


QUEUE_VERSION = Query(..., description="The queue's `version` as you last read it.")


@router.delete(
    "shipment-queues/{queue_id}",
    url_name="api-shipment-queue",
    operation_id="deleteShipmentQueue",
    summary="Remove a shipment queue",
    **answers({200: (ShipmentQueueOut, "The queue as it was.", ())}, *ITEM_CHANGES),
)
def delete_shipment_queue(request: HttpRequest, queue_id: QueueId, version: QueryVersion = QUEUE_VERSION):
    """Remove the queue, from the version you read, once it holds no shipment (409
    otherwise). `live`'s settings removed, it goes back to the deployment's."""
    queue = api_operations(request).delete_shipment_queue(queue_id, version)
    note_change(request, "shipment_queue.delete", queue_id, "removed")
    return queue_to_json(queue)
