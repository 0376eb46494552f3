"""Domain errors mapped to what a person (or a machine on the API) is told.

The one place where a `DynamoError` becomes an HTTP status and a sentence, and where
what AWS said is cleaned of what nobody outside the operators should see: ARNs (with
role names), account ids, access key ids, endpoints and stack traces are replaced by a
placeholder in every message shown on a page or sent to an API client. The full text is
logged with the request's trace id, which 5xx answers carry for finding it.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

from queues_app.agents.skills import SkillError
from queues_app.ddb import errors
from queues_app.serializers import current_json
from queues_app.tracing import current_trace_id

log = logging.getLogger(__name__)

# An answer quotes at most this many characters of a value it was sent (a field's name, a
# value in quotes in a message); a 200 KB value gets a small refusal, not a copy of itself.
QUOTE_MAX = 100
ELLIPSIS = "…"


def shortened(text: str, limit: int = QUOTE_MAX) -> str:
    """`text` cut to `limit` characters, with an ellipsis when it was cut."""
    return text if len(text) <= limit else text[:limit] + ELLIPSIS


def bounded(text: str) -> str:
    """`text` with every quoted value in it ('...' or "...", as `repr` and the messages
    write them) cut to QUOTE_MAX characters. A quote opens only after a non-word
    character (so the apostrophe of "agent's" opens nothing); one never closed runs to
    the end. One pass, linear in the text however it is made."""
    if len(text) <= QUOTE_MAX:
        return text
    out: list[str] = []
    start = 0  # of the text not yet copied
    at = 0
    while at < len(text):
        mark = text[at]
        if mark not in "'\"" or (at > 0 and (text[at - 1].isalnum() or text[at - 1] == "_")):
            at += 1
            continue
        end = _closing(text, at + 1, mark)
        inside = text[at + 1 : end]
        if len(inside) > QUOTE_MAX:
            out.append(text[start : at + 1] + shortened(inside))
            start = end
        at = end + 1
    out.append(text[start:])
    return "".join(out)


def _closing(text: str, at: int, mark: str) -> int:
    """Where the quote opened before `at` closes: the next `mark` not escaped and not
    followed by a word character; the end of the text when there is none."""
    while True:
        found = text.find(mark, at)
        if found < 0:
            return len(text)
        escaped = found > 0 and text[found - 1] == "\\"
        followed = found + 1 < len(text) and (text[found + 1].isalnum() or text[found + 1] == "_")
        if not escaped and not followed:
            return found
        at = found + 1


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


def invalid_input(fields: dict[str, str], message: str | None = None) -> UserError:
    """Input that failed validation: 400, naming each field and what is wrong with it."""
    fields = {shortened(str(name)): bounded(str(problem)) for name, problem in fields.items()}
    if message is None:
        message = "; ".join(f"{name}: {problem}" if name else problem for name, problem in fields.items())
    return UserError(400, "Invalid request", message, fields=fields)


# --- what people are never shown ---------------------------------------------------------

ARN_SHOWN = "[ARN]"
ENDPOINT_SHOWN = "[endpoint]"
ACCOUNT_SHOWN = "[account id]"
KEY_SHOWN = "[access key]"
TRACE_SHOWN = "[details in the server log]"

_SECRETS = [
    # arn:partition:service:region:account:resource, resource up to a space or quote.
    (re.compile(r"\barn:aws[a-z-]*:[^\s'\"<>,;()\[\]{}]*", re.IGNORECASE), ARN_SHOWN),
    (re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"<>]+", re.IGNORECASE), ENDPOINT_SHOWN),
    (re.compile(r"\b[\w.-]+\.amazonaws\.com(?:\.cn)?(?::\d+)?(?:/[^\s'\"<>]*)?", re.IGNORECASE), ENDPOINT_SHOWN),
    (re.compile(r"\b[\w.-]+\.(?:aws|amazon)\.dev(?::\d+)?\b", re.IGNORECASE), ENDPOINT_SHOWN),
    (re.compile(r"(?<![\w.])\d{1,3}(?:\.\d{1,3}){3}(?::\d{1,5})?(?![\w.])"), ENDPOINT_SHOWN),
    (re.compile(r"\[[0-9a-f:]*:[0-9a-f:]*\](?::\d{1,5})?", re.IGNORECASE), ENDPOINT_SHOWN),
    (re.compile(r"\blocalhost(?::\d{1,5})?\b", re.IGNORECASE), ENDPOINT_SHOWN),
    (re.compile(r"\b(?:AKIA|ASIA|AROA|AIDA|ANPA|AGPA)[A-Z0-9]{12,}\b"), KEY_SHOWN),
    (re.compile(r"(?<![\w-])\d{12}(?![\w-])"), ACCOUNT_SHOWN),
]
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\s*File \"[^\"]*\", line \d+", re.MULTILINE)


def _configured_endpoints() -> list[re.Pattern[str]]:
    """The configured endpoint, and its host (with the port), which may appear alone."""
    url = getattr(settings, "DYNAMODB_ENDPOINT_URL", None) or ""
    found = [url] if url else []
    host = urlsplit(url).netloc if "://" in url else ""
    if host:
        found.append(host)
    return [re.compile(rf"(?<![\w.-]){re.escape(text)}(?![\w-])") for text in sorted(found, key=len, reverse=True)]


def scrub(text: str) -> str:
    """`text` without ARNs, account ids, access key ids, endpoints or stack traces."""
    if not text:
        return text
    trace = _TRACEBACK.search(text)
    if trace:
        text = text[: trace.start()].rstrip() + " " + TRACE_SHOWN
    for endpoint in _configured_endpoints():
        text = endpoint.sub(ENDPOINT_SHOWN, text)
    for pattern, shown in _SECRETS:
        text = pattern.sub(shown, text)
    return text.strip()


def _scrubbed(problem: UserError) -> UserError:
    problem.message = scrub(problem.message)
    problem.hint = scrub(problem.hint)
    if problem.fields:
        problem.fields = {name: scrub(text) for name, text in problem.fields.items()}
    problem.bound()
    return problem


def describe(exc: errors.DynamoError | SkillError) -> UserError:
    """What to tell a person or an API client about `exc`: a status and sentences that
    never carry ARNs, account ids, endpoints or stack traces. A server-side problem (5xx),
    or one whose text had to be cleaned, is logged in full with the trace id."""
    told = _describe(exc)
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


def _describe(exc: errors.DynamoError | SkillError) -> UserError:
    if isinstance(exc, SkillError):
        return invalid_input({exc.field: exc.message} if exc.field else {}, exc.message)
    if isinstance(exc, errors.TableMissing):
        return UserError(
            503,
            "DynamoDB table missing",
            f"The table {exc.table_name!r} does not exist.",
            hint="Create the tables with: python manage.py dynamo_tables create "
            "(and check that DYNAMODB_ENDPOINT_URL and AWS_REGION name the right place).",
            retry_after=30,
        )
    if isinstance(exc, errors.Unavailable):
        return UserError(
            503,
            "DynamoDB unavailable",
            exc.message,
            hint=(
                "Start the local DynamoDB with `make run`, or check DYNAMODB_ENDPOINT_URL, "
                "AWS_REGION and the AWS credentials."
            ),
            retry_after=5,
        )
    if isinstance(exc, errors.Backpressure):
        return UserError(
            429,
            "Queue backlog over its bound",
            exc.message,
            hint="The queue is refusing new work until it drains; the Retry-After header says when to try again.",
            retry_after=exc.retry_after,
        )
    if isinstance(exc, errors.RateLimited):
        return UserError(
            429,
            "Rate limit exceeded",
            exc.message,
            hint="Each API token may make API_RATE_LIMIT requests; the Retry-After header says when to go on.",
            retry_after=exc.retry_after,
        )
    if isinstance(exc, errors.Throttled):
        return UserError(503, "DynamoDB is busy", exc.message, retry_after=2)
    if isinstance(exc, errors.NotFound):
        return UserError(404, "Not found", exc.message)
    if isinstance(exc, errors.Conflict):
        return UserError(
            409,
            "Conflict",
            exc.message,
            hint="Reload to see the current state and try again.",
            current=current_json(exc.now),
        )
    if isinstance(exc, errors.KeyReused):
        return UserError(
            422,
            "Idempotency key reused",
            exc.message,
            hint="Send a new Idempotency-Key for a new request; resend a key only with the request it was made for.",
            fields={"Idempotency-Key": "was used for a different request"},
        )
    if isinstance(exc, errors.InvalidRequest):
        return UserError(400, "Invalid request", exc.message)
    return UserError(500, "DynamoDB error", exc.message)


def _endpoint() -> str:
    """For the log only."""
    return settings.DYNAMODB_ENDPOINT_URL or f"AWS DynamoDB ({settings.AWS_REGION})"


# --- the JSON API's own refusals (not domain errors, but told the same way) --------------


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


def no_such_endpoint(path: str) -> UserError:
    return UserError(404, "Not found", f"There is no API endpoint at {path}.")


def method_not_allowed(method: str, allowed: list[str]) -> UserError:
    return UserError(405, "Method not allowed", f"{method} is not allowed here; use {' or '.join(allowed)}.")
