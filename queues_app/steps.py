"""Routing steps: the minimum levels a caller's agent must have, widening as they wait.

A caller may carry steps (`[{"min_level": {"language": 4}, "seconds": 20}, ...]`, or
their line's default steps): while the first step runs, only agents at those levels or
above may take them; each step expires after its seconds, counted one after the other
from the caller's arrival; once the last has expired, any agent who fits the preferences
may. This is Amazon Connect's routing criteria (ordered steps, each with an expiry), and
Genesys's bullseye rings (docs/architecture.md, "Routing steps").
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from queues_app.ddb import errors
from queues_app.ddb.clock import from_iso

# An agent's proficiency in a skill value: 1 (can take the call) to 5 (expert), as Amazon
# Connect's proficiencies; agents' skills (agents/skills.py) and steps read them.
LEVEL_MIN, LEVEL_MAX = 1, 5

MAX_STEPS = 5
MAX_STEP_SECONDS = 24 * 3600

Step = dict  # {"min_level": {dimension: level}, "seconds": int}


def _refuse(field: str, message: str) -> errors.InvalidRequest:
    return errors.InvalidRequest(f"{field}: {message}.", field=field)


def validate_steps(steps: object, dimensions: Iterable[str], field: str = "steps") -> list[Step]:
    """Steps as stored: each a non-empty `min_level` of the catalog's dimensions at levels
    1 to 5 and whole `seconds` from 1 to a day; at most five. A level of 1 asks nothing and
    is left out. InvalidRequest naming the step at fault."""
    names = list(dimensions)
    if steps is None:
        return []
    if not isinstance(steps, list):
        raise _refuse(field, 'steps must be a list such as [{"min_level": {"language": 4}, "seconds": 20}]')
    if len(steps) > MAX_STEPS:
        raise _refuse(field, f"at most {MAX_STEPS} steps")
    clean = []
    for n, step in enumerate(steps):
        where = f"{field}[{n}]"
        if not isinstance(step, dict) or set(step) - {"min_level", "seconds"}:
            raise _refuse(where, "a step is an object with min_level and seconds")
        seconds = step.get("seconds")
        if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= MAX_STEP_SECONDS:
            raise _refuse(f"{where}.seconds", f"seconds must be a whole number from 1 to {MAX_STEP_SECONDS}")
        min_level = step.get("min_level")
        if not isinstance(min_level, dict) or not min_level:
            raise _refuse(f"{where}.min_level", "min_level names at least one dimension and its level")
        levels = {}
        for name, level in min_level.items():
            if name not in names:
                raise _refuse(f"{where}.min_level", f"unknown skill dimension {name!r}")
            if isinstance(level, bool) or not isinstance(level, int) or not LEVEL_MIN <= level <= LEVEL_MAX:
                raise _refuse(f"{where}.min_level.{name}", f"a level is a whole number {LEVEL_MIN} to {LEVEL_MAX}")
            if level > LEVEL_MIN:
                levels[name] = level
        clean.append({"min_level": levels, "seconds": seconds})
    return clean


def current(steps: list[Step], arrived_at: str, moment: datetime) -> int | None:
    """The step in force at `moment` (its index), None when there are none or the last
    has expired."""
    start = from_iso(arrived_at)
    if not steps or start is None:
        return None
    elapsed, total = (moment - start).total_seconds(), 0
    for index, step in enumerate(steps):
        total += int(step["seconds"])
        if elapsed < total:
            return index
    return None


def min_level(steps: list[Step], arrived_at: str, moment: datetime) -> dict[str, int]:
    """The minimum levels in force at `moment` ({} once the steps are over)."""
    index = current(steps, arrived_at, moment)
    return {} if index is None else {k: int(v) for k, v in steps[index]["min_level"].items()}


def expires_at(steps: list[Step], arrived_at: str, moment: datetime) -> datetime | None:
    """When the step in force at `moment` expires (None: no step is in force)."""
    index = current(steps, arrived_at, moment)
    start = from_iso(arrived_at)
    if index is None or start is None:
        return None
    return start + timedelta(seconds=sum(int(step["seconds"]) for step in steps[: index + 1]))


def next_widening(
    steps: list[Step],
    arrived_at: str,
    preferred_until: str | None,
    moment: datetime,
    delays: Iterable[int] = (),
) -> datetime | None:
    """When who may take the caller next widens after `moment`: their step in force expires,
    the time they are kept for their preferred agent runs out, or they have waited past one
    of the `delays` of their line in agents' routing profiles; None: it never will."""
    arrived = from_iso(arrived_at)
    passing = [arrived + timedelta(seconds=d) for d in delays] if arrived else []
    due = [d for d in (expires_at(steps, arrived_at, moment), from_iso(preferred_until), *passing) if d and d > moment]
    return min(due, default=None)


def _wanted(step: Step) -> str:
    return ", ".join(f"{name} {level} or above" for name, level in step["min_level"].items()) or "any level"


def describe(steps: list[Step], index: int | None) -> str:
    """A step in words: "step 1 (language 4 or above)", "after the last step (any agent who fits)"."""
    if index is None:
        return "after the last step (any agent who fits)"
    return f"step {index + 1} ({_wanted(steps[index])})"


def describe_all(steps: list[Step]) -> str:
    """Every step in words: "language 4 or above for 20 s, then any agent who fits"; empty
    without steps."""
    parts = [f"{_wanted(step)} for {int(step['seconds'])} s" for step in steps]
    return ", then ".join([*parts, "any agent who fits"]) if parts else ""
