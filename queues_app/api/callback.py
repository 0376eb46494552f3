"""/api/callback: where this token's call events go (read, register, remove), and what
is sent there (`CallEventOut`, the OpenAPI document's `callEvent` webhook); with its
inputs and outputs."""

from __future__ import annotations

from typing import ClassVar, Literal

from django.http import HttpRequest
from ninja import Router, Schema
from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from queues_app.api.auth import current_token
from queues_app.api.common import note_change
from queues_app.api.openapi import CHANGES, READS, answers
from queues_app.api.schemas import CallOut, InputSchema
from queues_app.ddb.client import default
from queues_app.ddb.clock import to_iso
from queues_app.models import ApiToken
from queues_app.webhooks.destinations import url_refusal
from queues_app.webhooks.events import AGENT_EVENT_TYPES, EVENT_TYPES, listen
from queues_app.webhooks.signing import ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, standard_key

router = Router()


# --- inputs and outputs ------------------------------------------------------------------


class CallbackIn(InputSchema):
    """Where this token's call events go, and the secret that signs them."""

    url: str = Field(
        min_length=1,
        max_length=500,
        description="An absolute `https://` URL (`http://` too where `CALLBACK_ALLOW_HTTP` is on, as in "
        "local development). Events are POSTed to it as JSON.",
        examples=["https://phones.example.com/switchboard/events"],
    )
    secret: str | None = Field(
        None,
        max_length=200,
        description="A Standard Webhooks secret: `whsec_` and the base64 of 24 or more random bytes; leave out "
        "to get a new random one.",
        examples=["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    )
    rotate: bool = Field(
        False,
        strict=True,
        description="Keep the secret this replaces signing too, for `CALLBACK_SECRET_OVERLAP_HOURS` (24): "
        "every delivery meanwhile carries both signatures, so the receiver can switch without missing one. "
        "Without it the old secret stops at once.",
    )

    agents: bool = Field(
        False,
        strict=True,
        description="Also send every agent's changes of status (`agent.status_changed`, `agent.disconnected`), "
        "whoever made them. Without it (or `false`) only this token's calls' events.",
    )

    PROBLEMS: ClassVar[dict[str, str]] = {
        "url": "must be an absolute https:// URL of at most 500 characters",
        "agents": "must be true or false",
        "secret": "must be whsec_ followed by the base64 of 24 or more random bytes (leave out to get one)",
        "rotate": "must be true or false",
    }

    @field_validator("secret")
    @classmethod
    def _standard_secret(cls, secret: str | None) -> str | None:
        if secret is not None:
            try:
                standard_key(secret)
            except ValueError as exc:
                problem = cls.PROBLEMS["secret"]
                raise PydanticCustomError(
                    "secret", "{message}", {"problems": {"secret": problem}, "message": problem}
                ) from exc
        return secret

    @field_validator("url")
    @classmethod
    def _callback_url(cls, url: str) -> str:
        from django.conf import settings
        from django.core.exceptions import ValidationError
        from django.core.validators import URLValidator

        schemes = ["https", "http"] if settings.SWITCHBOARD_CALLBACK_ALLOW_HTTP else ["https"]
        try:
            URLValidator(schemes=schemes)(url)
        except ValidationError as exc:
            problem = f"must be an absolute {' or '.join(s + '://' for s in schemes)} URL"
            raise PydanticCustomError("url", "{message}", {"problems": {"url": problem}, "message": problem}) from exc
        if refused := url_refusal(url):
            problem = f"refused: {refused}"
            raise PydanticCustomError("url", "{message}", {"problems": {"url": problem}, "message": problem})
        return url


class CallbackOut(Schema):
    url: str | None = Field(description="Where this token's call events are POSTed; null: nowhere.")
    events: list[str] = Field(
        description="The event types sent: this token's calls' (`call.assigned`, `call.abandoned`, ...), and with "
        "`agents`, `agent.status_changed` and `agent.disconnected`."
    )
    agents: bool = Field(False, description="Whether every agent's changes of status are sent too.")
    previous_secret_until: str | None = Field(
        None, description="After a rotation: until when the previous secret signs every delivery too (ISO 8601)."
    )


class CallbackSetOut(CallbackOut):
    secret: str = Field(
        description="Signs every event (Standard Webhooks, `whsec_...`); keep it, it is not shown again."
    )


class CallEventOut(Schema):
    """What a token's callback URL receives (POST, JSON), signed as Standard Webhooks are:
    `webhook-signature: v1,<base64>` is HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`."""

    id: str = Field(description="The event's id: the same on every delivery of this event (drop repeats by it).")
    type: Literal[
        "call.assigned",
        "call.answered",
        "call.missed",
        "call.transferred",
        "call.abandoned",
        "call.relaxed",
        "call.refused",
        "call.overflowed",
        "call.callback_requested",
        "call.callback_due",
        "call.callback_retry",
        "call.callback_failed",
    ]
    created_at: str = Field(description="When the change happened (ISO 8601, UTC).")
    call: CallOut = Field(description="The call right after the change, as `GET /api/calls/{call_id}` shows it.")


class AgentRefOut(Schema):
    agent_id: str
    name: str = Field(description="The agent's name when the change was made.")


class AgentEventOut(Schema):
    """What a callback registered with `"agents": true` receives of every agent's change of
    status, whoever made it, signed as call events are."""

    id: str = Field(description="The event's id: the same on every delivery of this event (drop repeats by it).")
    type: Literal["agent.status_changed", "agent.disconnected"]
    created_at: str = Field(description="When the change happened (ISO 8601, UTC).")
    agent: AgentRefOut
    from_: str = Field(alias="from", description="The status left (`GET /api/agents/{agent_id}`'s `status`).")
    from_reason: str | None = Field(description="The not-ready reason left; null when it was no not ready.")
    to: str = Field(description="The status now.")
    reason: str | None = Field(description="Why not ready (`disconnected`: no heartbeat); null otherwise.")
    at: str = Field(description="When (ISO 8601, UTC).")
    version: int | None = Field(
        description="The agent's version after the change: an agent's events in this order chain (`from` is the "
        "previous `to`). Null only once, for an assignment from a queue written before versions were kept."
    )
    call_id: str | None = Field(description="The call taken or left; null when none.")


# --- operations ------------------------------------------------------------------------


def callback_json(token: ApiToken) -> dict:
    until = token.previous_secret_until()
    return {
        "url": token.callback_url or None,
        "events": [*EVENT_TYPES, *(AGENT_EVENT_TYPES if token.callback_agents else ())],
        "agents": token.callback_agents,
        "previous_secret_until": to_iso(until) if until else None,
    }


@router.get(
    "callback",
    url_name="api-callback",
    operation_id="getCallback",
    summary="Read this token's callback",
    **answers({200: (CallbackOut, "The callback URL (null: none) and the events sent to it.", ())}, *READS),
)
def callback_detail(request: HttpRequest):
    """Where this token's call events go. The secret is shown only when it is set."""
    return callback_json(current_token(request))


@router.put(
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
    token = current_token(request)
    secret = token.set_callback(payload.url, payload.secret, rotate=payload.rotate, agents=payload.agents)
    listen(default(), token.pk, payload.agents)
    note_change(request, "callback.rotate" if payload.rotate else "callback.set", str(token.pk), payload.url)
    return {**callback_json(token), "secret": secret}


@router.delete(
    "callback",
    url_name="api-callback",
    operation_id="removeCallback",
    summary="Remove this token's callback",
    **answers({200: (CallbackOut, "No callback any more: events not yet delivered go to the DLQ.", ())}, *CHANGES),
)
def remove_callback(request: HttpRequest):
    """No more events for this token's calls; those not yet delivered fail and end in the
    callbacks queue's DLQ, from where a supervisor may restore them once a callback is set."""
    token = current_token(request)
    token.clear_callback()
    listen(default(), token.pk, False)
    note_change(request, "callback.remove", str(token.pk), "removed")
    return callback_json(token)


def webhooks(components: dict) -> dict:
    """The callback's request (OpenAPI 3.1 `webhooks`): what Switchboard POSTs to a
    token's callback URL; its schemas join `components`."""
    for model in (CallEventOut, AgentEventOut):
        event = model.model_json_schema(ref_template="#/components/schemas/{model}", by_alias=True)
        components.update(event.pop("$defs", {}))
        components[model.__name__] = event
    return {
        "callEvent": _webhook(
            "CallEventOut",
            "A call of this token was assigned, answered, missed, transferred, abandoned, relaxed, refused or "
            "overflowed",
            "its calls' events",
        ),
        "agentEvent": _webhook(
            "AgentEventOut",
            "An agent's status changed (a callback registered with `agents`)",
            'every agent\'s changes of status, when it asked for them with `"agents": true`',
        ),
    }


def _webhook(schema: str, summary: str, what: str) -> dict:
    header = {"required": True, "schema": {"type": "string"}}
    return {
        "post": {
            "summary": summary,
            "description": f"Sent to the URL registered with `PUT /api/callback` ({what}), at least once: retried "
            "with backoff until a 2xx answer (5 s timeout), then dead-lettered. docs/callbacks.md shows "
            "how to check the signature.",
            "parameters": [
                {"in": "header", "name": ID_HEADER, "description": "The event's id (Standard Webhooks).", **header},
                {"in": "header", "name": TIMESTAMP_HEADER, "description": "Unix seconds, signed.", **header},
                {
                    "in": "header",
                    "name": SIGNATURE_HEADER,
                    "description": "`v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>` with the "
                    "secret's key, as Standard Webhooks has it; during a rotation, one such signature per "
                    "secret, space-separated.",
                    **header,
                },
            ],
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
            },
            "responses": {"2XX": {"description": "Received; any other answer is retried."}},
        }
    }
