"""/api/callbacks: callbacks at a time the caller chose (calls/scheduled_callbacks.py),
scheduled, listed with the retries to come, moved and cancelled; with their inputs and
outputs."""

from __future__ import annotations

from typing import Annotated, ClassVar, cast

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Schema, Status
from pydantic import AwareDatetime, Field, field_validator

from queues_app import inputs
from queues_app.api.auth import current_token
from queues_app.api.common import api_operations, get_call_center, note_change
from queues_app.api.openapi import CHANGES, ITEM_CHANGES, READS, answers
from queues_app.api.schemas import CallOut, InputSchema, ItemId, LineId, Version, known_preferences
from queues_app.calls.queued_callbacks import E164, E164_RULE
from queues_app.calls.records import Call
from queues_app.lines.records import LINE_ID_RULE
from queues_app.serializers import call_to_json

router = Router()

QueryVersion = Annotated[int, Field(ge=inputs.VERSION_MIN, le=inputs.VERSION_MAX)]  # as a query string gives it
CALL_VERSION = Query(..., description="The call's `version` as you last read it.")


class ScheduledCallbackIn(InputSchema):
    """A caller to call back at a time they chose."""

    line: LineId = Field(description="The line the callback enters (`GET /api/lines`).", examples=["support"])
    preferences: dict[str, str] = Field(
        default_factory=dict,
        description="One value per skill dimension, or `any`, as when placing a call.",
        examples=[{"language": "French"}],
    )
    number: str = Field(pattern=E164.pattern, description="E.164: '+' then 8 to 15 digits.", examples=["+33612345678"])
    at: AwareDatetime = Field(
        description="When it enters the line, with its offset (ISO 8601), within a year.",
        examples=["2026-11-30T10:00:00-05:00"],
    )

    PROBLEMS: ClassVar[dict[str, str]] = {
        "line": f"must be a line's id: {LINE_ID_RULE}",
        "preferences": 'must be an object such as {"language": "French"}',
        "number": E164_RULE,
        "at": "must be a time with its offset, e.g. 2026-11-30T10:00:00-05:00",
    }
    NAMED_BY_KEY: ClassVar[tuple[str, ...]] = ("preferences",)

    preferences_known = field_validator("preferences")(known_preferences)


class MoveIn(InputSchema):
    at: AwareDatetime = Field(description="The new time, with its offset.", examples=["2026-11-30T11:00:00-05:00"])
    version: Version = Field(description="The call's `version` as you last read it.")

    PROBLEMS: ClassVar[dict[str, str]] = {"at": "must be a time with its offset, e.g. 2026-11-30T10:00:00-05:00"}


class UpcomingOut(Schema):
    callbacks: list[CallOut] = Field(
        description="Callbacks out of line until a time, soonest first: `callback_scheduled` and `callback_retry`."
    )


@router.post(
    "callbacks",
    url_name="api-scheduled-callbacks",
    operation_id="scheduleCallback",
    summary="Schedule a callback",
    **answers(
        {
            201: (CallOut, "The call, `callback_scheduled`: it enters its line at `callback.retry_at`.", ("Location",)),
            200: (
                CallOut,
                "This very callback was scheduled already: as it is now.",
                ("Location", "Idempotent-Replayed"),
            ),
        },
        *CHANGES,
        404,
        409,
    ),
)
def schedule_callback(request: HttpRequest, payload: ScheduledCallbackIn, response: HttpResponse):
    """The caller is called back on `number` at `at`: then they enter `line` with the line's
    `callback_priority`, as a queued callback. A number has one callback at a time on a
    line (and for CALLBACK_DUPLICATE_SECONDS after its time): another is refused (409)
    naming it."""
    token = current_token(request)
    call, created = api_operations(request).schedule_callback(
        payload.line,
        payload.preferences,
        payload.number,
        payload.at,
        callback=str(token.pk) if token.callback_url else None,
    )
    response["Location"] = f"/api/calls/{call.call_id}"
    if created:
        note_change(request, "call.callback_scheduled", call.call_id, call.arrived_at)
    else:
        response["Idempotent-Replayed"] = "true"
    return Status(201 if created else 200, call_to_json(call))


@router.get(
    "callbacks",
    url_name="api-scheduled-callbacks",
    operation_id="listCallbacks",
    summary="Callbacks to come",
    **answers({200: (UpcomingOut, "At most 100, soonest first.", ())}, *READS),
)
def upcoming_callbacks(request: HttpRequest):
    """The callbacks out of line until a time: scheduled ones, and those not reached that
    will be tried again."""
    return {"callbacks": [call_to_json(call) for call in get_call_center().upcoming_callbacks()]}


@router.put(
    "callbacks/{call_id}",
    url_name="api-scheduled-callback",
    operation_id="moveCallback",
    summary="Move a scheduled callback",
    **answers({200: (CallOut, "The callback at its new time.", ())}, *ITEM_CHANGES),
)
def move_callback(request: HttpRequest, call_id: ItemId, payload: MoveIn):
    """Only a callback still to come (`callback_scheduled`), as last read (`version`)."""
    outcome = api_operations(request).move_callback(call_id, payload.version, payload.at)
    note_change(request, "call.callback_moved", call_id, str(payload.at))
    return call_to_json(cast(Call, outcome.call))


@router.delete(
    "callbacks/{call_id}",
    url_name="api-scheduled-callback",
    operation_id="cancelCallback",
    summary="Cancel a scheduled callback",
    **answers({200: (CallOut, "The callback as it was: it never entered the line.", ())}, *ITEM_CHANGES),
)
def cancel_callback(request: HttpRequest, call_id: ItemId, version: QueryVersion = CALL_VERSION):
    """Only a callback still to come (`callback_scheduled`), as last read (`version`)."""
    outcome = api_operations(request).cancel_callback(call_id, version)
    note_change(request, "call.callback_cancelled", call_id, "cancelled")
    return call_to_json(cast(Call, outcome.call))
