"""Which line a caller enters: the one asked for (or `main`), if it exists and is open now;
and, past a line's limit, the line its overflow leads to."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from queues_app.ddb import errors
from queues_app.ddb.clock import to_iso
from queues_app.lines.records import MAIN, Line
from queues_app.text import counted

MAX_HOPS = 8  # overflows followed from one line before giving up (check_together forbids circles)


def line_for(lines: Sequence[Line], line_id: str | None) -> Line:
    """The line a caller asked for; without one, `main`. An unknown line is refused naming
    the field `line`."""
    wanted = line_id or MAIN
    for line in lines:
        if line.line_id == wanted:
            return line
    known = ", ".join(line.line_id for line in lines)
    if line_id is None:
        raise errors.InvalidRequest(f"say which line the caller is for; the lines are {known}.", field="line")
    raise errors.InvalidRequest(f"no line {line_id!r}; the lines are {known}.", field="line")


def refuse_if_closed(line: Line, moment: datetime, zone: ZoneInfo) -> None:
    if line.hours.is_open(moment, zone):
        return
    opens = line.hours.opens_at(moment, zone)
    when = f"; it opens at {to_iso(opens)}" if opens else "; it has no hours ahead"
    raise errors.Refused(
        f"Line {line.line_id!r} is closed{when}.",
        reason="closed",
        line_id=line.line_id,
        opens_at=to_iso(opens) if opens else None,
    )


def refuse_full(line: Line) -> errors.Refused:
    return errors.Refused(
        f"Line {line.line_id!r} is full: at most {counted(line.max_waiting or 0, 'caller')} may wait on it.",
        reason="full",
        line_id=line.line_id,
    )


def overflow_target(line: Line, lines: Sequence[Line], moment: datetime, zone: ZoneInfo) -> Line | None:
    """Where a caller past `line`'s limit goes: the first open line along its overflows, or
    None when the chain ends (`end`, a closed line with no overflow, a line gone)."""
    by_id = {other.line_id: other for other in lines}
    at = line
    for _hop in range(MAX_HOPS):
        target = by_id.get(at.overflow.to_line or "") if at.overflow else None
        if target is None:
            return None
        if target.hours.is_open(moment, zone):
            return target
        at = target
    return None


def end_reason(line: Line, lines: Sequence[Line]) -> str:
    """What the phone system is told when a caller past `line`'s limit has nowhere to go:
    the `end` reason at the end of its overflows, or `overflow`."""
    by_id = {other.line_id: other for other in lines}
    at: Line | None = line
    for _hop in range(MAX_HOPS):
        if at is None or at.overflow is None:
            break
        if at.overflow.end:
            return at.overflow.end
        at = by_id.get(at.overflow.to_line or "")
    return "overflow"
