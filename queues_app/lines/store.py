"""The lines as every host shares them: one item each in the call-center table
(`LINES` / `<line_id>`), read together with one Query, changed with the same stale-version
rule as every other change (a change names the version it was made from; DynamoDB keeps
the first of two made from the same one)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import to_iso
from queues_app.ddb.recent import RecentReads
from queues_app.ddb.versioned import delete_at_version, put_from_version, why_refused
from queues_app.lines.profiles import ProfileStore
from queues_app.lines.records import Defaults, Line, LineError, check_together, main_line, parse

LINES_PK = "LINES"
STORED = ("pk", "sk")
# How long a process routes by the lines it read: a change made elsewhere reaches every
# host within this (the process that made it, at once).
LINES_MAX_AGE_SECONDS = 5.0
# The lines each client last read (ddb/recent.py).
_READ: RecentReads[list[Line]] = RecentReads(LINES_MAX_AGE_SECONDS)


class LineStore:
    def __init__(self, db: Dynamo, *, dimensions: Mapping[str, Sequence[str]], defaults: Defaults):
        self.db, self.dimensions, self.defaults = db, dimensions, defaults
        self.table = db.table("callcenter")

    def configured(self) -> list[Line]:
        """The lines configured, by id (one strongly consistent Query)."""
        items = self.db.partition_items(self.table, LINES_PK, ConsistentRead=True)
        return _READ.keep(self.db, sorted((self._line(item) for item in items), key=lambda line: line.line_id))

    def current(self) -> list[Line]:
        """The centre's lines as routing uses them: read at most LINES_MAX_AGE_SECONDS ago
        by this process (so a caller's arrival costs no read of them)."""
        read = _READ.get(self.db)
        return (self.configured() if read is None else read) or [main_line(self.defaults)]

    def current_line(self, line_id: str) -> Line | None:
        return next((line for line in self.current() if line.line_id == line_id), None)

    def forget(self) -> None:
        """Read the lines again at the next use (after this process changed them)."""
        _READ.forget(self.db)
        _PROMISES.forget(self.db)
        _WRAP_UPS.forget(self.db)

    def all(self) -> list[Line]:
        """The centre's lines: those configured, or `main` alone when none is."""
        return self.configured() or [main_line(self.defaults)]

    def get(self, line_id: str) -> Line:
        for line in self.all():
            if line.line_id == line_id:
                return line
        raise errors.NotFound(f"No line {line_id!r}.")

    def put(self, data: Mapping[str, object]) -> Line:
        """Create a line (`version` 0 or left out) or change one (`version` as read): the
        stored line with its new version (the same change sent again after it was made is
        answered with the line as it made it). A change made from an older version is a
        Conflict; so is a line that breaks what lines must hold together (an overflow to
        a line that does not exist, or in a circle), checked against the lines as read."""
        try:
            line = parse(data, dimensions=self.dimensions, defaults=self.defaults)
        except LineError as exc:
            raise errors.InvalidRequest(str(exc), field=exc.field) from exc
        others = [other for other in self.configured() if other.line_id != line.line_id]
        stored = dataclasses.replace(line, version=line.version + 1)
        try:
            check_together([stored, *others])  # a circle is told from the line being changed
        except LineError as exc:
            raise errors.InvalidRequest(str(exc), field=exc.field) from exc
        try:
            put_from_version(
                self.db, self.table, {"pk": LINES_PK, "sk": line.line_id, **stored.as_dict()}, line.version
            )
        except errors.Conflict as exc:
            now = next((other for other in self.configured() if other.line_id == line.line_id), None)
            if now is not None and now.version == stored.version and same_settings(now, stored):
                return now  # this change, sent again (a retry after a timeout): done already
            raise why_refused(f"line {line.line_id!r}", line.version, now.version if now else None) from exc
        finally:
            self.forget()
        return stored

    def delete(self, line_id: str, version: int, *, waiting: int) -> Line:
        """Remove a line, from the version read, while nobody waits on it (`waiting`, as
        counted) and no other line overflows to it. Returns the line as it was."""
        lines = self.configured()
        line = next((line for line in lines if line.line_id == line_id), None)
        if line is None:
            raise errors.NotFound(f"No line {line_id!r}.")
        if line.version != version:
            raise errors.Conflict(f"Line {line_id!r} changed since version {version}: it is at version {line.version}.")
        if waiting:
            raise errors.Conflict(f"Line {line_id!r} has {waiting:,} callers waiting: it is removed once nobody waits.")
        into = [other.line_id for other in lines if other.overflow and other.overflow.to_line == line_id]
        if into:
            raise errors.Conflict(f"Line {line_id!r} takes the overflow of {', '.join(into)}: change those first.")
        served = [p.name for p in ProfileStore(self.db).read().profiles.values() if line_id in p.lines]
        if served:
            raise errors.Conflict(
                f"Line {line_id!r} is served by the routing profile {', '.join(served)}: change those first."
            )
        try:
            delete_at_version(self.db, self.table, {"pk": LINES_PK, "sk": line_id}, version, f"Line {line_id!r}")
        finally:
            self.forget()
        return line

    def _line(self, item: dict) -> Line:
        """A stored line, read back through `parse` (numbers come back as ints and floats)."""
        data = {key: value for key, value in item.items() if key not in STORED}
        return parse(data, dimensions=self.dimensions, defaults=self.defaults)


def same_settings(one: Line, other: Line) -> bool:
    """The same line, whatever their versions."""
    return dataclasses.replace(one, version=0) == dataclasses.replace(other, version=0)


@dataclass(frozen=True)
class Promise:
    """What a line's figures are counted by: its threshold and target, and the waits short
    enough not to count (`short_abandon_seconds`)."""

    service_level_seconds: float
    service_level_target: float
    short_abandon_seconds: float = 0.0


_PROMISES: RecentReads[dict[str, Promise]] = RecentReads(LINES_MAX_AGE_SECONDS)


def promises(db: Dynamo) -> dict[str, Promise]:
    """Each configured line's promise, as counting reads it (no skill catalog needed: the
    values were checked when stored), read at most LINES_MAX_AGE_SECONDS ago."""
    read = _PROMISES.get(db)
    if read is not None:
        return read
    found = {
        item["sk"]: Promise(
            float(item["service_level_seconds"]),
            float(item["service_level_target"]),
            float(item.get("short_abandon_seconds") or 0),
        )
        for item in db.partition_items(db.table("callcenter"), LINES_PK, ConsistentRead=True)
    }
    return _PROMISES.keep(db, found)


_WRAP_UPS: RecentReads[dict[str, int]] = RecentReads(LINES_MAX_AGE_SECONDS)


def wrap_up_limits(db: Dynamo) -> dict[str, int]:
    """Each configured line's own `wrap_up_seconds` (lines that set one), read at most
    LINES_MAX_AGE_SECONDS ago."""
    read = _WRAP_UPS.get(db)
    if read is not None:
        return read
    found = {
        item["sk"]: int(item["wrap_up_seconds"])
        for item in db.partition_items(db.table("callcenter"), LINES_PK, ConsistentRead=True)
        if item.get("wrap_up_seconds")
    }
    return _WRAP_UPS.keep(db, found)


def wrap_up_seconds(db: Dynamo, line_id: str | None = None) -> float | None:
    """How long a wrap-up after a call of `line_id` may last (its line's, else
    WRAP_UP_SECONDS; None: no limit). Without a line: the shortest any line sets."""
    from django.conf import settings

    default = getattr(settings, "WRAP_UP_SECONDS", None)
    limits = wrap_up_limits(db)
    if line_id is None:
        return min([*limits.values(), *([default] if default else [])], default=None)
    return limits.get(line_id, default)


def wrap_up_until(db: Dynamo, line_id: str | None, moment: datetime) -> str | None:
    """When a wrap-up begun at `moment` after a call of `line_id` ends by itself, or None."""
    seconds = wrap_up_seconds(db, line_id or "")
    return to_iso(moment + timedelta(seconds=seconds)) if seconds else None
