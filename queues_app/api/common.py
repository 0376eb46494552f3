"""What the API's operations share: the call centre, the audited `Operations` acting as
the token, the log line of a change, the `Idempotent-Replayed` header, and the answer of
a change that leaves an agent and perhaps a call."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from typing import cast

from django.http import HttpResponse

from queues_app.agents.records import Agent
from queues_app.api.auth import actor_of
from queues_app.calls.records import Outcome
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.errors import KeyReused
from queues_app.operations import Operations
from queues_app.serializers import agent_to_json, call_to_json

log = logging.getLogger(__name__)

KEY_SHOWN = 64  # characters of a reused idempotency key named in the refusal


def get_call_center() -> CallCenter:
    return CallCenter()


def api_operations(request) -> Operations:
    """Changes made through the API are recorded in the audit trail as the token's user
    and the token (`sam via token phone system (ab12cd34)`), from source `api`."""
    return Operations(actor_of(request), "api", trace_id=getattr(request, "trace_id", None))


def note_change(request, action: str, item_id: str, outcome: str) -> None:
    """The log line of a change made through the API, naming the token that made it."""
    log.info("api %s %s by %s: %s", action, item_id, actor_of(request), outcome)


def replayed(response: HttpResponse, replayed: bool) -> None:
    response["Idempotent-Replayed"] = "true" if replayed else "false"


def agent_and_call(response: HttpResponse, outcome: Outcome) -> dict:
    replayed(response, outcome.replayed)
    return {
        "agent": agent_to_json(cast(Agent, outcome.agent)),
        "call": call_to_json(outcome.call) if outcome.call else None,
    }


@contextmanager
def naming_key(key: str | None):
    """A reused idempotency key is refused naming it (its first characters)."""
    try:
        yield
    except KeyReused as exc:
        shown = key if key and len(key) <= KEY_SHOWN else f"{(key or '')[:KEY_SHOWN]}…"
        raise KeyReused(f"Idempotency-Key {shown!r}: {exc.message[0].lower()}{exc.message[1:]}") from exc
