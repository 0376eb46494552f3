"""What every resource of the JSON API shares (pydantic, through django-ninja): the
request body's base (`InputSchema`), the refusal (`Problem`), the parameter types (ids,
cursors, page sizes, idempotency keys, versions, `then`), the records several resources
answer with (a call, an agent), and what DynamoDB can store (`storable_problems`).

Each resource's own inputs and outputs are beside it (calls.py, agents.py...). Inputs
refuse unknown fields; what a schema cannot say in JSON Schema is checked too and named
by field like any other mistake.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from types import UnionType
from typing import Annotated, Any, ClassVar, Literal, Union, get_args, get_origin

from ninja import Schema
from ninja.schema import DjangoGetter
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from queues_app import inputs
from queues_app.agents.skills import SkillCatalog
from queues_app.ddb.numbers import ExactNumber, as_stored
from queues_app.lines.records import LINE_ID

IDEMPOTENCY_KEY_MAX = 255

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
# Ids, versions and `then` as the pages and the admin take them too (queues_app.inputs).
ItemId = Annotated[str, StringConstraints(min_length=1, max_length=inputs.ID_MAX, pattern=inputs.ID_PATTERN)]
LineId = Annotated[str, StringConstraints(pattern=LINE_ID.pattern)]
Cursor = Annotated[str, StringConstraints(min_length=1, max_length=CURSOR_MAX)]
PageSize = Annotated[int, Field(ge=1, le=PAGE_MAX)]
AgentStatusName = Literal["offline", "available", "queued", "ringing", "attending", "wrap_up", "not_ready"]

Version = Annotated[int, Field(ge=inputs.VERSION_MIN, le=inputs.VERSION_MAX, strict=True)]
VERSION_PROBLEM = f"required: the agent's `version` as you last read it ({inputs.VERSION_RANGE})"

# Where an agent goes once their part in a call ends (ending it, releasing them, a transfer).
Then = Annotated[inputs.ThenName, Field(description="`queue` (available again), `wrap_up` or `offline`.")]
THEN_PROBLEM = inputs.THEN_PROBLEM


class InputSchema(Schema):
    """A request body: unknown fields are refused. `PROBLEMS` says what is wrong with a
    field whose value has the wrong type or range, in words a person can act on."""

    model_config = ConfigDict(extra="forbid")
    PROBLEMS: ClassVar[dict[str, str]] = {}
    # Errors inside these fields are named by the inner key alone (`language`, not
    # `preferences.language`): the skill dimensions are the fields people think of.
    NAMED_BY_KEY: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="before")
    @classmethod
    def _an_object(cls, value: Any) -> Any:
        """Only a JSON object: a schema reads its fields from an object's attributes too
        (django-ninja's, for models), and a number sent with a fraction is one
        (ExactNumber), which every field left out would then take for an empty body."""
        if isinstance(value, dict | BaseModel | DjangoGetter):
            return value
        raise PydanticCustomError("model_type", "must be a JSON object")

    @field_validator("*", mode="before")
    @classmethod
    def _numbers_are_not_booleans(cls, value: Any, info: ValidationInfo) -> Any:
        """`true` is not 1: pydantic would take it for a number (bool is an int in Python),
        so `{"tenant_rate": true}` would set a rate of 1."""
        field = cls.model_fields.get(info.field_name or "")
        if isinstance(value, bool) and field is not None and _takes_numbers_not_booleans(field.annotation):
            raise PydanticCustomError("number_not_boolean", "must be a number, not true or false")
        return value


def _takes_numbers_not_booleans(annotation: Any) -> bool:
    kinds = _kinds(annotation)
    return bool(kinds & {int, float, Decimal}) and bool not in kinds


def _kinds(annotation: Any) -> set:
    """The plain types a field's annotation accepts at its top level (`float | None`:
    float and NoneType; `Annotated[int, ...]`: int; a list or a dict: itself)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _kinds(args[0])
    if origin in (Union, UnionType):
        return set().union(*(_kinds(arg) for arg in args))
    return {origin or annotation}


def known_preferences(cls, preferences: dict[str, str] | None) -> dict[str, str] | None:
    """A body's `preferences` (a field validator): each one value of its skill dimension or
    any, as the pages take them (`inputs.preference_problems`), every bad one named."""
    if preferences is None:
        return None
    problems = inputs.preference_problems(SkillCatalog.from_settings(), preferences)
    if problems:
        summary = "; ".join(f"{name}: {problem}" for name, problem in problems.items())
        raise PydanticCustomError("skill", "{summary}", {"problems": problems, "summary": summary})
    return preferences


# --- answers ----------------------------------------------------------------------------


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
    step: str | None = Field(None, description="The routing step the chosen agent was matched at, in words.")


class QueuedCallbackOut(Schema):
    number: str = Field(description="The number the caller is called back on (E.164).")
    requested_at: str | None
    attempts: list[dict[str, str | None]] = Field(
        description="Each dialling's `result` (`connected`, `no_answer`, `busy`, `failed`), `agent_id` and `at`."
    )
    retry_at: str | None = Field(description="While `callback_retry`: when it enters the line again.")


class CallOut(Schema):
    call_id: str
    status: Literal[
        "waiting",
        "offered",
        "assigned",
        "ended",
        "abandoned",
        "overflowed",
        "refused",
        "callback_waiting",
        "callback_due",
        "callback_retry",
        "callback_scheduled",
        "callback_failed",
    ] = Field(
        description="`offered`: given to an agent whose phone rings, until they pick up (`answer_by`); "
        "`assigned`: an agent is attending it; `overflowed`: ended unanswered past its line's limit (`end_reason`); "
        "`refused` (in a `call.refused` event only): its line was closed or full. A queued callback: "
        "`callback_waiting` (at its place in line), `callback_due` (an agent reserved: dial `callback.number` and "
        "report with /callback-result before `answer_by`), `callback_retry` (not reached: back in line at "
        "`callback.retry_at`), `callback_scheduled` (enters the line at `callback.retry_at`, POST /api/callbacks), "
        "`callback_failed` (not reached in its line's attempts)."
    )
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
    line: str | None = Field(description="The line it waits or waited on (null: placed before lines).")
    overflowed: list[dict[str, str | None]] = Field(
        description="Each move past a line's limit: `from`, then `to` (another line) or `end` (the reason), and `at`."
    )
    end_reason: str | None = Field(description="Why it ended with no agent: its line's overflow `end`, or refused.")
    steps: list[dict] = Field(
        description="Its routing steps (`min_level`, `seconds`), as placed; empty: any agent who fits."
    )
    preferred_agent_id: str | None = Field(description="The agent the caller is kept for, if any.")
    preferred_until: str | None = Field(description="Until when the caller is kept for that agent.")
    callback: QueuedCallbackOut | None = Field(description="A queued callback's number and attempts; null: none asked.")


class AgentOut(Schema):
    agent_id: str
    name: str
    skills: dict[str, list[str]]
    levels: dict[str, dict[str, int]] = Field(
        description="Each skill value's level, 1 to 5 (1 unless set higher), as routing steps read it."
    )
    status: AgentStatusName
    status_label: str
    version: int
    queued_at: str | None
    call_id: str | None
    updated_at: str | None
    reason: str | None = Field(description="Why the agent is not ready (`missed`: an offered call not picked up).")
    status_since: str | None = Field(description="When the agent's status last changed.")
    next_status: str | None = Field(
        description="Where the agent goes when their call ends, whatever the ending says: `not_ready` (null: none)."
    )
    next_reason: str | None = Field(description="The reason of that next status (`break`).")
    profile: str | None = Field(description="The named routing profile the agent serves lines by (null: none).")
    lines: dict[str, dict[str, int]] = Field(
        description="The agent's own lines, each with its `priority` and `delay_seconds` (empty: none of their own; "
        "with neither a profile nor lines, the agent serves every line)."
    )


class CallEndedOut(Schema):
    agent: AgentOut = Field(description="The call's agent, as they are now.")
    call: CallOut | None = Field(description="The next call the agent took on ending this one, or null.")


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
