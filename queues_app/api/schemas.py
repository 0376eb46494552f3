"""Every input and output of the JSON API, as schemas (pydantic, through django-ninja):
they validate requests, shape answers and make the OpenAPI document.

Inputs refuse unknown fields. What a schema cannot say in JSON Schema is checked here
too, and named by field like any other mistake: a skill value the catalog does not
know, and anything inside a shipment's `data` that DynamoDB cannot store (see
`storable_problems`).
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, ClassVar, Literal

from ninja import Schema
from pydantic import ConfigDict, Field, StringConstraints, field_validator
from pydantic_core import PydanticCustomError

from queues_app.agents.skills import SkillCatalog, SkillError, validate_preferences
from queues_app.api.parsing import MAX_DEPTH
from queues_app.calls.records import QueueOrder
from queues_app.centre import keys
from queues_app.ddb.numbers import ExactNumber, as_stored
from queues_app.shipments.consuming import MAX_FAILURE_REASONS
from queues_app.webhooks.destinations import url_refusal
from queues_app.webhooks.signing import standard_key

IDEMPOTENCY_KEY_MAX = 255
MAX_DELAY_SECONDS = 900  # as SQS delay queues: at most 15 minutes
TENANT_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"
ID_MAX = 200  # path ids: ours are much shorter; DynamoDB keys stop at 1 KB

# What DynamoDB can store as a number: 38 significant digits, magnitudes from 1E-130 to
# 9.99...E+125 (or zero).
NUMBER_DIGITS = 38
NUMBER_MIN_EXPONENT = -130
NUMBER_MAX_EXPONENT = 125
KEY_MAX_BYTES = 65_535  # DynamoDB: attribute names are 1 byte to 64 KB
PROBLEMS_LISTED = 20  # at most this many bad values are named in one answer
SEGMENT_SHOWN = 40  # characters of a key shown in a path

PAGE_MAX = 100
CURSOR_MAX = 4096  # as queues_app.ddb.paging reads them

IdempotencyKey = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=IDEMPOTENCY_KEY_MAX)]
ItemId = Annotated[str, StringConstraints(min_length=1, max_length=ID_MAX)]
Cursor = Annotated[str, StringConstraints(min_length=1, max_length=CURSOR_MAX)]
PageSize = Annotated[int, Field(ge=1, le=PAGE_MAX)]
CallListName = Literal["waiting", "assigned"]
AgentStatusName = Literal["offline", "available", "queued", "attending", "wrap_up", "not_ready"]


class InputSchema(Schema):
    """A request body: unknown fields are refused. `PROBLEMS` says what is wrong with a
    field whose value has the wrong type or range, in words a person can act on."""

    model_config = ConfigDict(extra="forbid")
    PROBLEMS: ClassVar[dict[str, str]] = {}
    # Errors inside these fields are named by the inner key alone (`language`, not
    # `preferences.language`): the skill dimensions are the fields people think of.
    NAMED_BY_KEY: ClassVar[tuple[str, ...]] = ()


# --- inputs ---------------------------------------------------------------------------


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

    PROBLEMS: ClassVar[dict[str, str]] = {
        "preferences": 'must be an object such as {"language": "Spanish", "gender": "any"} (use {} for any agent)',
        "priority": f"must be a whole number from 0 to {keys.MAX_PRIORITY}",
        "order": f"must be one of {', '.join(QueueOrder.ALL)}",
    }
    NAMED_BY_KEY: ClassVar[tuple[str, ...]] = ("preferences",)

    @field_validator("preferences")
    @classmethod
    def _known_skills(cls, preferences: dict[str, str]) -> dict[str, str]:
        catalog = SkillCatalog.from_settings()
        unknown = sorted(set(preferences) - set(catalog.names))
        if unknown:
            problems = {
                name: f"unknown skill dimension {name!r}; allowed: {', '.join(catalog.names)}" for name in unknown
            }
            raise PydanticCustomError("skill", "{summary}", {"problems": problems, "summary": "; ".join(problems)})
        try:
            validate_preferences(catalog, preferences)
        except SkillError as exc:
            field = exc.field or "preferences"
            raise PydanticCustomError("skill", "{message}", {"problems": {field: exc.message}}) from exc
        return preferences


class ShipmentIn(InputSchema):
    """A shipment to enqueue."""

    data: dict[str, Any] = Field(
        description="The shipment's fields: any JSON object that DynamoDB can store (numbers of at most 38 "
        "significant digits between 1E-130 and 9.99E+125 in magnitude, kept exactly as decimals, no NaN or "
        f"Infinity, no empty keys, nesting within the body's {MAX_DEPTH} levels). The answer shows the data "
        "as stored: numbers without trailing zeros.",
        examples=[{"to": "Porto", "parcels": 2}],
    )
    tenant: str | None = Field(
        None,
        pattern=TENANT_PATTERN,
        description="Who sends it (fair share per tenant): 1 to 64 letters, digits, `.`, `_` or `-`.",
    )
    priority: int = Field(0, ge=0, le=keys.MAX_PRIORITY, strict=True, description="0 to 9; higher first.")
    delay_seconds: float = Field(
        0,
        ge=0,
        le=MAX_DELAY_SECONDS,
        strict=True,
        allow_inf_nan=False,
        description=f"Keep the shipment invisible this long (0 to {MAX_DELAY_SECONDS} seconds).",
    )

    PROBLEMS: ClassVar[dict[str, str]] = {
        "data": "required: an object with the shipment's fields",
        "tenant": "1 to 64 letters, digits, '.', '_' or '-'",
        "priority": f"must be a whole number from 0 to {keys.MAX_PRIORITY}",
        "delay_seconds": f"must be a number of seconds from 0 to {MAX_DELAY_SECONDS}",
    }

    @field_validator("data")
    @classmethod
    def _storable(cls, data: dict[str, Any]) -> dict[str, Any]:
        problems = storable_problems(data, "data")
        if problems:
            raise PydanticCustomError("unstorable", "{summary}", {"problems": problems, "summary": "; ".join(problems)})
        return as_stored_data(data)


Version = Annotated[int, Field(ge=1, le=2**53, strict=True)]
VERSION_PROBLEM = "required: the agent's `version` as you last read it (a whole number from 1)"


class VersionIn(InputSchema):
    """The version of the agent the request was decided on, as `GET /api/agents/{agent_id}`
    (or the answer of the last change) showed it: the change is made only from that
    version. Sent again after it took effect, the request is answered as it was
    (`Idempotent-Replayed: true`); after any other change, 409 with the agent as now."""

    version: Version = Field(description="The agent's `version` as you last read it.", examples=[7])

    PROBLEMS: ClassVar[dict[str, str]] = {"version": VERSION_PROBLEM}


# Where an agent goes once their part in a call ends (ending it, releasing them, a transfer).
Then = Annotated[
    Literal["queue", "wrap_up", "offline"], Field(description="`queue` (available again), `wrap_up` or `offline`.")
]
THEN_PROBLEM = "must be one of queue, wrap_up, offline"


class ReleaseIn(InputSchema):
    """The call to end, and what the agent does once it has ended."""

    call_id: ItemId = Field(
        description="The call you are ending: the agent's `call_id` as you last read it. Only that call is ended; "
        "if it already ended, the request is answered as it was (same `then`) or refused (409).",
        examples=["3f2a9c1e0b7d4a65"],
    )
    then: Then = "queue"

    PROBLEMS: ClassVar[dict[str, str]] = {
        "then": THEN_PROBLEM,
        "call_id": "required: the id of the call you are ending (the agent's call_id as you last read it)",
    }


class EndIn(InputSchema):
    """What the call's agent does once the call has ended."""

    then: Then = "queue"

    PROBLEMS: ClassVar[dict[str, str]] = {"then": THEN_PROBLEM}


class NotReadyIn(InputSchema):
    """The agent's version as last read, and why they are not ready."""

    version: Version = Field(description="The agent's `version` as you last read it.", examples=[7])
    reason: str = Field(min_length=1, max_length=40, description="One of AGENT_NOT_READY_REASONS.", examples=["break"])

    PROBLEMS: ClassVar[dict[str, str]] = {
        "version": VERSION_PROBLEM,
        "reason": "required: why the agent is not ready, one of AGENT_NOT_READY_REASONS (at most 40 characters)",
    }


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
        "agent_id": "must be an agent's id",
        "from_agent_id": "required: the agent on the call as you last read it (the call's agent_id)",
        "then": THEN_PROBLEM,
    }
    NAMED_BY_KEY: ClassVar[tuple[str, ...]] = ("preferences",)


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
        description="Keep the secret this replaces signing too, for `CALLBACK_SECRET_OVERLAP_HOURS` (24): "
        "every delivery meanwhile carries both signatures, so the receiver can switch without missing one. "
        "Without it the old secret stops at once.",
    )

    PROBLEMS: ClassVar[dict[str, str]] = {
        "url": "must be an absolute https:// URL of at most 500 characters",
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


class NothingIn(InputSchema):
    """No fields: an empty body, `{}` or no body at all."""


# --- outputs --------------------------------------------------------------------------


class Problem(Schema):
    """Every refusal and failure: a title, a sentence, and what to do about it."""

    error: str = Field(description="A short title, e.g. `Invalid request`.")
    message: str = Field(description="What went wrong, in a sentence.")
    hint: str | None = Field(None, description="What to do about it, when there is something to do.")
    fields: dict[str, str] | None = Field(
        None, description="Each bad input field (or `body`) and what is wrong with it."
    )
    current: dict[str, Any] | None = Field(
        None,
        description="On a 409: the items the request named as they are now, by kind (`agent`, `call`, "
        "`shipment`), shaped as their own reads answer them.",
    )
    trace_id: str | None = Field(None, description="On a server-side failure: where the operators find it in the log.")


class WhyOut(Schema):
    agent_id: str | None = None
    name: str | None = None
    queued_at: str | None = None
    outcome: str | None = None
    explanation: str | None = None


class CallOut(Schema):
    call_id: str
    status: Literal["waiting", "assigned", "ended", "abandoned"]
    preferences: dict[str, str] = Field(description="Each skill dimension's value, or `any`.")
    priority: int
    order: Literal["fifo", "lifo"]
    arrived_at: str | None
    agent_id: str | None
    agent_name: str | None
    assigned_at: str | None
    ended_at: str | None
    relaxed: list[dict[str, str | None]] = Field(
        description="Preferences relaxed while waiting: `dimension`, `from` (the value before) and `at`."
    )
    why: list[WhyOut] = Field(description="The candidates considered at the assignment, and why each was (not) chosen.")
    waited_seconds: float | None
    answered_at: str | None = Field(description="When the call was first answered (with offers, when picked up).")
    answer_by: str | None = Field(
        description="While the call is offered (ANSWER_TIMEOUT_SECONDS): confirm with /answered before this time."
    )
    legs: list[dict[str, str | None]] = Field(
        description="Each agent's part in the call, oldest first: `agent_id`, `agent_name`, `from`, `to`, and `how` "
        "it ended (`ended`, `transferred`, or `missed`: an offer not picked up in time)."
    )


class AgentOut(Schema):
    agent_id: str
    name: str
    skills: dict[str, list[str]]
    status: AgentStatusName
    status_label: str
    version: int
    queued_at: str | None
    call_id: str | None
    updated_at: str | None
    reason: str | None = Field(description="Why the agent is not ready (`missed`: an offered call not picked up).")
    status_since: str | None = Field(description="When the agent's status last changed.")


class AgentAndCallOut(Schema):
    agent: AgentOut
    call: CallOut | None = Field(description="The call the agent took, or null when they were queued.")


class CallEndedOut(Schema):
    agent: AgentOut = Field(description="The call's agent, as they are now.")
    call: CallOut | None = Field(description="The next call the agent took on ending this one, or null.")


class AgentOnlyOut(Schema):
    agent: AgentOut


class QueueOut(Schema):
    name: str = Field(examples=["Q#English#F"])
    combination: dict[str, str]
    depth: int
    version: int
    oldest_queued_at: str | None
    oldest_age_seconds: float | None


class QueuesOut(Schema):
    queues: list[QueueOut]
    callers_waiting: int
    callers_waiting_capped: bool = Field(description="True: at least this many (the count stops at 1000).")


class AgentsPageOut(Schema):
    agents: list[AgentOut]
    next_cursor: str | None = Field(description="Send as `cursor` for the next page; null on the last page.")


class CallsPageOut(Schema):
    calls: list[CallOut]
    next_cursor: str | None = Field(description="Send as `cursor` for the next page; null on the last page.")


class IntervalOut(Schema):
    start: str = Field(description="When the interval starts: ISO 8601 with the centre's UTC offset.")
    combination: str = Field(description="`all` (the whole centre) or a skill combination, e.g. `Spanish#F`.")
    offered: int = Field(description="Callers who left the line in the interval: answered + abandoned.")
    answered: int
    answered_within: int = Field(description="Answered within `service_level_seconds`.")
    abandoned: int
    service_level: float | None = Field(description="answered_within / offered; null when none was offered.")
    asa_seconds: float | None = Field(description="Average speed of answer; null when none was answered.")
    aht_seconds: float | None = Field(description="Average handle time of the calls that ended; null when none.")
    longest_wait_seconds: float | None
    occupancy: float | None = Field(description="Attending over logged-in agents, sampled (`all` only).")


class IntervalsOut(Schema):
    date: str = Field(description="The centre's day, YYYY-MM-DD.")
    time_zone: str = Field(description="The centre's time zone (TIME_ZONE), an IANA name.")
    interval_minutes: int
    service_level_seconds: int | float = Field(description="The service level's threshold (SERVICE_LEVEL_SECONDS).")
    intervals: list[IntervalOut]


class CallbackOut(Schema):
    url: str | None = Field(description="Where this token's call events are POSTed; null: nowhere.")
    events: list[str] = Field(description="The event types sent: `call.assigned`, `call.abandoned`, `call.relaxed`.")
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
    type: Literal["call.assigned", "call.abandoned", "call.relaxed"]
    created_at: str = Field(description="When the change happened (ISO 8601, UTC).")
    call: CallOut = Field(description="The call right after the change, as `GET /api/calls/{call_id}` shows it.")


class FailureOut(Schema):
    at: str | None = Field(description="When the attempt failed.")
    reason: str = Field(description="What the consumer said went wrong.")
    receive: int | None = Field(description="Which receive of the shipment it was (`receive_count` then).")


class ShipmentOut(Schema):
    shipment_id: str
    state: str = Field(description="under construction, ready, queued, delayed, processing, completed or in DLQ.")
    status: str
    queue: str = Field(description="`live`, or `spillover` when sidelined.")
    tenant: str | None
    priority: int
    data: dict[str, Any]
    enqueued_at: str | None
    visible_at: str | None
    attempts: int = Field(description="Receives since the last restore from the DLQ: these decide the DLQ.")
    receive_count: int = Field(description="Every receive, ever (failures and expired leases included).")
    failures: list[FailureOut] = Field(
        description=f"The last failures (at most {MAX_FAILURE_REASONS}), oldest first: when and why each attempt "
        "failed."
    )
    dlq_reason: str | None
    trace_id: str | None
    version: int = Field(description="Goes up with every change of the shipment.")


class ShipmentCreatedOut(ShipmentOut):
    sidelined: bool = Field(description="True when the tenant was over its rate and the shipment went to spillover.")


# --- what DynamoDB can store -----------------------------------------------------------


def storable_problems(value: Any, path: str) -> dict[str, str]:
    """Each place inside `value` that DynamoDB could not store, by its path
    (`data.items[2].price`), and why. Empty when all of it can be stored."""
    problems: dict[str, str] = {}
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack and len(problems) < PROBLEMS_LISTED:
        current, where = stack.pop()
        if isinstance(current, dict):
            children = []
            for key, child in current.items():
                problem = _key_problem(key)
                if problem:
                    problems[f"{where}.{_segment(key)}"] = problem
                else:
                    children.append((child, f"{where}.{_segment(key)}"))
            stack.extend(reversed(children))
        elif isinstance(current, list):
            stack.extend(reversed([(child, f"{where}[{index}]") for index, child in enumerate(current)]))
        else:
            problem = _scalar_problem(current)
            if problem:
                problems[where] = problem
    return problems


def as_stored_data(value: Any) -> Any:
    """`value` with each number as DynamoDB will keep it (`as_stored`), so that the answer
    shows what was stored. (Nesting is bounded by the parser's MAX_DEPTH.)"""
    if isinstance(value, dict):
        return {key: as_stored_data(child) for key, child in value.items()}
    if isinstance(value, list):
        return [as_stored_data(child) for child in value]
    return as_stored(value.decimal) if isinstance(value, ExactNumber) else value


def _key_problem(key: str) -> str | None:
    if not key:
        return "empty keys cannot be stored: a key needs at least one character"
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError:
        return "this key is not valid Unicode (it holds a lone surrogate)"
    if size > KEY_MAX_BYTES:
        return f"keys may be at most {KEY_MAX_BYTES:,} bytes long"
    return None


def _scalar_problem(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "not valid Unicode (a lone surrogate)"
        return None
    if isinstance(value, int):
        return _number_problem(Decimal(value), exact=True)
    if isinstance(value, ExactNumber):  # as sent: every digit counts, whatever a float would keep
        return _number_problem(value.decimal, exact=True)
    if isinstance(value, float):
        if not math.isfinite(value):
            shown = "NaN" if math.isnan(value) else ("-Infinity" if value < 0 else "Infinity")
            return f"{shown} cannot be stored: numbers must be finite"
        return _number_problem(Decimal(repr(value)), exact=False)
    if isinstance(value, Decimal):
        return _number_problem(value, exact=True)
    return f"a {type(value).__name__} cannot be stored"


def _number_problem(number: Decimal, *, exact: bool) -> str | None:
    """DynamoDB's limits: 38 significant digits, and magnitudes from 1E-130 to 9.99...E+125."""
    try:
        if not number.is_finite():
            return "numbers must be finite"
        if number.is_zero():
            return None
        digits = len(number.as_tuple().digits) if exact else len(number.normalize().as_tuple().digits)
    except InvalidOperation:  # pragma: no cover - a Decimal from JSON is always well formed
        return "not a number"
    if digits > NUMBER_DIGITS:
        return f"numbers may have at most {NUMBER_DIGITS} significant digits (send longer ones as strings)"
    if not NUMBER_MIN_EXPONENT <= number.adjusted() <= NUMBER_MAX_EXPONENT:
        return "out of the range DynamoDB can store: magnitudes from 1E-130 to 9.99E+125, or 0"
    return None


def _segment(key: str) -> str:
    """A key as a part of a path: printable, and cut short when long."""
    if not key:
        return '""'
    shown = key.encode("utf-8", "backslashreplace").decode("utf-8")
    return shown if len(shown) <= SEGMENT_SHOWN else shown[:SEGMENT_SHOWN] + "…"
