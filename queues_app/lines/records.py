"""A line as the centre configures it: its callers' required skills, its promise (answer
a share within a time), its hours, and what happens when it is full or a caller has
waited too long. Settings a line leaves out take the centre's (`Defaults`); without any
line configured, the centre has one, `main`, with exactly today's behaviour.

The record is checked here once, whichever way it arrives (the API, the Lines page, an
imported file): a bad value is a `LineError` naming its field, as `line.hours.mon[0]`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from queues_app.ddb.errors import InvalidRequest
from queues_app.lines.hours import Hours, HoursError
from queues_app.steps import validate_steps
from queues_app.text import hidden_problem

MAIN = "main"  # the line of a centre that has configured none
LINE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
LINE_ID_RULE = "1 to 40 lowercase letters, digits, '_' or '-', starting with a letter or digit"
NAME_MAX = 100
END_REASON = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
MAX_PRIORITY_AGING_SECONDS = 86_400
MAX_WAIT_SECONDS = 86_400
MAX_WAITING = 1_000_000
MAX_WRAP_UP_SECONDS = 3600
MAX_CALLBACK_RETRY_SECONDS = 86_400
MAX_CALLBACK_ATTEMPTS = 10
CALLBACK_WAIT_FROM = ("arrival", "request")


class LineError(ValueError):
    """A line that cannot be kept; `field` names the part (`service_level_target`)."""

    def __init__(self, field: str, problem: str):
        self.field = field
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class Defaults:
    """What a line leaves out: the centre's settings (SERVICE_LEVEL_SECONDS and
    SERVICE_LEVEL_TARGET) and no limit otherwise."""

    service_level_seconds: int = 20
    service_level_target: float = 0.8

    @classmethod
    def from_settings(cls) -> Defaults:
        from django.conf import settings

        return cls(int(settings.SERVICE_LEVEL_SECONDS), float(settings.SERVICE_LEVEL_TARGET))


@dataclass(frozen=True)
class Overflow:
    """Where a caller goes past `max_waiting` or `max_wait_seconds`: another line, keeping
    their arrival (`to_line`), or the end of the call with a reason the phone system is
    told (`end`)."""

    to_line: str | None = None
    end: str | None = None

    def as_dict(self) -> dict[str, str]:
        return {"to_line": self.to_line} if self.to_line else {"end": self.end or ""}


@dataclass(frozen=True)
class Line:
    line_id: str
    name: str
    requires: Mapping[str, str]  # dimension -> the value every caller of the line needs
    service_level_seconds: int
    service_level_target: float
    short_abandon_seconds: int = 0
    hours: Hours = Hours()
    max_waiting: int | None = None
    max_wait_seconds: int | None = None
    overflow: Overflow | None = None
    priority_aging_seconds: int | None = None
    version: int = 0
    # Routing steps for its callers who bring none (queues_app/steps.py).
    steps: tuple[dict, ...] = ()
    # How long its calls' wrap-up may last before the agent is made available (None: WRAP_UP_SECONDS).
    wrap_up_seconds: int | None = None
    # Queued callbacks (calls/queued_callbacks.py); None: the centre's CALLBACK_RETRY_SECONDS
    # and CALLBACK_MAX_ATTEMPTS, and a callback offered to no caller.
    callback_retry_seconds: int | None = None
    callback_max_attempts: int | None = None
    callback_offer_after_seconds: int | None = None  # offered once a caller has waited so long
    callback_offer_wait_seconds: int | None = None  # offered while the estimated wait is above it
    callback_priority: int | None = None  # a scheduled callback's priority in line (None: 0)
    # A connected callback's wait for the service level: from the caller's arrival (the
    # default, as Amazon Connect counts it) or from the request to be called back.
    callback_wait_from: str = "arrival"

    def as_dict(self) -> dict[str, Any]:
        """The written form `parse` reads back (the API's, and an exported file's)."""
        return {
            "line_id": self.line_id,
            "name": self.name,
            "requires": dict(self.requires),
            "service_level_seconds": self.service_level_seconds,
            "service_level_target": self.service_level_target,
            "short_abandon_seconds": self.short_abandon_seconds,
            **self.hours.as_dict(),
            "max_waiting": self.max_waiting,
            "max_wait_seconds": self.max_wait_seconds,
            "overflow": self.overflow.as_dict() if self.overflow else None,
            "priority_aging_seconds": self.priority_aging_seconds,
            "steps": [dict(step) for step in self.steps],
            "wrap_up_seconds": self.wrap_up_seconds,
            "callback_retry_seconds": self.callback_retry_seconds,
            "callback_max_attempts": self.callback_max_attempts,
            "callback_offer_after_seconds": self.callback_offer_after_seconds,
            "callback_offer_wait_seconds": self.callback_offer_wait_seconds,
            "callback_priority": self.callback_priority,
            "callback_wait_from": self.callback_wait_from,
            "version": self.version,
        }


def main_line(defaults: Defaults) -> Line:
    """The one line of a centre that has configured none: every caller, always open, no
    limit, the centre's promise."""
    return Line(MAIN, "Main", {}, defaults.service_level_seconds, defaults.service_level_target)


FIELDS = frozenset(
    {
        "line_id", "name", "requires", "service_level_seconds", "service_level_target",
        "short_abandon_seconds", "hours", "holidays", "max_waiting", "max_wait_seconds",
        "overflow", "priority_aging_seconds", "steps", "wrap_up_seconds", "version",
        "callback_retry_seconds", "callback_max_attempts", "callback_offer_after_seconds",
        "callback_offer_wait_seconds", "callback_priority", "callback_wait_from",
    }
)  # fmt: skip


def parse(data: Mapping[str, Any], *, dimensions: Mapping[str, Sequence[str]], defaults: Defaults) -> Line:
    """A line from its written form, every value checked (`dimensions`: the skill
    catalog's values per dimension). Raises LineError naming the first bad field."""
    if not isinstance(data, Mapping):
        raise LineError("line", "give the line as an object of its settings")
    unknown = sorted(set(data) - FIELDS)
    if unknown:
        raise LineError(unknown[0], f"not a setting of a line; they are {', '.join(sorted(FIELDS))}")
    line_id = data.get("line_id")
    if not isinstance(line_id, str) or not LINE_ID.match(line_id):
        raise LineError("line_id", LINE_ID_RULE)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > NAME_MAX:
        raise LineError("name", f"1 to {NAME_MAX} characters")
    if problem := hidden_problem(name):
        raise LineError("name", problem)
    try:
        hours = Hours.parse(data.get("hours"), data.get("holidays") or ())
    except HoursError as exc:
        raise LineError(exc.field, str(exc).split(": ", 1)[1]) from None
    seconds = _whole(data, "service_level_seconds", 0, 86_400, defaults.service_level_seconds)
    target = data.get("service_level_target", defaults.service_level_target)
    # To the thousandth (80.5%): DynamoDB's numbers stop at 1e-130, and nothing finer means anything.
    target = round(target, 3) if isinstance(target, int | float) and not isinstance(target, bool) else target
    if isinstance(target, bool) or not isinstance(target, int | float) or not 0 < target < 1:
        raise LineError("service_level_target", "a share above 0 and below 1 (0.8 for 80%), to the thousandth")
    line = Line(
        line_id=line_id,
        name=name.strip(),
        requires=_requires(data.get("requires") or {}, dimensions),
        service_level_seconds=seconds,
        service_level_target=float(target),
        short_abandon_seconds=_whole(data, "short_abandon_seconds", 0, 600, 0),
        hours=hours,
        max_waiting=_limit(data, "max_waiting", MAX_WAITING),
        max_wait_seconds=_limit(data, "max_wait_seconds", MAX_WAIT_SECONDS),
        overflow=_overflow(data.get("overflow"), line_id),
        priority_aging_seconds=_limit(data, "priority_aging_seconds", MAX_PRIORITY_AGING_SECONDS),
        steps=_steps(data.get("steps"), dimensions),
        wrap_up_seconds=_limit(data, "wrap_up_seconds", MAX_WRAP_UP_SECONDS),
        callback_retry_seconds=_limit(data, "callback_retry_seconds", MAX_CALLBACK_RETRY_SECONDS),
        callback_max_attempts=_limit(data, "callback_max_attempts", MAX_CALLBACK_ATTEMPTS),
        callback_offer_after_seconds=_limit(data, "callback_offer_after_seconds", MAX_WAIT_SECONDS),
        callback_offer_wait_seconds=_limit(data, "callback_offer_wait_seconds", MAX_WAIT_SECONDS),
        callback_priority=_whole(data, "callback_priority", 0, 9, 0)
        if data.get("callback_priority") is not None
        else None,
        callback_wait_from=_one_of(data, "callback_wait_from", CALLBACK_WAIT_FROM),
        version=_whole(data, "version", 0, 2**53, 0),
    )
    if line.overflow is None and (line.max_waiting is not None or line.max_wait_seconds is not None):
        raise LineError("overflow", "a line with max_waiting or max_wait_seconds says where callers go past them")
    if line.overflow is not None and line.max_waiting is None and line.max_wait_seconds is None:
        raise LineError("overflow", "nothing overflows without max_waiting or max_wait_seconds")
    if line.short_abandon_seconds >= line.service_level_seconds > 0:
        raise LineError("short_abandon_seconds", "must be under service_level_seconds")
    return line


def check_together(lines: Sequence[Line]) -> None:
    """What no line can say alone: ids once each, every overflow to a line that exists,
    and no chain of overflows that comes back to where it began."""
    ids = [line.line_id for line in lines]
    seen: set[str] = set()
    for line_id in ids:
        if line_id in seen:
            raise LineError(f"lines.{line_id}", "given twice")
        seen.add(line_id)
    targets = {line.line_id: line.overflow.to_line for line in lines if line.overflow and line.overflow.to_line}
    for line_id, target in targets.items():
        if target not in seen:
            raise LineError(f"lines.{line_id}.overflow.to_line", f"no line {target!r}")
    for start in targets:
        path, at = [start], targets[start]
        while at in targets:
            if at in path:
                raise LineError(f"lines.{start}.overflow", f"overflows in a circle: {' -> '.join([*path, at])}")
            path.append(at)
            at = targets[at]


def _steps(steps: object, dimensions: Mapping[str, Sequence[str]]) -> tuple[dict, ...]:
    try:
        return tuple(validate_steps(steps, dimensions))
    except InvalidRequest as exc:
        raise LineError(exc.field or "steps", exc.message.split(": ", 1)[-1].rstrip(".")) from None


def _whole(data: Mapping[str, Any], field: str, low: int, high: int, default: int) -> int:
    value = data.get(field, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise LineError(field, f"a whole number from {low} to {high:,}")
    return value


def _one_of(data: Mapping[str, Any], field: str, allowed: tuple[str, ...]) -> str:
    value = data.get(field) or allowed[0]
    if value not in allowed:
        raise LineError(field, f"one of {', '.join(allowed)}")
    return value


def _limit(data: Mapping[str, Any], field: str, high: int) -> int | None:
    value = data.get(field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
        raise LineError(field, f"a whole number from 1 to {high:,}, or null for none")
    return value


def _requires(requires: object, dimensions: Mapping[str, Sequence[str]]) -> dict[str, str]:
    if not isinstance(requires, Mapping):
        raise LineError("requires", 'give skill values by dimension, e.g. {"language": "French"}')
    found = {}
    for dimension, value in requires.items():
        if dimension not in dimensions:
            raise LineError(f"requires.{dimension}", f"not a skill dimension; they are {', '.join(dimensions)}")
        if value is None:
            continue
        if value not in dimensions[dimension]:
            allowed = ", ".join(dimensions[dimension])
            raise LineError(f"requires.{dimension}", f"unknown {dimension} {value!r}; allowed: {allowed}")
        found[dimension] = value
    return found


def _overflow(overflow: object, line_id: str) -> Overflow | None:
    if overflow is None:
        return None
    if not isinstance(overflow, Mapping) or len(overflow) != 1 or not set(overflow) <= {"to_line", "end"}:
        raise LineError("overflow", 'either {"to_line": "<line id>"} or {"end": "<reason>"}')
    if "to_line" in overflow:
        target = overflow["to_line"]
        if not isinstance(target, str) or not LINE_ID.match(target):
            raise LineError("overflow.to_line", LINE_ID_RULE)
        if target == line_id:
            raise LineError("overflow.to_line", "a line cannot overflow to itself")
        return Overflow(to_line=target)
    reason = overflow["end"]
    if not isinstance(reason, str) or not END_REASON.match(reason):
        raise LineError("overflow.end", "a reason of 1 to 40 lowercase letters, digits, '_' or '-'")
    return Overflow(end=reason)
