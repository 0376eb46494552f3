"""What the OpenAPI document says of every operation, written once: the answers and
refusals each may give (`answers`), their headers, the trace id every operation takes,
and the query parameters the lists share. Each resource's module (calls, agents...)
names its own answers with these."""

from __future__ import annotations

from typing import Any

from ninja import Query

from queues_app.api.schemas import PAGE_MAX, Problem

DESCRIPTION = """\
The JSON API of Switchboard for the phone system and other machines: place callers,
make agents available, release them and log them off, enqueue shipments; read calls,
agents, shipments and queues; list the calls waiting (in line order) or assigned, and
the agents (by status or skill), a page at a time with `cursor`/`next_cursor`.

Every request needs `Authorization: Bearer <token>` (`python manage.py create_api_token`).
Bodies are `application/json` (415 otherwise). Every refusal is JSON: `{"error",
"message", "hint", "fields"}`; `fields` names each bad input field. Send
`Idempotency-Key` when creating, and the same key when retrying.

Instead of polling waiting calls, register a callback (`PUT /api/callback`): the calls
the token creates then POST `call.assigned`, `call.abandoned` and `call.relaxed` events
to it, signed as Standard Webhooks are (the `callEvent` webhook below; docs/callbacks.md).
"""

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

# The refusals of each kind of operation.
READS = (401, 429, 503)
CHANGES = (400, 401, 403, 413, 415, 429, 503)
ITEM_CHANGES = (*CHANGES, 404, 409)  # a change of one item named in the path

TRACE_PARAMETER = {
    "in": "header",
    "name": "X-Trace-Id",
    "required": False,
    "description": "Up to 64 letters, digits and `._:-`, echoed in the answer and carried into the log and "
    "the audit trail; anything else is replaced by a made-up id.",
    "schema": {"type": "string"},
}


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
    return {"response": response, "openapi_extra": {"responses": documented, "parameters": [dict(TRACE_PARAMETER)]}}


# --- the query parameters of the lists ----------------------------------------------------

CURSOR = Query(None, description="`next_cursor` of the previous page; leave out for the first page.")


def per_page(items: str, fewer: str = "a page may hold fewer") -> Any:
    """The `limit` of a list: 50 unless asked."""
    return Query(50, description=f"{items} per page, 1 to {PAGE_MAX} ({fewer}).")
