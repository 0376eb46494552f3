"""The interval report: a day of the centre (its TIME_ZONE) in intervals of 15, 30 or 60
minutes, per skill combination and overall: offered, answered, answered within the
threshold, abandoned, service level, average speed of answer, average handle time,
longest wait and occupancy. A Query of each shard of the quarter-hour items (`SERVICE_INTERVAL`,
written by `service_level`), a page per 5,000 or so items."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import centre_zone, now
from queues_app.ddb.errors import InvalidRequest, NotFound
from queues_app.figures import counters
from queues_app.figures.service_level import (
    INTERVAL_PK,
    LINE_PKS,
    OCCUPANCY,
    Figures,
    Occupancy,
    query_spread,
    report_retention,
    threshold_seconds,
)

INTERVALS = (15, 30, 60)
ALL = "all"


@dataclass
class IntervalFigures:
    figures: Figures = field(default_factory=Figures)
    occupancy: Occupancy = field(default_factory=Occupancy)

    in_queue: int | None = None  # callers still waiting at the interval's end (set by the day's report)

    @property
    def offered(self) -> int:
        """Callers who entered the line in the interval (as Amazon Connect and Genesys
        count them); for an interval an earlier version counted, who left it."""
        return self.figures.offered if self.figures.offered_counted else self.figures.left_the_line


@dataclass
class Interval:
    start: datetime  # in the centre's zone
    by_combination: dict[str, IntervalFigures] = field(default_factory=dict)
    overall: IntervalFigures = field(default_factory=IntervalFigures)

    def add(self, combination: str, values: dict[str, float]) -> None:
        if combination == OCCUPANCY:
            self.overall.occupancy.add(values)
            return
        self.by_combination.setdefault(combination, IntervalFigures()).figures.add(values)
        self.overall.figures.add(values)


@dataclass
class DayReport:
    day: date
    zone: str
    interval_minutes: int
    threshold_seconds: float
    intervals: list[Interval]

    @property
    def combinations(self) -> list[str]:
        return sorted({c for interval in self.intervals for c in interval.by_combination})


def day_bounds(day: date) -> tuple[datetime, datetime]:
    """The centre's day as aware moments: its midnight and the next (23 or 25 hours apart
    on the days the clocks change)."""
    zone = centre_zone()
    start = datetime.combine(day, time(0), tzinfo=zone)
    end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=zone)
    # In UTC: Python subtracts two times of one zone as wall clocks, which would lose the
    # hour the clocks go back.
    return start.astimezone(UTC), end.astimezone(UTC)


class IntervalReader:
    def __init__(self, db: Dynamo):
        self.db = db

    def day(self, day: date, interval_minutes: int = 30, *, by_line: bool = False) -> DayReport:
        """The day's intervals, by combination (and for the whole centre), or with
        `by_line` by line, each counted by its own promise."""
        if interval_minutes not in INTERVALS:
            raise ValueError(f"an interval is one of {INTERVALS} minutes")
        start, end = day_bounds(day)
        step = timedelta(minutes=interval_minutes)
        count = int((end - start) / step)
        intervals = [Interval((start + n * step).astimezone(centre_zone())) for n in range(count)]
        first, last = counters.minute_of(start), counters.minute_of(end)
        pk = LINE_PKS[INTERVAL_PK] if by_line else INTERVAL_PK
        params = {
            "TableName": self.db.table("metrics"),
            "KeyConditionExpression": "pk = :pk AND sk BETWEEN :from AND :to",
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":from": {"S": first}, ":to": {"S": last}},
        }
        # A quarter hour may be in each of the partition's shards: the interval adds them up.
        for item in query_spread(self.db, pk, params):
            stamp, combination = item["sk"].split("#", 1)
            moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M").replace(tzinfo=UTC)
            if not start <= moment < end:
                continue
            index = int((moment - start) / step)
            values = {k: float(v) for k, v in item.items() if k not in ("pk", "sk", "expires_at")}
            intervals[index].add(combination, values)
        _count_in_queue(intervals, now())
        return DayReport(day, str(centre_zone()), interval_minutes, threshold_seconds(), intervals)


def _count_in_queue(intervals: list[Interval], until: datetime) -> None:
    """Each interval's callers still waiting at its end, overall and per combination: the
    day's arrivals so far less those who left the line (callers who arrived the day before
    are not counted; after an interval an earlier version counted, unknown: None). An
    interval that has not begun by `until` has nobody in its queue yet: None."""
    waiting: dict[str, int | None] = {}
    for interval in intervals:
        if interval.start > until:
            break
        for name, shown in [("all", interval.overall), *interval.by_combination.items()]:
            figures, so_far = shown.figures, waiting.get(name, 0)
            if so_far is not None and (figures.offered_counted or not figures.left_the_line):
                so_far += figures.offered - figures.gone
                waiting[name], shown.in_queue = so_far, max(0, so_far)
            else:
                waiting[name] = None


def asked_day(day: str | None, moment: datetime | None = None) -> date:
    """The centre's day a report's `date` names (today's, as of `moment`, when left out):
    InvalidRequest (a 400) for words that are not a day, a day to come, or one older than
    the days reports are kept (REPORT_RETENTION_DAYS)."""
    today = (moment or datetime.now(UTC)).astimezone(centre_zone()).date()
    try:
        wanted = date.fromisoformat(day) if day else today
    except ValueError:
        raise InvalidRequest("`date` is a day as YYYY-MM-DD, e.g. 2026-11-24.") from None
    earliest = today - report_retention()
    if wanted > today:
        raise InvalidRequest(f"`date` {wanted} has not come yet: the latest report is today's, {today}.")
    if wanted < earliest:
        kept = report_retention().days
        raise InvalidRequest(
            f"`date` {wanted} is older than the {kept} days reports are kept: the earliest is {earliest}."
        )
    return wanted


def asked_report(
    db: Dynamo,
    day: str | None,
    interval: str | int | None,
    combination: str | None,
    *,
    known: Collection[str],
    line: str | None = None,
    lines: Collection[str] = (),
):
    """The report a page, the API or a CSV asks for, from their query's words: the date
    (the centre's today when left out; one of the days reports are kept), 15, 30 or 60
    minutes (30 when left out), and a combination (`Spanish#F`, `any` for no preference,
    `all` for the whole centre) among the `known` ones. InvalidRequest (a 400) for words that
    cannot be one or a day outside those kept; NotFound (404) for a combination that is none.
    With `line` (one of `lines`), that line's day, counted by its own promise."""
    wanted = asked_day(day)
    try:
        minutes = int(interval) if interval not in (None, "") else 30
    except (TypeError, ValueError):
        minutes = 0
    if minutes not in INTERVALS:
        raise InvalidRequest("`interval` is 15, 30 or 60 minutes.")
    chosen = (combination or "").strip() or None
    if chosen is not None and (len(chosen) > 200 or not all(part for part in chosen.split("#"))):
        raise InvalidRequest("`combination` is like Spanish#F (`any` for no preference), or `all`.")
    if chosen is not None and chosen != ALL and chosen not in known:
        raise NotFound(f"There is no combination {chosen!r}: a combination is a value of each skill dimension or any.")
    if line:
        if chosen is not None:
            raise InvalidRequest("Ask for a `line` or a `combination`, not both.")
        if line not in lines:
            known_lines = f"the lines are {', '.join(lines)}" if lines else "no line is configured"
            raise NotFound(f"There is no line {line!r}: {known_lines}.")
        return IntervalReader(db).day(wanted, minutes, by_line=True), line
    return IntervalReader(db).day(wanted, minutes), chosen
