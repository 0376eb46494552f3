"""/api/calls: place a caller, list the waiting and assigned calls, read a call, and
what happens to one (abandoned, answered, ended, transferred); with its inputs and
outputs."""

from __future__ import annotations

from typing import ClassVar, Literal, cast

from django.http import HttpRequest, HttpResponse
from ninja import Header, Query, Router, Schema, Status
from pydantic import Field, StrictInt, field_validator

from queues_app import inputs
from queues_app.api import listing
from queues_app.api.auth import current_token
from queues_app.api.common import agent_and_call, api_operations, get_call_center, naming_key, note_change, replayed
from queues_app.api.openapi import CHANGES, CURSOR, ITEM_CHANGES, READS, answers, per_page
from queues_app.api.schemas import (
    THEN_PROBLEM,
    CallEndedOut,
    CallOut,
    Cursor,
    IdempotencyKey,
    InputSchema,
    ItemId,
    LineId,
    PageSize,
    Then,
    known_preferences,
)
from queues_app.calls.queued_callbacks import E164, E164_RULE, RESULTS, callback_offered
from queues_app.calls.records import Call, QueueOrder
from queues_app.calls.transfers import Transfer
from queues_app.centre import keys
from queues_app.ddb import errors
from queues_app.figures.service_level import ServiceLevelReader
from queues_app.lines.records import LINE_ID_RULE
from queues_app.routing.standing import standing_of
from queues_app.serializers import call_to_json
from queues_app.steps import MAX_STEP_SECONDS, MAX_STEPS

router = Router()

CallListName = Literal["waiting", "offered", "assigned"]


# --- inputs and outputs ------------------------------------------------------------------


class StepIn(InputSchema):
    """One routing step: while it runs, only agents at these levels or above."""

    min_level: dict[str, StrictInt] = Field(
        description="Minimum levels (1 to 5) by skill dimension, of the value the caller asks for (or, for a "
        "dimension left open, the agent's best).",
        examples=[{"language": 4}],
    )
    seconds: int = Field(ge=1, le=MAX_STEP_SECONDS, strict=True, description="How long the step runs.")

    PROBLEMS: ClassVar[dict[str, str]] = {
        "min_level": 'must be an object such as {"language": 4}: levels 1 to 5 by skill dimension',
        "seconds": f"must be a whole number from 1 to {MAX_STEP_SECONDS}",
    }


class CallIn(InputSchema):
    """A caller to place: assigned at once to the earliest-queued agent who fits, or
    waiting for one."""

    preferences: dict[str, str] = Field(
        description='One value per skill dimension (`SWITCHBOARD_SKILLS`), or `any` (also "" or `*`); a dimension '
        "left out means any too, and `{}` means any agent. null is refused: say `any` or leave the dimension out.",
        examples=[{"language": "Spanish", "gender": "any"}],
    )
    priority: int = Field(
        0, ge=0, le=keys.MAX_PRIORITY, strict=True, description="0 to 9; callers of higher priority are served first."
    )
    order: Literal["fifo", "lifo"] | None = Field(
        None, description="Which queued agent the caller gets; default `SWITCHBOARD_AGENT_ORDER`."
    )
    line: LineId | None = Field(
        None,
        description="The line the caller is for (`GET /api/lines`); default `main`. A line that is closed or full "
        'answers 409 with `reason` (`closed`, with `opens_at`, or `full`); what the line requires ({"language": '
        '"French"}) is added to the preferences.',
        examples=["support"],
    )

    steps: list[StepIn] | None = Field(
        None,
        max_length=MAX_STEPS,
        description="Routing steps, at most five: while the first runs, only agents meeting its `min_level` are "
        "offered the caller; each expires after its `seconds`, one after the other from arrival; after the last, "
        "any agent who fits the preferences. Among agents meeting a step, the earliest queued.",
        examples=[[{"min_level": {"language": 4}, "seconds": 20}, {"min_level": {"language": 2}, "seconds": 40}]],
    )

    preferred_agent_id: ItemId | None = Field(
        None,
        description="An agent to keep the caller for (their account owner, the last agent they spoke to): offered "
        "to that agent alone while they are logged in and `preferred_for_seconds` runs (an agent logged off, or "
        "who does not fit the preferences, does not hold the caller); then as any caller. The agent, coming back, "
        "takes the callers kept for them first.",
    )
    preferred_for_seconds: int | None = Field(
        None, ge=1, le=3600, strict=True, description="How long the caller is kept for that agent (default 60)."
    )

    PROBLEMS: ClassVar[dict[str, str]] = {
        "preferred_agent_id": "must be an agent's id",
        "preferred_for_seconds": "must be a whole number of seconds from 1 to 3600",
        "line": f"must be a line's id: {LINE_ID_RULE}",
        "steps": f"must be a list of at most {MAX_STEPS} steps such as "
        '{"min_level": {"language": 4}, "seconds": 20}',
        "preferences": 'must be an object such as {"language": "Spanish", "gender": "any"} (use {} for any agent)',
        "priority": f"must be a whole number from 0 to {keys.MAX_PRIORITY}",
        "order": f"must be one of {', '.join(QueueOrder.ALL)}",
    }
    NAMED_BY_KEY: ClassVar[tuple[str, ...]] = ("preferences",)

    preferences_known = field_validator("preferences")(known_preferences)


class EndIn(InputSchema):
    """What the call's agent does once the call has ended."""

    then: Then = "queue"

    PROBLEMS: ClassVar[dict[str, str]] = {"then": THEN_PROBLEM}


class TransferIn(InputSchema):
    """Where the call goes: new preferences (it waits at its place for an agent who fits)
    or a named queued agent; and what its agent does once it is handed on."""

    preferences: dict[str, str] | None = Field(
        None,
        description="One value per skill dimension, or `any`, as when placing a call.",
        examples=[{"language": "French", "gender": "any"}],
    )
    agent_id: ItemId | None = Field(None, description="A queued agent to give the call to.")
    from_agent_id: ItemId = Field(
        description="The agent on the call as you last read it (its `agent_id`). Only their part is handed on: "
        "sent again once it took effect, the request is answered as it was (`Idempotent-Replayed: true`); if the "
        "call has moved on otherwise, 409.",
        examples=["a1b2c3d4e5f6"],
    )
    then: Then = "queue"

    PROBLEMS: ClassVar[dict[str, str]] = {
        "preferences": 'must be an object such as {"language": "French", "gender": "any"}',
        "agent_id": f"must be a queued agent's id: {inputs.ID_RULE}",
        "from_agent_id": f"required: the agent on the call as you last read it (the call's agent_id): {inputs.ID_RULE}",
        "then": THEN_PROBLEM,
    }
    NAMED_BY_KEY: ClassVar[tuple[str, ...]] = ("preferences",)

    preferences_known = field_validator("preferences")(known_preferences)


class CallbackIn(InputSchema):
    """The number to call the waiting caller back on."""

    number: str = Field(
        pattern=E164.pattern,
        description="E.164: '+' then 8 to 15 digits. Kept only on the call (ended calls expire with their record).",
        examples=["+33612345678"],
    )

    PROBLEMS: ClassVar[dict[str, str]] = {"number": E164_RULE}


class CallbackResultIn(InputSchema):
    """How dialling the callback's number went."""

    result: Literal["connected", "no_answer", "busy", "failed"] = Field(
        description="`connected`: the caller is on the line with the reserved agent; otherwise the agent is freed "
        "and the callback tried again after its line's `callback_retry_seconds`, at most `callback_max_attempts` "
        "times in all."
    )

    attempt: int | None = Field(
        None,
        ge=1,
        le=100,
        strict=True,
        description="The dialling this result is of: `callback.attempts` as `call.callback_due` showed them, plus "
        "one. Given, a result sent again after the next attempt began is answered as it was, never taken for the "
        "next one's.",
    )

    agent_id: ItemId | None = Field(
        None,
        description="The agent `call.callback_due` named: given, a result that comes after that reservation ran out "
        "(and another agent is reserved) is refused (409), never taken for the new one.",
    )

    PROBLEMS: ClassVar[dict[str, str]] = {
        "agent_id": "must be an agent's id",
        "result": f"must be one of {', '.join(RESULTS)}",
        "attempt": "must be a whole number from 1 to 100",
    }


class NothingIn(InputSchema):
    """No fields: an empty body, `{}` or no body at all."""


class AnsweredIn(InputSchema):
    """Who picked up: optional; an empty body, `{}` or no body at all is an answer too."""

    agent_id: ItemId | None = Field(
        None,
        description="The agent the offer rang for (`call.assigned` named them): given, an answer that comes after "
        "that offer ran out (and the call was offered to another agent) is refused (409), never taken for the new "
        "offer.",
    )

    PROBLEMS: ClassVar[dict[str, str]] = {"agent_id": "must be an agent's id"}


class CallDetailOut(CallOut):
    position: int | None = Field(
        description="While it waits: how many callers any agent who fits this one takes first, plus one."
    )
    estimated_wait_seconds: float | None = Field(
        description="While it waits: its position over the rate callers like it were answered in the last 15 "
        "minutes; null when none was (no basis) or it does not wait."
    )
    callback_offered: bool = Field(
        description="While it waits (and is no callback yet): whether its line says to offer the caller a callback "
        "now (`callback_offer_after_seconds` waited, or the estimated wait above `callback_offer_wait_seconds`)."
    )


class CallsPageOut(Schema):
    calls: list[CallOut]
    next_cursor: str | None = Field(description="Send as `cursor` for the next page; null on the last page.")


# --- operations ------------------------------------------------------------------------

CALL_KEY = Header(
    None,
    alias="Idempotency-Key",
    description="A unique key per new caller, the same when retrying: a retry never makes a second call. "
    "Scoped to the token's user.",
)
CALLS_PER_PAGE = per_page("Calls")
CALL_LIST = Query(
    ...,
    description="`waiting`: the line in order (priority, then arrival); `offered`: calls given to an agent whose "
    "phone rings (ANSWER_TIMEOUT_SECONDS); `assigned`: calls an agent is attending.",
)


@router.post(
    "calls",
    url_name="api-calls",
    operation_id="createCall",
    summary="Place a caller",
    **answers(
        {
            201: (CallOut, "The new call: `assigned` to an agent at once, or `waiting`.", ("Location",)),
            200: (
                CallOut,
                "A retry with an `Idempotency-Key` seen before: the first request's call as it is now.",
                ("Location", "Idempotent-Replayed"),
            ),
        },
        *CHANGES,
        409,
        422,
        429,
    ),
)
def create_call(
    request: HttpRequest,
    payload: CallIn,
    response: HttpResponse,
    idempotency_key: IdempotencyKey | None = CALL_KEY,
):
    """Assigned at once to the earliest-queued agent who fits every preference (201,
    `status` `assigned`), or waiting (201, `waiting`). With an `Idempotency-Key` seen
    before, the first call again (200, `Idempotent-Replayed: true`); with the same key and
    a different body, 422."""
    key = idempotency_key
    # Keys are scoped to the token's user, so two clients choosing the same key never
    # receive each other's call.
    scoped_key = f"api:{request.user.pk}:{key}" if key else None
    token = current_token(request)
    with naming_key(key):
        call, created = api_operations(request).create_call(
            payload.preferences,
            priority=payload.priority,
            order=payload.order,
            idempotency_key=scoped_key,
            callback=str(token.pk) if token.callback_url else None,
            line=payload.line,
            steps=[step.model_dump() for step in payload.steps] if payload.steps is not None else None,
            preferred=preferred_of(payload),
        )
    if created:
        note_change(request, "call.create", call.call_id, call.status)
    response["Location"] = f"/api/calls/{call.call_id}"
    if key:
        response["Idempotent-Replayed"] = "false" if created else "true"
    return Status(201 if created else 200, call_to_json(call))


def preferred_of(payload: CallIn) -> tuple[str, int] | None:
    """The preferred agent asked for, with its time (60 s unless given); the time alone is a 400."""
    if payload.preferred_agent_id is None:
        if payload.preferred_for_seconds is not None:
            raise errors.InvalidRequest(
                "preferred_for_seconds needs a preferred_agent_id.", field="preferred_for_seconds"
            )
        return None
    return payload.preferred_agent_id, payload.preferred_for_seconds or 60


@router.get(
    "calls",
    url_name="api-calls",
    operation_id="listCalls",
    summary="List waiting or assigned calls",
    **answers({200: (CallsPageOut, "A page of calls, and the cursor of the next page.", ())}, 400, *READS),
)
def list_calls(
    request: HttpRequest,
    status: CallListName = CALL_LIST,
    cursor: Cursor | None = CURSOR,
    limit: PageSize = CALLS_PER_PAGE,
):
    """Waiting calls in the order they will be served, or assigned calls (newest
    assignment first within a page), a page at a time."""
    page = listing.calls_page(get_call_center(), status, cursor=cursor, limit=limit)
    return {"calls": [call_to_json(call) for call in page.items], "next_cursor": page.next_cursor}


@router.get(
    "calls/{call_id}",
    url_name="api-call",
    operation_id="getCall",
    summary="Read a call",
    **answers({200: (CallDetailOut, "The call as it is now.", ())}, 400, 404, *READS),
)
def call_detail(request: HttpRequest, call_id: ItemId):
    """The call: its status, preferences, the agent who took it and why; while it waits,
    where it stands (`position`, `estimated_wait_seconds`)."""
    center = get_call_center()
    call = center.get_call(call_id)
    standing = standing_of(center.line, ServiceLevelReader(center.db), call)
    estimate = standing.estimated_wait_seconds if standing else None
    return {
        **call_to_json(call),
        "position": standing.position if standing else None,
        "estimated_wait_seconds": estimate,
        "callback_offered": callback_offered(call, center.lines.current_line(call.line or ""), estimate),
    }


@router.post(
    "calls/{call_id}/callback",
    url_name="api-call-callback",
    operation_id="requestCallback",
    summary="Call a waiting caller back instead of holding",
    **answers(
        {
            200: (
                CallOut,
                "The call, `callback_waiting` at its place in line (same arrival, priority and line). "
                "`Idempotent-Replayed: true` when it was asked already with this number.",
                ("Idempotent-Replayed",),
            )
        },
        *ITEM_CHANGES,
    ),
)
def request_callback(request: HttpRequest, call_id: ItemId, payload: CallbackIn, response: HttpResponse):
    """The caller hangs up and is called back at their turn: an agent who fits is reserved
    and `call.callback_due` tells the phone system the number and the agent; report how
    dialling went with /callback-result. Only a waiting caller can ask (409 otherwise), and
    once, with one number."""
    outcome = api_operations(request).request_callback(call_id, payload.number)
    replayed(response, outcome.replayed)
    return call_to_json(cast(Call, outcome.call))


@router.post(
    "calls/{call_id}/callback-result",
    url_name="api-call-callback-result",
    operation_id="reportCallbackResult",
    summary="How dialling a callback went",
    **answers(
        {
            200: (
                CallOut,
                "The call: `assigned` (connected), `callback_retry` (tried again at `callback.retry_at`) or "
                "`callback_failed`. `Idempotent-Replayed: true` when this result was reported already.",
                ("Idempotent-Replayed",),
            )
        },
        *ITEM_CHANGES,
    ),
)
def callback_result(request: HttpRequest, call_id: ItemId, payload: CallbackResultIn, response: HttpResponse):
    """While the call is `callback_due` (before its `answer_by`): `connected`, the call is in
    progress with the reserved agent; `no_answer`, `busy` or `failed`, the agent is freed.
    Too late, the reservation ran out as an offer does (the agent set not ready, `missed`;
    the callback back at its place) and this answers 409: of a result and the timeout at
    the same moment, exactly one wins."""
    outcome = api_operations(request).callback_result(
        call_id, payload.result, attempt=payload.attempt, agent_id=payload.agent_id
    )
    replayed(response, outcome.replayed)
    return call_to_json(cast(Call, outcome.call))


@router.post(
    "calls/{call_id}/abandon",
    url_name="api-call-abandon",
    operation_id="abandonCall",
    summary="The caller hung up while waiting",
    **answers(
        {
            200: (
                CallOut,
                "The call, abandoned: out of line, with how long it waited (`Idempotent-Replayed: true` when it "
                "was abandoned already).",
                ("Idempotent-Replayed",),
            )
        },
        *ITEM_CHANGES,
    ),
)
def abandon_call(request: HttpRequest, call_id: ItemId, response: HttpResponse, payload: NothingIn | None = None):
    """Take a waiting caller out of line at once, recorded as abandoned with their wait.
    The same hang-up sent again answers as the first did (`Idempotent-Replayed: true`). A
    call that is no longer waiting otherwise answers 409 saying what happened instead
    (assigned to whom, ended): of an abandon and an assignment at the same moment,
    exactly one wins."""
    outcome = api_operations(request).abandon_call(call_id)
    call = cast(Call, outcome.call)
    if not outcome.replayed:
        note_change(request, "call.abandon", call_id, f"abandoned after {call.waited_seconds or 0:.0f} s")
    replayed(response, outcome.replayed)
    return call_to_json(call)


@router.post(
    "calls/{call_id}/end",
    url_name="api-call-end",
    operation_id="endCall",
    summary="End a call in progress",
    **answers(
        {
            200: (
                CallEndedOut,
                "The call's agent, and the next call they took (null when none). `Idempotent-Replayed: true` when "
                "the call had already ended with the same `then`: the answer is the first one's, as things are now.",
                ("Idempotent-Replayed",),
            )
        },
        *ITEM_CHANGES,
    ),
)
def end_call(request: HttpRequest, call_id: ItemId, response: HttpResponse, payload: EndIn | None = None):
    """End the call named, then put its agent back in the queue (`then`: `queue`, the
    default), in wrap-up, or offline. Only that call ends: a retry after it ended is
    answered as the first request was; a call that ended otherwise (another `then`), is
    waiting or was abandoned answers 409 saying what happened."""
    then = payload.then if payload else "queue"
    outcome = api_operations(request).end_call(call_id, then)
    if not outcome.replayed:
        note_change(request, "call.end", call_id, f"then {then}")
    return agent_and_call(response, outcome)


@router.post(
    "calls/{call_id}/answered",
    url_name="api-call-answered",
    operation_id="answerCall",
    summary="The agent picked up an offered call",
    **answers(
        {
            200: (
                CallOut,
                "The call, answered. `Idempotent-Replayed: true` when it was answered already (or when offers are "
                "off: every assignment is an answer).",
                ("Idempotent-Replayed",),
            )
        },
        *ITEM_CHANGES,
    ),
)
def answer_call(request: HttpRequest, call_id: ItemId, response: HttpResponse, payload: AnsweredIn | None = None):
    """With ANSWER_TIMEOUT_SECONDS set, an assignment is an offer: confirm that the agent
    picked up before the call's `answer_by`. Too late, the call went back to its place in
    line (and perhaps to the next agent) and this answers 409 saying so: of an answer and
    the timeout at the same moment, exactly one wins."""
    outcome = api_operations(request).answered(call_id, agent_id=payload.agent_id if payload else None)
    if not outcome.replayed:
        note_change(request, "call.answered", call_id, "answered")
    replayed(response, outcome.replayed)
    return call_to_json(cast(Call, outcome.call))


@router.post(
    "calls/{call_id}/transfer",
    url_name="api-call-transfer",
    operation_id="transferCall",
    summary="Transfer a call in progress",
    **answers(
        {
            200: (
                CallEndedOut,
                "The agent who handed the call on, as they are now, and the call: assigned to its new agent, or "
                "waiting at its original place in line. `Idempotent-Replayed: true` when this very transfer had "
                "been made already: the answer is as things are now.",
                ("Idempotent-Replayed",),
            )
        },
        *ITEM_CHANGES,
    ),
)
def transfer_call(request: HttpRequest, call_id: ItemId, payload: TransferIn, response: HttpResponse):
    """Hand a call in progress on, with new `preferences` (it keeps its arrival and waits
    for, or is given to, an agent who fits) or to the queued agent `agent_id`. Its agent
    (`from_agent_id`, as last read) then goes `then`. The call's `legs` keep each agent's
    part."""
    outcome = api_operations(request).transfer(Transfer(call_id, **payload.model_dump()))
    call = cast(Call, outcome.call)
    if not outcome.replayed:
        note_change(request, "call.transfer", call_id, f"to {call.agent_name or 'the line'}")
    return agent_and_call(response, outcome)
