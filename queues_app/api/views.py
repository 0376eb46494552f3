"""The JSON API for the phone system: HTTP only (parse, validate, call the router, answer).

Authentication, allowed methods, permissions and error answers are in `api_auth`.
"""

from __future__ import annotations

import hashlib
import json
import re

from django.http import JsonResponse

from queues_app.actions import Operations
from queues_app.agents import keys
from queues_app.agents.records import QueueOrder
from queues_app.agents.router import Router
from queues_app.agents.skills import SkillError, validate_preferences
from queues_app.api.auth import api_endpoint, invalid
from queues_app.api.serializers import agent_to_json, call_to_json, queue_to_json, shipment_to_json
from queues_app.ddb.errors import Conflict, NotFound
from queues_app.shipments.queue import SPILLOVER_QUEUE, ShipmentQueue

IDEMPOTENCY_KEY_MAX = 255
RELEASE_THEN = ("queue", "wrap_up", "offline")
CALL_FIELDS = ("preferences", "priority", "order")


def get_router() -> Router:
    return Router()


def api_operations(request):
    """Changes made through the API are recorded in the audit trail as the token's user."""
    return Operations.for_request(request, source="api")


def read_json(request, *, required: bool) -> dict:
    """The request body as a JSON object; an empty body is {} unless `required`."""
    raw = request.body
    if not raw.strip():
        if required:
            raise invalid({"body": "a JSON object is required"}, "The request body is empty; send a JSON object.")
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise invalid({"body": f"not valid JSON: {exc}"}, "The request body is not valid JSON.") from exc
    if not isinstance(body, dict):
        raise invalid({"body": "must be a JSON object"}, "The request body must be a JSON object.")
    return body


def _unknown_fields(body: dict, known: tuple[str, ...], problems: dict[str, str]) -> None:
    for name in sorted(set(body) - set(known)):
        problems[name] = f"unknown field; allowed: {', '.join(known)}"


# --- calls ----------------------------------------------------------------------------


@api_endpoint("POST")
def create_call(request):
    """Create a call: assigned at once (201, status "assigned") or waiting (201, "waiting").
    With an `Idempotency-Key` header seen before, the first call again (200)."""
    router = get_router()
    body = read_json(request, required=True)
    problems: dict[str, str] = {}
    _unknown_fields(body, CALL_FIELDS, problems)

    preferences = body.get("preferences")
    if "preferences" not in body:
        problems["preferences"] = "required (use {} for any agent)"
    elif not isinstance(preferences, dict):
        problems["preferences"] = 'must be an object such as {"language": "Spanish", "gender": "any"}'
    else:
        try:
            validate_preferences(router.catalog, preferences)
        except SkillError as exc:
            problems[exc.field or "preferences"] = exc.message

    priority = body.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= keys.MAX_PRIORITY:
        problems["priority"] = f"must be a whole number from 0 to {keys.MAX_PRIORITY}"

    order = body.get("order")
    if order is not None and order not in QueueOrder.ALL:
        problems["order"] = f"must be one of {', '.join(QueueOrder.ALL)}"

    key = _idempotency_key(request, problems)
    if problems:
        raise invalid(problems)

    # Keys are scoped to the token's user, so two clients choosing the same key never
    # receive each other's call.
    scoped_key = f"api:{request.user.pk}:{key}" if key else None
    call, created = api_operations(request).create_call(
        preferences, priority=priority, order=order, idempotency_key=scoped_key
    )
    response = JsonResponse(call_to_json(call), status=201 if created else 200)
    response["Location"] = f"/api/calls/{call.call_id}"
    if key:
        response["Idempotent-Replayed"] = "false" if created else "true"
    return response


@api_endpoint("GET")
def call_detail(request, call_id: str):
    return JsonResponse(call_to_json(get_router().get_call(call_id)))


# --- shipments ------------------------------------------------------------------------

SHIPMENT_FIELDS = ("data", "tenant", "priority", "delay_seconds")
MAX_DELAY_SECONDS = 900  # as SQS delay queues: at most 15 minutes
TENANT = re.compile(r"[A-Za-z0-9._-]{1,64}")


@api_endpoint("POST")
def create_shipment(request):
    """Enqueue a shipment: 201 with the queue it went to ("live", or "spillover" when its
    tenant is over its rate), 429 with Retry-After while the live queue is past its
    bound. With an `Idempotency-Key` seen before, the first shipment again (200)."""
    body = read_json(request, required=True)
    problems: dict[str, str] = {}
    _unknown_fields(body, SHIPMENT_FIELDS, problems)
    data = body.get("data")
    if not isinstance(data, dict):
        problems["data"] = "required: an object with the shipment's fields"
    tenant = body.get("tenant")
    if tenant is not None and (not isinstance(tenant, str) or not TENANT.fullmatch(tenant)):
        problems["tenant"] = "1 to 64 letters, digits, '.', '_' or '-'"
    priority = body.get("priority", 0)
    if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= keys.MAX_PRIORITY:
        problems["priority"] = f"must be a whole number from 0 to {keys.MAX_PRIORITY}"
    delay = body.get("delay_seconds", 0)
    if not isinstance(delay, int | float) or isinstance(delay, bool) or not 0 <= delay <= MAX_DELAY_SECONDS:
        problems["delay_seconds"] = f"must be a number of seconds from 0 to {MAX_DELAY_SECONDS}"
    key = _idempotency_key(request, problems)
    if problems:
        raise invalid(problems)
    shipment_id = "k" + hashlib.sha256(f"api:{request.user.pk}:{key}".encode()).hexdigest()[:23] if key else None
    if shipment_id:
        try:
            existing = ShipmentQueue().get(shipment_id)
        except NotFound:
            existing = None
        if existing:
            return _shipment_response(existing, existing.queue == SPILLOVER_QUEUE, status=200, key=key)
    try:
        admitted = api_operations(request).submit_shipment(
            data, tenant=tenant, priority=priority, delay_seconds=delay, shipment_id=shipment_id
        )
    except Conflict:
        if not shipment_id:
            raise
        existing = ShipmentQueue().get(shipment_id)  # a retry with the same key won the race
        return _shipment_response(existing, existing.queue == SPILLOVER_QUEUE, status=200, key=key)
    return _shipment_response(admitted.shipment, admitted.sidelined, status=201, key=key)


def _shipment_response(shipment, sidelined: bool, *, status: int, key: str | None) -> JsonResponse:
    response = JsonResponse({**shipment_to_json(shipment), "sidelined": sidelined}, status=status)
    response["Location"] = f"/api/shipments/{shipment.shipment_id}"
    if key:
        response["Idempotent-Replayed"] = "true" if status == 200 else "false"
    return response


@api_endpoint("GET")
def shipment_detail(request, shipment_id: str):
    return JsonResponse(shipment_to_json(ShipmentQueue().get(shipment_id)))


def _idempotency_key(request, problems: dict[str, str]) -> str | None:
    key = request.headers.get("Idempotency-Key")
    if key is None:
        return None
    key = key.strip()
    if not key or len(key) > IDEMPOTENCY_KEY_MAX:
        problems["Idempotency-Key"] = f"must be 1 to {IDEMPOTENCY_KEY_MAX} characters"
    return key


# --- agents ---------------------------------------------------------------------------


def _agent_and_call(agent, call) -> JsonResponse:
    return JsonResponse({"agent": agent_to_json(agent), "call": call_to_json(call) if call else None})


@api_endpoint("POST")
def agent_available(request, agent_id: str):
    """Give the agent the longest-waiting caller they fit, or queue them (call null)."""
    body = read_json(request, required=False)
    problems: dict[str, str] = {}
    _unknown_fields(body, (), problems)
    if problems:
        raise invalid(problems)
    agent, call = api_operations(request).make_available(agent_id)
    return _agent_and_call(agent, call)


@api_endpoint("POST")
def agent_release(request, agent_id: str):
    """End the agent's call, then queue them again, or wrap-up, or offline."""
    body = read_json(request, required=False)
    problems: dict[str, str] = {}
    _unknown_fields(body, ("then",), problems)
    then = body.get("then", "queue")
    if then not in RELEASE_THEN:
        problems["then"] = f"must be one of {', '.join(RELEASE_THEN)}"
    if problems:
        raise invalid(problems)
    agent, call = api_operations(request).release(agent_id, then=then)
    return _agent_and_call(agent, call)


@api_endpoint("POST")
def agent_offline(request, agent_id: str):
    """Take the agent out of every queue and mark them offline."""
    body = read_json(request, required=False)
    problems: dict[str, str] = {}
    _unknown_fields(body, (), problems)
    if problems:
        raise invalid(problems)
    return JsonResponse({"agent": agent_to_json(api_operations(request).log_off(agent_id))})


# --- queues ---------------------------------------------------------------------------


@api_endpoint("GET")
def queues(request):
    """Every queue combination with its depth and the age of its oldest agent, and the
    number of callers waiting."""
    router = get_router()
    infos = router.queues()
    waiting, more = router.line.count_waiting()
    dimensions = router.catalog.names
    return JsonResponse(
        {
            "queues": [queue_to_json(info, dimensions) for info in infos],
            "callers_waiting": waiting,
            "callers_waiting_capped": more,  # True: at least this many (the count stops at 1000)
        }
    )
