"""/api/shipments: enqueue a shipment (once per idempotency key) and read one; with its
inputs and outputs."""

from __future__ import annotations

import hashlib
from typing import Any, ClassVar

from django.http import HttpRequest, HttpResponse
from ninja import Header, Router, Schema, Status
from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from queues_app import inputs
from queues_app.api.common import api_operations, naming_key, note_change
from queues_app.api.openapi import CHANGES, READS, answers
from queues_app.api.parsing import MAX_DEPTH
from queues_app.api.schemas import IdempotencyKey, InputSchema, ItemId, as_stored_data, storable_problems
from queues_app.centre import keys
from queues_app.ddb.errors import Conflict, KeyReused, NotFound
from queues_app.ddb.replay import digest
from queues_app.serializers import shipment_to_json
from queues_app.shipments.consuming import MAX_FAILURE_REASONS
from queues_app.shipments.queue import SPILLOVER_QUEUE, Shipment, ShipmentQueue

router = Router()

MAX_DELAY_SECONDS = 900  # as SQS delay queues: at most 15 minutes


# --- inputs and outputs ------------------------------------------------------------------


class ShipmentIn(InputSchema):
    """A shipment to enqueue."""

    data: dict[str, Any] = Field(
        description="The shipment's fields: any JSON object that DynamoDB can store (numbers of at most 38 "
        "significant digits between 1E-130 and 9.99E+125 in magnitude, kept exactly as decimals, no NaN or "
        f"Infinity, no empty keys, nesting within the body's {MAX_DEPTH} levels). The answer shows the data "
        "as stored: numbers without trailing zeros.",
        examples=[{"to": "Porto", "parcels": 2}],
    )
    tenant: str | None = Field(
        None,
        pattern=inputs.SHORT_NAME_PATTERN,
        description="Who sends it (fair share per tenant): 1 to 64 letters, digits, `.`, `_` or `-`.",
    )
    queue: str | None = Field(
        None,
        pattern=inputs.SHORT_NAME_PATTERN,
        description="The queue to send it to: `live` (when left out) or a named queue (`GET /api/shipment-queues`).",
    )
    priority: int = Field(0, ge=0, le=keys.MAX_PRIORITY, strict=True, description="0 to 9; higher first.")
    delay_seconds: float = Field(
        0,
        ge=0,
        le=MAX_DELAY_SECONDS,
        strict=True,
        allow_inf_nan=False,
        description=f"Keep the shipment invisible this long (0 to {MAX_DELAY_SECONDS} seconds).",
    )

    PROBLEMS: ClassVar[dict[str, str]] = {
        "data": "required: an object with the shipment's fields",
        "tenant": inputs.SHORT_NAME_PROBLEM,
        "queue": inputs.SHORT_NAME_PROBLEM,
        "priority": f"must be a whole number from 0 to {keys.MAX_PRIORITY}",
        "delay_seconds": f"must be a number of seconds from 0 to {MAX_DELAY_SECONDS}",
    }

    @field_validator("data")
    @classmethod
    def _storable(cls, data: dict[str, Any]) -> dict[str, Any]:
        problems = storable_problems(data, "data")
        if problems:
            raise PydanticCustomError("unstorable", "{summary}", {"problems": problems, "summary": "; ".join(problems)})
        return as_stored_data(data)


class FailureOut(Schema):
    at: str | None = Field(description="When the attempt failed.")
    reason: str = Field(description="What the consumer said went wrong.")
    receive: int | None = Field(description="Which receive of the shipment it was (`receive_count` then).")


class ShipmentOut(Schema):
    shipment_id: str
    state: str = Field(description="under construction, ready, queued, delayed, processing, completed or in DLQ.")
    status: str
    queue: str = Field(description="`live`, `spillover` when sidelined, or the named queue it was sent to.")
    tenant: str | None
    priority: int
    data: dict[str, Any]
    enqueued_at: str | None
    visible_at: str | None
    attempts: int = Field(description="Receives since the last restore from the DLQ: these decide the DLQ.")
    receive_count: int = Field(description="Every receive, ever (failures and expired leases included).")
    failures: list[FailureOut] = Field(
        description=f"The last failures (at most {MAX_FAILURE_REASONS}), oldest first: when and why each attempt "
        "failed."
    )
    dlq_reason: str | None
    trace_id: str | None
    version: int = Field(description="Goes up with every change of the shipment.")


class ShipmentCreatedOut(ShipmentOut):
    sidelined: bool = Field(description="True when the tenant was over its rate and the shipment went to spillover.")


# --- operations ------------------------------------------------------------------------

SHIPMENT_KEY = Header(
    None,
    alias="Idempotency-Key",
    description="A unique key per shipment, the same when retrying. Scoped to the token's user.",
)


@router.post(
    "shipments",
    url_name="api-shipments",
    operation_id="createShipment",
    summary="Enqueue a shipment",
    **answers(
        {
            201: (
                ShipmentCreatedOut,
                "The new shipment, with the queue it went to (`live`, or `spillover` when its tenant is over "
                "its rate).",
                ("Location",),
            ),
            200: (
                ShipmentCreatedOut,
                "A retry with an `Idempotency-Key` seen before: the first request's shipment.",
                ("Location", "Idempotent-Replayed"),
            ),
        },
        *CHANGES,
        409,
        422,
        429,
    ),
)
def create_shipment(
    request: HttpRequest,
    payload: ShipmentIn,
    response: HttpResponse,
    idempotency_key: IdempotencyKey | None = SHIPMENT_KEY,
):
    """Enqueue a shipment: 201 with the queue it went to; 429 with `Retry-After` while the
    live queue is past its bound, or a tenant is over a named queue's rate. With an
    `Idempotency-Key` seen before, the first shipment again (200)."""
    key = idempotency_key
    shipment_id = "k" + hashlib.sha256(f"api:{request.user.pk}:{key}".encode()).hexdigest()[:23] if key else None
    body = digest(payload.model_dump(mode="json")) if key else None
    if shipment_id:
        existing = _keyed_shipment(shipment_id, body, key)
        if existing:
            return _shipment_answer(response, existing, existing.queue == SPILLOVER_QUEUE, status=200, key=key)
    try:
        admitted = api_operations(request).submit_shipment(
            payload.data,
            tenant=payload.tenant,
            **({"queue": payload.queue} if payload.queue else {}),
            priority=payload.priority,
            delay_seconds=payload.delay_seconds,
            shipment_id=shipment_id,
            request_digest=body,
        )
    except Conflict:
        if not shipment_id:
            raise
        existing = _keyed_shipment(shipment_id, body, key)  # a retry with the same key won the race
        if existing is None:
            raise
        return _shipment_answer(response, existing, existing.queue == SPILLOVER_QUEUE, status=200, key=key)
    shipment = admitted.shipment
    note_change(request, "shipment.enqueue", shipment.shipment_id, f"{shipment.state} in {shipment.queue}")
    return _shipment_answer(response, shipment, admitted.sidelined, status=201, key=key)


def _keyed_shipment(shipment_id: str, body: str | None, key: str | None) -> Shipment | None:
    """The shipment an idempotency key made, if any; a different body is refused (422)."""
    try:
        existing = ShipmentQueue().get(shipment_id)
    except NotFound:
        return None
    if body and existing.request_digest and existing.request_digest != body:
        with naming_key(key):
            raise KeyReused("This idempotency key was first sent with a different request (another body).")
    return existing


def _shipment_answer(response: HttpResponse, shipment, sidelined: bool, *, status: int, key: str | None) -> Status:
    response["Location"] = f"/api/shipments/{shipment.shipment_id}"
    if key:
        response["Idempotent-Replayed"] = "true" if status == 200 else "false"
    return Status(status, {**shipment_to_json(shipment), "sidelined": sidelined})


@router.get(
    "shipments/{shipment_id}",
    url_name="api-shipment",
    operation_id="getShipment",
    summary="Read a shipment",
    **answers({200: (ShipmentOut, "The shipment as it is now.", ())}, 400, 404, *READS),
)
def shipment_detail(request: HttpRequest, shipment_id: ItemId):
    """The shipment: its state, queue, data, attempts, receive count, the last failures
    (when and why) and the DLQ reason."""
    return shipment_to_json(ShipmentQueue().get(shipment_id))
