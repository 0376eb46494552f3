"""/api/lines: the centre's lines (each its callers' required skills, its promise, hours and
limits), read with how they stand now, created, changed from the version read, and removed
while nobody waits on them; with their inputs and outputs."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Schema, Status
from pydantic import Field

from queues_app import inputs
from queues_app.api.common import api_operations, get_call_center, note_change, replayed
from queues_app.api.openapi import ITEM_CHANGES, READS, answers
from queues_app.api.schemas import InputSchema, LineId, Version
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import now, to_iso
from queues_app.lines.records import Line
from queues_app.monitoring.overview import LineNow, lines_now

router = Router()

QueryVersion = Annotated[int, Field(ge=inputs.VERSION_MIN, le=inputs.VERSION_MAX)]  # as a query string gives it

HOURS_EXAMPLE = {"mon": [["08:00", "18:00"]], "sat": [["09:00", "12:00"]]}


class LineIn(InputSchema):
    """A line's settings. A setting left out takes the centre's default (the service level
    from SERVICE_LEVEL_SECONDS and SERVICE_LEVEL_TARGET; no hours: always open; no limits)."""

    name: str = Field(description="As supervisors read it.", examples=["Support"])
    requires: dict[str, str | None] | None = Field(
        None,
        description="The skill value every caller of the line needs, by dimension.",
        examples=[{"language": "French"}],
    )
    service_level_seconds: int | None = Field(
        None, description="The promise's threshold (0 to 86,400 s).", examples=[30]
    )
    service_level_target: float | None = Field(None, description="The share answered within it.", examples=[0.8])
    short_abandon_seconds: int | None = Field(
        None, description="Callers who hang up sooner count neither for nor against the service level.", examples=[5]
    )
    hours: dict[str, list[list[str]]] | None = Field(
        None,
        description="Open ranges per weekday (`mon` .. `sun`) in the centre's time zone, `HH:MM` to `HH:MM` "
        "(`24:00` for midnight; a range past midnight belongs to the day it starts). Null: always open.",
        examples=[HOURS_EXAMPLE],
    )
    holidays: list[str] | None = Field(
        None, description="Dates (YYYY-MM-DD) the line stays closed.", examples=[["2026-12-25"]]
    )
    max_waiting: int | None = Field(None, description="At most this many callers wait; past it, the overflow.")
    max_wait_seconds: int | None = Field(None, description="A caller waits at most this long on the line.")
    overflow: dict[str, str] | None = Field(
        None,
        description='Where callers go past `max_waiting` or `max_wait_seconds`: {"to_line": "<line id>"} (keeping '
        'their arrival) or {"end": "<reason>"} (the call ends; the phone system is told the reason).',
        examples=[{"to_line": "general"}],
    )
    priority_aging_seconds: int | None = Field(None, description="Kept for the routing of priorities by age.")
    steps: list[dict] | None = Field(
        None,
        description="Routing steps for the line's callers who bring none (`POST /api/calls`, `steps`).",
        examples=[[{"min_level": {"language": 4}, "seconds": 20}]],
    )
    wrap_up_seconds: int | None = Field(
        None,
        description="How long an agent's wrap-up after a call of this line may last (1 to 3,600 s; null: "
        "WRAP_UP_SECONDS): past it, the agent is made available.",
        examples=[30],
    )
    callback_retry_seconds: int | None = Field(
        None,
        description="A queued callback not reached (`no_answer`, `busy`, `failed`) is dialled again after this long "
        "(1 to 86,400 s), keeping its place; null: CALLBACK_RETRY_SECONDS.",
        examples=[300],
    )
    callback_max_attempts: int | None = Field(
        None,
        description="A queued callback is dialled at most this many times (1 to 10), then ends `callback_failed`; "
        "null: CALLBACK_MAX_ATTEMPTS.",
        examples=[3],
    )
    callback_offer_after_seconds: int | None = Field(
        None, description="A waiting caller is offered a callback (`callback_offered`) once they waited this long."
    )
    callback_offer_wait_seconds: int | None = Field(
        None, description="A waiting caller is offered a callback while their estimated wait is above this."
    )
    callback_priority: int | None = Field(
        None, description="The priority (0 to 9) of the line's scheduled callbacks when they enter the line (null: 0)."
    )
    callback_wait_from: Literal["arrival", "request"] | None = Field(
        None,
        description="A connected callback's wait for the service level: from the caller's `arrival` (the default, as "
        "Amazon Connect counts it) or from the `request` to be called back.",
    )
    version: Version | None = Field(
        None, description="The line's `version` as you last read it; leave out (or 0) to create it.", examples=[3]
    )

    PROBLEMS: ClassVar[dict[str, str]] = {
        "name": "required: the line's name, 1 to 100 characters",
        "requires": 'skill values by dimension, e.g. {"language": "French"}',
        "hours": 'ranges per weekday, e.g. {"mon": [["08:00", "18:00"]]}',
        "holidays": 'dates, e.g. ["2026-12-25"]',
        "overflow": 'either {"to_line": "<line id>"} or {"end": "<reason>"}',
    }


class LineOut(Schema):
    line_id: str
    name: str
    requires: dict[str, str]
    service_level_seconds: int
    service_level_target: float
    short_abandon_seconds: int
    hours: dict[str, list[list[str]]] | None
    holidays: list[str]
    max_waiting: int | None
    max_wait_seconds: int | None
    overflow: dict[str, str] | None
    priority_aging_seconds: int | None
    steps: list[dict]
    wrap_up_seconds: int | None
    callback_retry_seconds: int | None
    callback_max_attempts: int | None
    callback_offer_after_seconds: int | None
    callback_offer_wait_seconds: int | None
    callback_priority: int | None
    callback_wait_from: str
    version: int = Field(description="0 for `main` when no line is configured (send it to create `main`).")
    open_now: bool
    opens_at: str | None = Field(description="While closed: when it opens next (null: no hours ahead).")
    waiting: int = Field(description="Callers waiting on the line now.")
    oldest_wait_seconds: float | None = Field(description="How long its longest-waiting caller has waited.")


class LinesOut(Schema):
    lines: list[LineOut]


def line_to_json(shown: LineNow) -> dict[str, Any]:
    data = shown.line.as_dict()
    data.setdefault("hours", None)
    data.setdefault("holidays", [])
    seconds = shown.oldest_wait_seconds
    return {
        **data,
        "open_now": shown.open_now,
        "opens_at": to_iso(shown.opens_at) if shown.opens_at else None,
        "waiting": shown.waiting,
        "oldest_wait_seconds": round(seconds, 1) if seconds is not None else None,
    }


def lines_as_they_stand(center: CallCenter, lines: list[Line]) -> list[dict[str, Any]]:
    return [line_to_json(shown) for shown in lines_now(center, lines, now())]


@router.get(
    "lines",
    url_name="api-lines",
    operation_id="listLines",
    summary="The centre's lines",
    **answers({200: (LinesOut, "Every line, by id, with how it stands now.", ())}, *READS),
)
def list_lines(request: HttpRequest):
    """Every line with its settings and how it stands (open now, callers waiting, longest
    wait). A centre that configured none has one: `main` (version 0)."""
    center = get_call_center()
    return {"lines": lines_as_they_stand(center, center.lines.all())}


@router.get(
    "lines/{line_id}",
    url_name="api-line",
    operation_id="getLine",
    summary="Read a line",
    **answers({200: (LineOut, "The line and how it stands now.", ())}, 400, 404, *READS),
)
def line_detail(request: HttpRequest, line_id: LineId):
    center = get_call_center()
    return lines_as_they_stand(center, [center.lines.get(line_id)])[0]


@router.put(
    "lines/{line_id}",
    url_name="api-line",
    operation_id="putLine",
    summary="Create or change a line",
    **answers(
        {
            201: (LineOut, "The line, created (version 1).", ("Location", "Idempotent-Replayed")),
            200: (
                LineOut,
                "The line, changed: its new `version` (`Idempotent-Replayed: true`: this change was made already).",
                ("Location", "Idempotent-Replayed"),
            ),
        },
        *ITEM_CHANGES,
    ),
)
def put_line(request: HttpRequest, line_id: LineId, payload: LineIn, response: HttpResponse):
    """Create the line (no `version`) or change it from the `version` you read: a change
    made from an older version is refused (409) with the line's version now. Every
    setting is checked (400 naming the field), and the lines together: an overflow to a
    line that does not exist, or in a circle, is refused."""
    data = {"line_id": line_id, **payload.model_dump(exclude_unset=True)}
    if data.get("version") is None:
        data.pop("version", None)
    line, outcome = api_operations(request).put_line(data)
    note_change(request, "line.put", line.line_id, f"{outcome}, version {line.version}")
    response["Location"] = f"/api/lines/{line.line_id}"
    replayed(response, outcome == "replayed")
    center = get_call_center()
    return Status(201 if outcome == "created" else 200, lines_as_they_stand(center, [line])[0])


LINE_VERSION = Query(..., description="The line's `version` as you last read it.")


@router.delete(
    "lines/{line_id}",
    url_name="api-line",
    operation_id="deleteLine",
    summary="Remove a line",
    **answers({200: (LineOut, "The line as it was.", ())}, *ITEM_CHANGES),
)
def delete_line(request: HttpRequest, line_id: LineId, version: QueryVersion = LINE_VERSION):
    """Remove the line, from the version you read, once nobody waits on it and no other
    line overflows to it (409 otherwise)."""
    line = api_operations(request).delete_line(line_id, version)
    note_change(request, "line.delete", line_id, "removed")
    return lines_as_they_stand(get_call_center(), [line])[0]
