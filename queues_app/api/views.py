"""The JSON API's operations: HTTP only (the schemas validate, the center and the audited
`Operations` act, the serializers answer).

Authentication, permissions and every refusal are in `auth`, `problems` and `service`
(which also mounts these operations); inputs and outputs are in `schemas`.
"""

from __future__ import annotations

import hashlib
import logging
from contextlib import contextmanager
from typing import Any, cast

from django.http import HttpRequest, HttpResponse
from ninja import Header, Query, Router, Status

from queues_app.agents.records import Agent
from queues_app.api import listing
from queues_app.api.auth import actor_of, token_of
from queues_app.api.schemas import (
    AgentAndCallOut,
    AgentOnlyOut,
    AgentOut,
    AgentsPageOut,
    AgentStatusName,
    CallbackIn,
    CallbackOut,
    CallbackSetOut,
    CallEndedOut,
    CallIn,
    CallListName,
    CallOut,
    CallsPageOut,
    Cursor,
    EndIn,
    IdempotencyKey,
    IntervalsOut,
    ItemId,
    NothingIn,
    NotReadyIn,
    PageSize,
    Problem,
    QueuesOut,
    ReleaseIn,
    ShipmentCreatedOut,
    ShipmentIn,
    ShipmentOut,
    TransferIn,
    VersionIn,
)
from queues_app.calls.records import Call, Outcome
from queues_app.calls.transfers import Transfer
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import to_iso
from queues_app.ddb.errors import Conflict, KeyReused, NotFound
from queues_app.ddb.replay import digest
from queues_app.figures.intervals import asked_report
from queues_app.models import ApiToken
from queues_app.operations import Operations
from queues_app.serializers import agent_to_json, call_to_json, interval_report_json, queue_to_json, shipment_to_json
from queues_app.shipments.queue import SPILLOVER_QUEUE, Shipment, ShipmentQueue
from queues_app.webhooks.events import EVENT_TYPES

log = logging.getLogger(__name__)

endpoints = Router()


def get_call_center() -> CallCenter:
    return CallCenter()


def api_operations(request) -> Operations:
    """Changes made through the API are recorded in the audit trail as the token's user
    and the token (`sam via token phone system (ab12cd34)`), from source `api`."""
    return Operations(actor_of(request), "api", trace_id=getattr(request, "trace_id", None))


def note_change(request, action: str, item_id: str, outcome: str) -> None:
    """The log line of a change made through the API, naming the token that made it."""
    log.info("api %s %s by %s: %s", action, item_id, actor_of(request), outcome)


# --- what each operation may answer (the OpenAPI document's responses) ------------------

HEADER = {
    "Location": ("The item's URL under /api/.", True),
    "Idempotent-Replayed": (
        "`true` when this answers a repeat of an earlier request that had already taken effect (the same key, or "
        "the same change named again): nothing changed this time.",
        False,
    ),
    "Retry-After": ("Seconds to wait before trying again.", True),
    "WWW-Authenticate": ('`Bearer realm="switchboard"`.', True),
    "X-Trace-Id": ("The request's trace id: the one sent, or one made up.", True),
}

REFUSALS = {
    400: "Invalid input: `fields` names every bad field (or `body` for a body that is not a JSON object).",
    401: "No bearer token, or one that is unknown, revoked, expired or whose user is inactive.",
    403: "The token's user may only read (a viewer's token).",
    404: "No such item (or no such API path).",
    409: "The item's state does not allow it (already queued, not attending a call), or it changed since the "
    "version or call the request names: `current` holds the items as they are now, the message says what changed.",
    413: "The request body is larger than the API accepts.",
    415: "The request body is not `application/json` (a charset, when given, must be UTF-8).",
    422: "`Idempotency-Key` sent again with a different request: never answered with the first request's result.",
    429: "The token made its `API_RATE_LIMIT` requests of this window, or (on an enqueue) backpressure: the "
    "queue is past its bound; `Retry-After` says when to try again.",
    503: "DynamoDB is unreachable, throttling, or a table is missing; `Retry-After` says when to try again.",
}
REFUSAL_HEADERS = {401: ("WWW-Authenticate",), 429: ("Retry-After",), 503: ("Retry-After",)}


def _headers(*names: str) -> dict[str, Any]:
    return {
        name: {"description": HEADER[name][0], "required": HEADER[name][1], "schema": {"type": "string"}}
        for name in names
    }


def answers(success: dict[int, tuple[type, str, tuple[str, ...]]], *refusals: int) -> dict[str, Any]:
    """`response` and `openapi_extra` for an operation: its successful answers (schema,
    description, headers) and the refusals it may give, each with its headers."""
    response: dict[int, type] = {status: schema for status, (schema, _, _) in success.items()}
    documented: dict[int, dict[str, Any]] = {}
    for status, (_, description, headers) in success.items():
        documented[status] = {"description": description, "headers": _headers(*headers, "X-Trace-Id")}
    for status in refusals:
        response[status] = Problem
        documented[status] = {
            "description": REFUSALS[status],
            "headers": _headers(*REFUSAL_HEADERS.get(status, ()), "X-Trace-Id"),
        }
    trace = {
        "in": "header",
        "name": "X-Trace-Id",
        "required": False,
        "description": "Up to 64 letters, digits and `._:-`, echoed in the answer and carried into the log and "
        "the audit trail; anything else is replaced by a made-up id.",
        "schema": {"type": "string"},
    }
    return {"response": response, "openapi_extra": {"responses": documented, "parameters": [trace]}}


CALL_KEY = Header(
    None,
    alias="Idempotency-Key",
    description="A unique key per new caller, the same when retrying: a retry never makes a second call. "
    "Scoped to the token's user.",
)
SHIPMENT_KEY = Header(
    None,
    alias="Idempotency-Key",
    description="A unique key per shipment, the same when retrying. Scoped to the token's user.",
)

# Query parameters of the lists.
CALL_LIST = Query(
    ..., description="`waiting`: the line in order (priority, then arrival); `assigned`: calls an agent is attending."
)
AGENT_STATUS = Query(None, description="Only agents in this status.")
AGENT_SKILL = Query(
    None, description="Only agents with this skill, as `dimension:value`, e.g. `language:French`.", max_length=200
)
CURSOR = Query(None, description="`next_cursor` of the previous page; leave out for the first page.")
CALLS_PER_PAGE = Query(50, description="Calls per page, 1 to 100 (a page may hold fewer).")
AGENTS_PER_PAGE = Query(50, description="Agents per page, 1 to 100 (a filtered page may hold fewer).")

KEY_SHOWN = 64  # characters of a reused idempotency key named in the refusal

READS = (401, 429, 503)
CHANGES = (400, 401, 403, 413, 415, 429, 503)
CALL_CHANGES = (*CHANGES, 404, 409)

# --- calls ----------------------------------------------------------------------------


@endpoints.post(
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
    token = _token(request)
    with _naming_key(key):
        call, created = api_operations(request).create_call(
            payload.preferences,
            priority=payload.priority,
            order=payload.order,
            idempotency_key=scoped_key,
            callback=str(token.pk) if token.callback_url else None,
        )
    if created:
        note_change(request, "call.create", call.call_id, call.status)
    response["Location"] = f"/api/calls/{call.call_id}"
    if key:
        response["Idempotent-Replayed"] = "false" if created else "true"
    return Status(201 if created else 200, call_to_json(call))


@contextmanager
def _naming_key(key: str | None):
    """A reused idempotency key is refused naming it (its first characters)."""
    try:
        yield
    except KeyReused as exc:
        shown = key if key and len(key) <= KEY_SHOWN else f"{(key or '')[:KEY_SHOWN]}…"
        raise KeyReused(f"Idempotency-Key {shown!r}: {exc.message[0].lower()}{exc.message[1:]}") from exc


@endpoints.get(
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


@endpoints.get(
    "reports/intervals",
    url_name="api-report-intervals",
    operation_id="intervalReport",
    summary="A day in intervals: offered, answered, service level, ASA, AHT",
    **answers({200: (IntervalsOut, "The centre's day in intervals, overall and per combination.", ())}, 400, *READS),
)
def interval_report(
    request: HttpRequest,
    date: str | None = Query(None, description="The centre's day, YYYY-MM-DD; today when left out.", max_length=10),
    interval: int = Query(30, description="Minutes per interval: 15, 30 or 60."),
    combination: str | None = Query(
        None, description="Only this combination (`Spanish#F`, `any` for no preference) or `all`.", max_length=200
    ),
):
    """For each interval of the centre's day (its TIME_ZONE): callers offered (answered
    or abandoned in it), answered, answered within the threshold, abandoned, the service
    level, the average speed of answer and handle time, the longest wait and occupancy;
    for the whole centre (`all`) and each skill combination. Kept REPORT_RETENTION_DAYS."""
    report, chosen = asked_report(get_call_center().db, date, interval, combination)
    return interval_report_json(report, chosen)


@endpoints.get(
    "calls/{call_id}",
    url_name="api-call",
    operation_id="getCall",
    summary="Read a call",
    **answers({200: (CallOut, "The call as it is now.", ())}, 400, 404, *READS),
)
def call_detail(request: HttpRequest, call_id: ItemId):
    """The call: its status, preferences, the agent who took it and why."""
    return call_to_json(get_call_center().get_call(call_id))


@endpoints.post(
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
        *CALL_CHANGES,
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
    _replayed(response, outcome.replayed)
    return call_to_json(call)


@endpoints.post(
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
        *CALL_CHANGES,
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
    return _agent_and_call(response, outcome)


@endpoints.post(
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
        *CALL_CHANGES,
    ),
)
def answer_call(request: HttpRequest, call_id: ItemId, response: HttpResponse, payload: NothingIn | None = None):
    """With ANSWER_TIMEOUT_SECONDS set, an assignment is an offer: confirm that the agent
    picked up before the call's `answer_by`. Too late, the call went back to its place in
    line (and perhaps to the next agent) and this answers 409 saying so: of an answer and
    the timeout at the same moment, exactly one wins."""
    outcome = api_operations(request).answered(call_id)
    if not outcome.replayed:
        note_change(request, "call.answered", call_id, "answered")
    _replayed(response, outcome.replayed)
    return call_to_json(cast(Call, outcome.call))


@endpoints.post(
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
        *CALL_CHANGES,
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
    return _agent_and_call(response, outcome)


# --- the token's callback ----------------------------------------------------------------


def _token(request) -> ApiToken:
    return cast(ApiToken, token_of(request))  # every operation runs behind BearerToken


def callback_json(token: ApiToken) -> dict:
    until = token.previous_secret_until()
    return {
        "url": token.callback_url or None,
        "events": list(EVENT_TYPES),
        "previous_secret_until": to_iso(until) if until else None,
    }


@endpoints.get(
    "callback",
    url_name="api-callback",
    operation_id="getCallback",
    summary="Read this token's callback",
    **answers({200: (CallbackOut, "The callback URL (null: none) and the events sent to it.", ())}, *READS),
)
def callback_detail(request: HttpRequest):
    """Where this token's call events go. The secret is shown only when it is set."""
    return callback_json(_token(request))


@endpoints.put(
    "callback",
    url_name="api-callback",
    operation_id="setCallback",
    summary="Register this token's callback",
    **answers({200: (CallbackSetOut, "The callback, with the secret that signs its events.", ())}, *CHANGES),
)
def set_callback(request: HttpRequest, payload: CallbackIn):
    """From now on, calls this token creates send their events (`call.assigned`,
    `call.abandoned`, `call.relaxed`) to `url`, signed with the secret (given, or made up
    and shown once here) as Standard Webhooks are. With `rotate`, the secret replaced
    signs too until `previous_secret_until`. docs/callbacks.md shows how to verify."""
    token = _token(request)
    secret = token.set_callback(payload.url, payload.secret, rotate=payload.rotate)
    note_change(request, "callback.rotate" if payload.rotate else "callback.set", str(token.pk), payload.url)
    return {**callback_json(token), "secret": secret}


@endpoints.delete(
    "callback",
    url_name="api-callback",
    operation_id="removeCallback",
    summary="Remove this token's callback",
    **answers({200: (CallbackOut, "No callback any more: events not yet delivered go to the DLQ.", ())}, *CHANGES),
)
def remove_callback(request: HttpRequest):
    """No more events for this token's calls; those not yet delivered fail and end in the
    callbacks queue's DLQ, from where a supervisor may restore them once a callback is set."""
    token = _token(request)
    token.clear_callback()
    note_change(request, "callback.remove", str(token.pk), "removed")
    return callback_json(token)


# --- shipments ------------------------------------------------------------------------


@endpoints.post(
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
    live queue is past its bound. With an `Idempotency-Key` seen before, the first
    shipment again (200)."""
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
        with _naming_key(key):
            raise KeyReused("This idempotency key was first sent with a different request (another body).")
    return existing


def _shipment_answer(response: HttpResponse, shipment, sidelined: bool, *, status: int, key: str | None) -> Status:
    response["Location"] = f"/api/shipments/{shipment.shipment_id}"
    if key:
        response["Idempotent-Replayed"] = "true" if status == 200 else "false"
    return Status(status, {**shipment_to_json(shipment), "sidelined": sidelined})


@endpoints.get(
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


# --- agents ---------------------------------------------------------------------------

AGENT_CHANGES = CALL_CHANGES


@endpoints.get(
    "agents",
    url_name="api-agents",
    operation_id="listAgents",
    summary="List agents",
    **answers(
        {
            200: (
                AgentsPageOut,
                "A page of agents in the roster's order (by name), and the cursor of the next page.",
                (),
            )
        },
        400,
        *READS,
    ),
)
def list_agents(
    request: HttpRequest,
    status: AgentStatusName | None = AGENT_STATUS,
    skill: str | None = AGENT_SKILL,
    cursor: Cursor | None = CURSOR,
    limit: PageSize = AGENTS_PER_PAGE,
):
    """Agents in the roster's order (by name), a page at a time; filtered by status and
    by skill."""
    center = get_call_center()
    page = listing.agents_page(
        center, status=status, skill=listing.parse_skill(center, skill), cursor=cursor, limit=limit
    )
    return {"agents": [agent_to_json(agent) for agent in page.items], "next_cursor": page.next_cursor}


@endpoints.get(
    "agents/{agent_id}",
    url_name="api-agent",
    operation_id="getAgent",
    summary="Read an agent",
    **answers({200: (AgentOut, "The agent as it is now.", ())}, 400, 404, *READS),
)
def agent_detail(request: HttpRequest, agent_id: ItemId):
    """The agent: status, skills, the call they attend."""
    return agent_to_json(get_call_center().agents.get(agent_id))


@endpoints.post(
    "agents/{agent_id}/available",
    url_name="api-agent-available",
    operation_id="makeAgentAvailable",
    summary="Make an agent available",
    **answers(
        {
            200: (
                AgentAndCallOut,
                "The agent, and the call they took (null when they were queued). `Idempotent-Replayed: true` when "
                "this very request had already made them available.",
                ("Idempotent-Replayed",),
            )
        },
        *AGENT_CHANGES,
    ),
)
def agent_available(request: HttpRequest, agent_id: ItemId, payload: VersionIn, response: HttpResponse):
    """Give the agent the longest-waiting caller they fit, or queue them (`call` null),
    from the `version` named: an agent changed since answers 409 with the agent as now."""
    outcome = api_operations(request).make_available(agent_id, expected_version=payload.version)
    if not outcome.replayed:
        note_change(
            request, "agent.available", agent_id, f"took call {outcome.call.call_id}" if outcome.call else "queued"
        )
    return _agent_and_call(response, outcome)


@endpoints.post(
    "agents/{agent_id}/release",
    url_name="api-agent-release",
    operation_id="releaseAgent",
    summary="End an agent's call",
    **answers(
        {
            200: (
                CallEndedOut,
                "The agent, and the next call they took (null when none). `Idempotent-Replayed: true` when the call "
                "had already ended with the same `then`: the answer is the first one's, as things are now.",
                ("Idempotent-Replayed",),
            )
        },
        *AGENT_CHANGES,
    ),
)
def agent_release(request: HttpRequest, agent_id: ItemId, payload: ReleaseIn, response: HttpResponse):
    """End the call named (`call_id`), then queue the agent again (`then`: `queue`, the
    default), or wrap-up, or offline. A call that is not the agent's current call answers
    409 (saying what became of it and what the agent is doing), unless it ended by this
    same request, which is answered as it first was."""
    outcome = api_operations(request).release(agent_id, then=payload.then, call_id=payload.call_id)
    if not outcome.replayed:
        note_change(request, "agent.release", agent_id, f"call {payload.call_id}, then {payload.then}")
    return _agent_and_call(response, outcome)


@endpoints.post(
    "agents/{agent_id}/offline",
    url_name="api-agent-offline",
    operation_id="takeAgentOffline",
    summary="Log an agent off",
    **answers(
        {
            200: (
                AgentOnlyOut,
                "The agent, offline. `Idempotent-Replayed: true` when this very request had logged them off already.",
                ("Idempotent-Replayed",),
            )
        },
        *AGENT_CHANGES,
    ),
)
def agent_offline(request: HttpRequest, agent_id: ItemId, payload: VersionIn, response: HttpResponse):
    """Take the agent out of every queue and mark them offline, from the `version` named:
    an agent offline already at that version, attending a call, or changed since answers 409."""
    outcome = api_operations(request).log_off(agent_id, expected_version=payload.version)
    if not outcome.replayed:
        note_change(request, "agent.offline", agent_id, "offline")
    _replayed(response, outcome.replayed)
    return {"agent": agent_to_json(cast(Agent, outcome.agent))}


@endpoints.post(
    "agents/{agent_id}/not-ready",
    url_name="api-agent-not-ready",
    operation_id="setAgentNotReady",
    summary="Set an agent not ready, with a reason",
    **answers(
        {
            200: (
                AgentOnlyOut,
                "The agent, not ready: logged in, offered no call. `Idempotent-Replayed: true` when this very "
                "request had set them not ready already.",
                ("Idempotent-Replayed",),
            )
        },
        *AGENT_CHANGES,
    ),
)
def agent_not_ready(request: HttpRequest, agent_id: ItemId, payload: NotReadyIn, response: HttpResponse):
    """Take the agent out of every queue, logged in but offered no call, for `reason` (one
    of AGENT_NOT_READY_REASONS), from the `version` named. An agent on a call answers 409:
    end the call first. Made available again with /available."""
    outcome = api_operations(request).set_not_ready(agent_id, payload.reason, expected_version=payload.version)
    if not outcome.replayed:
        note_change(request, "agent.not_ready", agent_id, payload.reason)
    _replayed(response, outcome.replayed)
    return {"agent": agent_to_json(cast(Agent, outcome.agent))}


def _replayed(response: HttpResponse, replayed: bool) -> None:
    response["Idempotent-Replayed"] = "true" if replayed else "false"


def _agent_and_call(response: HttpResponse, outcome: Outcome) -> dict:
    _replayed(response, outcome.replayed)
    return {
        "agent": agent_to_json(cast(Agent, outcome.agent)),
        "call": call_to_json(outcome.call) if outcome.call else None,
    }


# --- queues ---------------------------------------------------------------------------


@endpoints.get(
    "queues",
    url_name="api-queues",
    operation_id="listQueues",
    summary="Queues and callers waiting",
    **answers({200: (QueuesOut, "Every skill combination's queue, and the callers waiting.", ())}, *READS),
)
def queues(request: HttpRequest):
    """Every queue combination with its depth and the age of its oldest agent, and the
    number of callers waiting (the count stops at 1000: `callers_waiting_capped`)."""
    center = get_call_center()
    infos = center.queues()
    waiting, more = center.line.count_waiting()
    dimensions = center.catalog.names
    return {
        "queues": [queue_to_json(info, dimensions) for info in infos],
        "callers_waiting": waiting,
        "callers_waiting_capped": more,
    }
