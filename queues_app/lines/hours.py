"""A line's hours of operation: when callers may join it, in the centre's time zone.

Written as a contact centre writes them (Amazon Connect's hours of operation, Twilio's
and Genesys' schedules): for each weekday, ranges of the wall clock, `["08:00", "18:00"]`,
and dates the line stays closed (`holidays`). What a person would expect of the edges:

- A range runs from its start, included, to its end, excluded; `"24:00"` ends at
  midnight. A range whose end is before its start runs past midnight
  (`["22:00", "06:00"]`: 22:00 to 06:00 the next morning) and belongs to the day it
  starts on: a holiday closes the ranges that start on it, not the night that runs
  into it.
- The clocks changing move no range: 08:00 is 08:00 on the wall either side of a change.
  A start that does not exist that day (02:30 as the clocks go forward) opens at the
  first moment after the gap; a wall time that happens twice (01:30 as they go back)
  means the first of them.
- A line without hours is always open.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MIDNIGHT = time(0)
DAY = timedelta(days=1)
# How far ahead `opens_at` looks: a week, and the holidays that a year can hold after it.
LOOK_AHEAD_DAYS = 7 + 366


class HoursError(ValueError):
    """Hours that cannot be kept: `field` names where (`hours.mon[1]`, `holidays[0]`)."""

    def __init__(self, field: str, problem: str):
        self.field = field
        super().__init__(f"{field}: {problem}")


def _clock(text: object, where: str, *, end: bool) -> time | None:
    """'08:30' as a time of day; '24:00' (only as an end) is None, the next midnight."""
    if not isinstance(text, str) or len(text) != 5 or text[2] != ":" or not (text[:2] + text[3:]).isdigit():
        raise HoursError(where, f"a time is written HH:MM, not {text!r}")
    hours, minutes = int(text[:2]), int(text[3:])
    if end and (hours, minutes) == (24, 0):
        return None
    if hours > 23 or minutes > 59:
        raise HoursError(where, f"{text} is not a time of day (00:00 to 23:59{', or 24:00' if end else ''})")
    return time(hours, minutes)


@dataclass(frozen=True)
class Span:
    """One range of one weekday: from `start` to `end` (None: midnight), the next day's
    when `end` is not after `start`."""

    start: time
    end: time | None

    @property
    def overnight(self) -> bool:
        return self.end is not None and self.end <= self.start

    def text(self) -> list[str]:
        return [self.start.strftime("%H:%M"), "24:00" if self.end is None else self.end.strftime("%H:%M")]


@dataclass(frozen=True)
class Hours:
    """When a line is open; `always()` for a line without hours."""

    weekly: Mapping[str, tuple[Span, ...]] | None = None  # None: always open
    holidays: frozenset[date] = field(default_factory=frozenset)

    @classmethod
    def always(cls) -> Hours:
        return cls()

    @classmethod
    def parse(cls, hours: Mapping[str, Sequence[Sequence[str]]] | None, holidays: Iterable[str] = ()) -> Hours:
        """From the form lines are written in (`{"mon": [["08:00", "18:00"]], ...}`, and
        dates as `2026-12-25`); a weekday left out is closed. Raises HoursError."""
        days = _dates(holidays)
        if hours is None:
            if days:
                raise HoursError("holidays", "a line without hours is always open: give its hours too")
            return cls.always()
        if not isinstance(hours, Mapping):
            raise HoursError("hours", 'give each weekday\'s ranges, e.g. {"mon": [["08:00", "18:00"]]}')
        unknown = sorted(set(hours) - set(WEEKDAYS))
        if unknown:
            raise HoursError(f"hours.{unknown[0]}", f"a weekday is one of {', '.join(WEEKDAYS)}")
        weekly = {day: _spans(hours.get(day) or [], f"hours.{day}") for day in WEEKDAYS}
        _no_overlap(weekly)
        return cls(weekly, frozenset(days))

    def as_dict(self) -> dict:
        """The form `parse` reads: only the weekdays with ranges, holidays in order."""
        if self.weekly is None:
            return {"hours": None, "holidays": []}
        return {
            "hours": {day: [span.text() for span in spans] for day, spans in self.weekly.items() if spans},
            "holidays": [day.isoformat() for day in sorted(self.holidays)],
        }

    # --- asking ----------------------------------------------------------------------

    def is_open(self, moment: datetime, zone: ZoneInfo) -> bool:
        if self.weekly is None:
            return True
        local = moment.astimezone(zone)
        # A span that opened yesterday may still run; one that opens today may have.
        for day in (local.date() - DAY, local.date()):
            for opens, closes in self._intervals(day, zone):
                if opens <= moment < closes:
                    return True
        return False

    def opens_at(self, moment: datetime, zone: ZoneInfo) -> datetime | None:
        """When the line next opens, from `moment` (itself when open now); None when it
        never opens (no ranges, or every day ahead a holiday)."""
        if self.is_open(moment, zone):
            return moment
        if self.weekly is None or not any(self.weekly.values()):
            return None
        start = moment.astimezone(zone).date()
        for offset in range(LOOK_AHEAD_DAYS):
            for opens, _closes in self._intervals(start + offset * DAY, zone):
                if opens > moment:
                    return opens.astimezone(zone)
        return None

    def _intervals(self, day: date, zone: ZoneInfo) -> list[tuple[datetime, datetime]]:
        """The aware moments of each range that starts on `day` (none on a holiday)."""
        if self.weekly is None or day in self.holidays:
            return []
        found = []
        for span in self.weekly[WEEKDAYS[day.weekday()]]:
            opens = _wall(day, span.start, zone)
            if span.end is None:
                closes = _wall(day + DAY, MIDNIGHT, zone)
            else:
                closes = _wall(day + DAY if span.overnight else day, span.end, zone)
            found.append((opens, closes))
        return found


def _wall(day: date, at: time, zone: ZoneInfo) -> datetime:
    """The moment the wall clock of `zone` reads `at` on `day`: the first of two (fold 0)
    when the clocks go back; the end of the gap when the clocks skipped that time."""
    local = datetime.combine(day, at, tzinfo=zone)
    moment = local.astimezone(UTC)
    if moment.astimezone(zone).replace(tzinfo=None) == local.replace(tzinfo=None):
        return moment
    return _end_of_gap(local, zone)


def _end_of_gap(local: datetime, zone: ZoneInfo) -> datetime:
    """The first moment the wall clock reads later than `local`, a time it skipped: the
    moment the clocks went forward (a whole second, as every transition is)."""
    low, high = sorted((local.replace(fold=0).astimezone(UTC), local.replace(fold=1).astimezone(UTC)))
    wall = local.replace(tzinfo=None)
    while high - low > timedelta(seconds=1):
        middle = low + (high - low) / 2
        if middle.astimezone(zone).replace(tzinfo=None) < wall:
            low = middle
        else:
            high = middle
    return high.replace(microsecond=0)


def _spans(ranges: object, where: str) -> tuple[Span, ...]:
    if not isinstance(ranges, Sequence) or isinstance(ranges, str):
        raise HoursError(where, 'give a list of ranges, e.g. [["08:00", "18:00"]]')
    spans = []
    for n, pair in enumerate(ranges):
        here = f"{where}[{n}]"
        if not isinstance(pair, Sequence) or isinstance(pair, str) or len(pair) != 2:
            raise HoursError(here, 'a range is two times, ["08:00", "18:00"]')
        start = _clock(pair[0], here, end=False)
        assert start is not None
        end = _clock(pair[1], here, end=True)
        if end == start:
            raise HoursError(here, "a range that ends when it starts is empty (a whole day is 00:00 to 24:00)")
        spans.append(Span(start, end))
    return tuple(sorted(spans, key=lambda span: span.start))


def _no_overlap(weekly: Mapping[str, tuple[Span, ...]]) -> None:
    """Ranges of a week do not overlap, across midnight included (minutes of the week)."""
    week = 7 * 24 * 60
    taken: list[tuple[int, int, str]] = []
    for index, day in enumerate(WEEKDAYS):
        for n, span in enumerate(weekly[day]):
            start = index * 24 * 60 + span.start.hour * 60 + span.start.minute
            if span.end is None:
                length = 24 * 60 - (span.start.hour * 60 + span.start.minute)
            else:
                end = span.end.hour * 60 + span.end.minute
                length = (end - (span.start.hour * 60 + span.start.minute)) % (24 * 60)
            taken.append((start, start + length, f"hours.{day}[{n}]"))
    taken.sort()
    for (_a_start, a_end, a_where), (b_start, _b_end, b_where) in zip(taken, taken[1:], strict=False):
        if b_start < a_end:
            raise HoursError(b_where, f"overlaps {a_where}")
    if len(taken) > 1:
        first_start, _, first_where = taken[0]
        last_start, last_end, last_where = taken[-1]
        if last_end > week and last_end - week > first_start:
            raise HoursError(first_where, f"overlaps {last_where}, which runs past Sunday midnight")


def _dates(holidays: Iterable[str]) -> list[date]:
    if isinstance(holidays, str) or not isinstance(holidays, Iterable):
        raise HoursError("holidays", 'give a list of dates, e.g. ["2026-12-25"]')
    found = []
    for n, text in enumerate(holidays):
        try:
            if not (isinstance(text, str) and len(text) == 10):
                raise ValueError(text)
            found.append(date.fromisoformat(text))
        except ValueError:
            raise HoursError(f"holidays[{n}]", f"a date is written YYYY-MM-DD, not {text!r}") from None
    return found
