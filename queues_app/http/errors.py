"""Every refusal and failure a person or a program is told about, in one place.

- `UserError`: a status, a title, a message and a hint (and the bad `fields`, what the
  items are `current`ly, a `trace_id` on 5xx): what pages, admin and API all show;
- `describe`: a domain error (`DynamoError`, `SkillError`) as a `UserError`, cleaned of
  what only the operators may see (http/redact.py) and logged in full with the trace id
  when it was cleaned or is a server-side failure;
- the refusals that are not domain errors (no token, a body too large, no such page...);
- `json_answer`: the JSON answer of a `UserError`, with its headers, for the API, /metrics
  and any request that asks for JSON (pages draw the same `UserError`:
  http/middleware.problem_answer).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.http import HttpResponse, JsonResponse

from queues_app.agents.skills import SkillError
from queues_app.ddb import errors
from queues_app.ddb.numbers import ExactJSONEncoder
from queues_app.http.redact import bounded, scrub, shortened
from queues_app.serializers import current_json
from queues_app.tracing import current_trace_id

log = logging.getLogger(__name__)

# Retry-After of a 503 whose problem names none: every 503 says when to try again.
DEFAULT_RETRY_AFTER_SECONDS = 5


@dataclass
class UserError:
    status: int
    title: str
    message: str
    hint: str = ""
    retry_after: int | None = None
    fields: dict[str, str] | None = None  # input field -> what is wrong with it
    trace_id: str | None = None  # on 5xx: where the operators find the details in the log
    current: dict | None = None  # on a conflict: the items named, as they are now, by kind
    refusal: dict | None = None  # a caller refused: why ("closed", "full"), the line, when it opens

    def __post_init__(self) -> None:
        self.bound()

    def bound(self) -> None:
        """Every text quotes at most QUOTE_MAX characters of a value sent (field names are
        values sent too: an unknown key, a skill dimension)."""
        self.message = bounded(self.message)
        self.hint = bounded(self.hint)
        if self.fields:
            self.fields = {shortened(str(name)): bounded(str(text)) for name, text in self.fields.items()}

    def as_json(self) -> dict:
        body: dict[str, object] = {"error": self.title, "message": self.message}
        if self.hint:
            body["hint"] = self.hint
        if self.fields:
            body["fields"] = dict(self.fields)
        if self.current:
            body["current"] = self.current
        if self.refusal:
            body.update(self.refusal)
        if self.trace_id:
            body["trace_id"] = self.trace_id
        return body

    def as_text(self) -> str:
        """The same, as plain text (for a client that reads text, such as a scraper)."""
        lines = [f"{self.status} {self.title}: {self.message}"]
        if self.hint:
            lines.append(self.hint)
        if self.trace_id:
            lines.append(f"trace id: {self.trace_id}")
        return "\n".join(lines) + "\n"


class ApiProblem(Exception):
    """Raised where a request is read (the API's parser, lists, token) to answer with
    this problem instead."""

    def __init__(self, problem: UserError):
        super().__init__(problem.message)
        self.problem = problem


def invalid_input(fields: dict[str, str], message: str | None = None) -> UserError:
    """Input that failed validation: 400, naming each field and what is wrong with it."""
    fields = {shortened(str(name)): bounded(str(problem)) for name, problem in fields.items()}
    if message is None:
        message = "; ".join(f"{name}: {problem}" if name else problem for name, problem in fields.items())
    return UserError(400, "Invalid request", message, fields=fields)


def invalid(fields: dict[str, str], message: str | None = None) -> ApiProblem:
    return ApiProblem(invalid_input(fields, message))


# --- domain errors -----------------------------------------------------------------------


def describe(exc: errors.DynamoError | SkillError) -> UserError:
    """What to tell a person or an API client about `exc`: a status and sentences that
    never carry ARNs, account ids, endpoints or stack traces. A server-side problem (5xx),
    or one whose text had to be cleaned, is logged in full with the trace id."""
    told = _told(exc)
    full = told.message
    problem = _scrubbed(told)
    trace_id = current_trace_id.get()
    if problem.status >= 500:
        problem.trace_id = trace_id
    if problem.status >= 500 or problem.message != full:
        log.warning(
            "%s (%s) [trace %s]: %s; endpoint: %s; detail: %s",
            problem.title,
            type(exc).__name__,
            trace_id or "-",
            exc.message,
            getattr(exc, "endpoint", None) or _endpoint(),
            getattr(exc, "detail", None) or {},
        )
    return problem


def _scrubbed(problem: UserError) -> UserError:
    problem.message = scrub(problem.message)
    problem.hint = scrub(problem.hint)
    if problem.fields:
        problem.fields = {name: scrub(text) for name, text in problem.fields.items()}
    problem.bound()
    return problem


@dataclass(frozen=True)
class Told:
    """How a kind of domain error is told: its status, title and hint; its message is the
    error's own unless `message` says otherwise, and `more` adds what the answer carries
    besides (the items as they are now, the field at fault, when to try again)."""

    status: int
    title: str
    hint: str = ""
    retry_after: int | None = None
    message: Callable[[Any], str] = lambda exc: exc.message
    more: Callable[[Any], dict] = lambda exc: {}


# Each domain error, most specific first, and how it is told; any other DynamoError is a 500.
TOLD: list[tuple[type[Exception], Told]] = [
    (
        errors.TableMissing,
        Told(
            503,
            "DynamoDB table missing",
            "Create the tables with: python manage.py dynamo_tables create "
            "(and check that DYNAMODB_ENDPOINT_URL and AWS_REGION name the right place).",
            retry_after=30,
            message=lambda exc: f"The table {exc.table_name!r} does not exist.",
        ),
    ),
    (
        errors.Unavailable,
        Told(
            503,
            "DynamoDB unavailable",
            "Start the local DynamoDB with `make run`, or check DYNAMODB_ENDPOINT_URL, AWS_REGION and the AWS "
            "credentials.",
            retry_after=5,
        ),
    ),
    (
        errors.Backpressure,
        Told(
            429,
            "Queue backlog over its bound",
            "The queue is refusing new work until it drains; the Retry-After header says when to try again.",
            more=lambda exc: {"retry_after": exc.retry_after},
        ),
    ),
    (
        errors.RateLimited,
        Told(
            429,
            "Rate limit exceeded",
            "Each API token may make API_RATE_LIMIT requests; the Retry-After header says when to go on.",
            more=lambda exc: {"retry_after": exc.retry_after},
        ),
    ),
    (
        errors.TenantOverRate,
        Told(
            429,
            "Tenant over the queue's rate",
            "A named shipment queue takes at most its tenant_rate shipments a second from each tenant; the "
            "Retry-After header says when to send more.",
            more=lambda exc: {"retry_after": exc.retry_after},
        ),
    ),
    (errors.Throttled, Told(503, "DynamoDB is busy", retry_after=2)),
    (errors.NotFound, Told(404, "Not found")),
    (
        errors.Refused,
        Told(
            409,
            "Caller refused",
            "The line takes no caller now: route the caller elsewhere or tell them when it opens.",
            more=lambda exc: {"refusal": exc.as_json()},
        ),
    ),
    (
        errors.Conflict,
        Told(
            409,
            "Conflict",
            "Reload to see the current state and try again.",
            more=lambda exc: {"current": current_json(exc.now)},
        ),
    ),
    (
        errors.KeyReused,
        Told(
            422,
            "Idempotency key reused",
            "Send a new Idempotency-Key for a new request; resend a key only with the request it was made for.",
            more=lambda exc: {"fields": {"Idempotency-Key": "was used for a different request"}},
        ),
    ),
    (
        errors.InvalidRequest,
        Told(400, "Invalid request", more=lambda exc: {"fields": _field_problem(exc)} if exc.field else {}),
    ),
]


def _field_problem(exc: errors.InvalidRequest) -> dict[str, str]:
    """The field a refusal names, with what is wrong with it (the message without the name)."""
    field = exc.field or ""
    return {field: exc.message.removeprefix(f"{field}: ")}


def _told(exc: errors.DynamoError | SkillError) -> UserError:
    if isinstance(exc, SkillError):
        return invalid_input({exc.field: exc.message} if exc.field else {}, exc.message)
    for kind, told in TOLD:
        if isinstance(exc, kind):
            answer = {"hint": told.hint, "retry_after": told.retry_after, **told.more(exc)}
            return UserError(told.status, told.title, told.message(exc), **answer)
    return UserError(500, "DynamoDB error", exc.message)


def _endpoint() -> str:
    """For the log only."""
    return settings.DYNAMODB_ENDPOINT_URL or f"AWS DynamoDB ({settings.AWS_REGION})"


# --- refusals that are not domain errors ---------------------------------------------------


def unauthenticated(message: str) -> UserError:
    return UserError(
        401,
        "Authentication required",
        message,
        hint="Send the header `Authorization: Bearer <token>`; "
        "create a token with `python manage.py create_api_token <username>`.",
    )


def forbidden(message: str) -> UserError:
    return UserError(403, "Forbidden", message)


def not_allowed(message: str) -> UserError:
    """A page's 403: the person's role may look but not act."""
    return UserError(
        403, "Not allowed", message, "Ask an administrator for the supervisor role if you need to act here."
    )


def page_not_found(message: str) -> UserError:
    return UserError(404, "Not found", message, "Start again from the overview.")


def no_such_endpoint(path: str) -> UserError:
    return UserError(404, "Not found", f"There is no API endpoint at {path}.")


def method_not_allowed(method: str, allowed: list[str]) -> UserError:
    return UserError(405, "Method not allowed", f"{method} is not allowed here; use {' or '.join(allowed)}.")


def too_large(limit: int) -> UserError:
    return UserError(
        413,
        "Request body too large",
        f"The request body is larger than {limit:,} bytes.",
        hint="Send less data: a shipment's data must fit in one DynamoDB item.",
    )


def unsupported_media_type(sent: str) -> UserError:
    shown = repr(sent[:100]) if sent else "none"
    return UserError(
        415,
        "Unsupported media type",
        f"The request body must be application/json; its Content-Type was {shown}.",
        hint="Send the body as JSON with `Content-Type: application/json` (a charset, when given, must be utf-8).",
    )


def unreadable_request() -> UserError:
    """Django could not take the request at all (its Host header, a malformed cookie)."""
    return UserError(400, "Bad request", "The request could not be read: check its Host header and its headers.")


def refused(status: int, message: str) -> UserError:
    """A refusal the framework made, told with its own words."""
    return UserError(status, "Request refused", message)


def internal_error(message: str = "The server failed to handle this request; it has been logged.") -> UserError:
    return UserError(500, "Internal error", message)


def page_failed() -> UserError:
    return UserError(500, "Something went wrong", "The server could not answer this request.", "Try again.")


# --- the answer ----------------------------------------------------------------------------


def with_headers(response: HttpResponse, problem: UserError, *, allow: list[str] | None = None) -> HttpResponse:
    """The headers a problem's answer carries, whatever its body: when to retry, how to
    authenticate, which methods to use."""
    retry_after = problem.retry_after
    if not retry_after and problem.status == 503:
        retry_after = DEFAULT_RETRY_AFTER_SECONDS
    if retry_after:
        response["Retry-After"] = str(retry_after)
    if problem.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="switchboard"'
    if allow:
        response["Allow"] = ", ".join(allow)
    return response


def json_answer(problem: UserError, *, allow: list[str] | None = None) -> JsonResponse:
    """`{"error", "message", "hint", "fields", "current", "trace_id"}` with the problem's
    status and headers. A conflict's `current` may hold shipment data: its numbers are
    written exactly."""
    response = JsonResponse(problem.as_json(), status=problem.status, encoder=ExactJSONEncoder)
    with_headers(response, problem, allow=allow)
    return response
