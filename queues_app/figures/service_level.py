"""Service level of the calls, as a contact center reports it: how many callers were
answered within `SERVICE_LEVEL_SECONDS`, the average speed of answer, the longest wait,
abandoned calls and the abandon rate, per skill combination and overall, over the last
15 minutes and today (the centre's day, in its TIME_ZONE), with agent occupancy.

Every figure comes from a call fact, written by the change that answered, abandoned or
ended the call in its own transaction and counted exactly once by `figures/tally.py`
(docs/scale.md, "Counting every call once"). Reading is two reads of the shards: the
last 15 minutes' items (at most 15 x the combinations seen, in each shard), and today's
totals (one item per combination in each shard).

Items in the metrics table, each partition spread over FIGURE_SHARDS (`SERVICE`,
`SERVICE#1` ... : a counting transaction adds to one, picked at random; a read adds
them up):

    pk SERVICE           sk <minute>#<combination>   a minute's figures of one combination
    pk SERVICE_DAY       sk <day>#<combination>      a centre's day's running figures of one combination
    pk SERVICE_INTERVAL  sk <UTC start>#<combination> a quarter hour's figures, kept
                                                     REPORT_RETENTION_DAYS for the interval
                                                     reports (figures/intervals.py)

A quarter hour is keyed by the UTC minute it starts at: every time zone's quarter hours
start on UTC quarter hours, and the repeated hour of a change of clocks stays two hours.

Figures: `answered`, `answered_within` (waited at most the threshold in force when it
was answered), `wait_sum` (seconds, answered calls), `abandoned`, `abandoned_wait_sum`,
`wait_max` (longest wait of any caller who left the line, answered or not), `handled`
and `handle_sum` (calls that ended, and their seconds from answer to end). Occupancy
is sampled: `collect_metrics` adds the busy (ringing, attending, wrap-up) and the staffed
(busy, or idle in the queue) agents it counts at each pass under the combination
`occupancy`, so occupancy over a window is the sum of busy agents over the sum of
staffed agents across its samples (docs/architecture.md, "Definitions").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from queues_app.ddb import parallel
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import centre_date, now
from queues_app.ddb.codec import unmarshal
from queues_app.figures import counters, facts
from queues_app.lines.store import Promise

MINUTE_PK = "SERVICE"
DAY_PK = "SERVICE_DAY"
INTERVAL_PK = "SERVICE_INTERVAL"
# The same three, per line (sk <minute|day|quarter hour>#<line_id>), counted by each
# line's own promise; apart from the combinations', which add up to the whole centre.
LINE_PKS = {MINUTE_PK: "LINE_SERVICE", DAY_PK: "LINE_SERVICE_DAY", INTERVAL_PK: "LINE_SERVICE_INTERVAL"}
# Each of them is spread over this many partitions: a counting transaction adds to one
# picked at random, and a read merges them (docs/scale.md, "Counting every call once").
FIGURE_SHARDS = 4
INTERVAL_MINUTES = 15  # the stored interval; reports add them up to 30 or 60
DEFAULT_REPORT_RETENTION_DAYS = 400
OCCUPANCY = "occupancy"  # the pseudo-combination of the occupancy samples
RECENT_MINUTES = 15
DEFAULT_THRESHOLD_SECONDS = 20


def threshold_seconds() -> float:
    from django.conf import settings

    return float(getattr(settings, "SERVICE_LEVEL_SECONDS", DEFAULT_THRESHOLD_SECONDS))


combination_name = facts.combination_name


def report_retention() -> timedelta:
    from django.conf import settings

    return timedelta(days=int(getattr(settings, "REPORT_RETENTION_DAYS", DEFAULT_REPORT_RETENTION_DAYS)))


def interval_start(moment: datetime) -> str:
    """The UTC minute that starts the quarter hour of `moment`: its interval's key."""
    utc = moment.astimezone(UTC)
    return counters.minute_of(utc.replace(minute=utc.minute - utc.minute % INTERVAL_MINUTES))


def figure_partitions(pk: str) -> list[str]:
    """The partitions a figure partition is spread over: its own name (shard 0, where an
    earlier version wrote every figure, so that they are read with the rest) and `<pk>#<n>`."""
    return [figure_shard(pk, n) for n in range(FIGURE_SHARDS)]


def figure_shard(pk: str, shard: int) -> str:
    return pk if shard == 0 else f"{pk}#{shard}"


def _figure_bases(moment: datetime, combination: str) -> list[tuple[str, str, timedelta | None]]:
    return [
        (MINUTE_PK, f"{counters.minute_of(moment)}#{combination}", None),
        (DAY_PK, f"{centre_date(moment)}#{combination}", None),
        (INTERVAL_PK, f"{interval_start(moment)}#{combination}", report_retention()),
    ]


def figure_keys(moment: datetime, combination: str, shard: int = 0) -> list[tuple[str, str, timedelta | None]]:
    """The items a figure at `moment` adds to, each (pk, sk, how long it is kept): its
    minute's, its centre's day's and its quarter hour's, in the figure partitions' `shard`."""
    return [(figure_shard(pk, shard), sk, keep) for pk, sk, keep in _figure_bases(moment, combination)]


def line_figure_keys(moment: datetime, line_id: str, shard: int = 0) -> list[tuple[str, str, timedelta | None]]:
    """The items a fact of a call on `line_id` adds to, besides its combination's."""
    return [
        (figure_shard(LINE_PKS[pk], shard), sk.rsplit("#", 1)[0] + f"#{line_id}", keep)
        for pk, sk, keep in _figure_bases(moment, "")
    ]


def line_fact_figures(kind: str, seconds: float, promise: Promise | None) -> tuple[dict[str, float], dict[str, float]]:
    """What one call fact adds to its line's items: answered within the line's own
    threshold; a caller who hung up sooner than its `short_abandon_seconds` counted apart
    (neither for nor against the service level)."""
    threshold = promise.service_level_seconds if promise else threshold_seconds()
    seconds = max(0.0, float(seconds))
    if kind == facts.ABANDONED and promise and seconds < promise.short_abandon_seconds:
        return {"short_abandoned": 1, "offered": 0}, {}
    if kind == facts.ANSWERED:
        within = 1 if seconds <= threshold else 0
        return {"answered": 1, "answered_within": within, "wait_sum": seconds, "offered": 0}, {"wait_max": seconds}
    return fact_figures(kind, seconds)


CALLBACK_FIGURES = {
    facts.CALLBACK_REQUESTED: {"callbacks_requested": 1, "offered": 0},
    facts.CALLBACK_CONNECTED: {"callbacks_connected": 1, "offered": 0},
    facts.CALLBACK_FAILED: {"callbacks_failed": 1, "offered": 0},
}


def fact_figures(kind: str, seconds: float) -> tuple[dict[str, float], dict[str, float]]:
    """What one call fact adds to its items (sums) and the maxima it may raise (peaks)."""
    seconds = max(0.0, float(seconds))
    if kind == facts.OFFERED:
        return {"offered": 1}, {}
    # `offered` 0: an item this version wrote counts arrivals (an earlier version's did not).
    if kind == facts.ANSWERED:
        within = 1 if seconds <= threshold_seconds() else 0
        return {"answered": 1, "answered_within": within, "wait_sum": seconds, "offered": 0}, {"wait_max": seconds}
    if kind == facts.ABANDONED:
        return {"abandoned": 1, "abandoned_wait_sum": seconds, "offered": 0}, {"wait_max": seconds}
    if kind == facts.REFUSED:  # never entered the line: not offered, nothing to answer
        return {"refused": 1, "offered": 0}, {}
    if kind == facts.OVERFLOWED:  # neither for nor against the service level
        return {"overflowed": 1, "offered": 0}, {"wait_max": seconds}
    if kind in CALLBACK_FIGURES:  # beside the caller's own facts: counted apart
        return {
            **CALLBACK_FIGURES[kind],
            **({"callback_connect_sum": seconds} if kind == facts.CALLBACK_CONNECTED else {}),
        }, {}
    return {"handled": 1, "handle_sum": seconds}, {}


def sample_occupancy(db: Dynamo, busy: int, staffed: int, *, moment: datetime | None = None) -> None:
    """One sample of the agents busy with a call (ringing, attending, wrap-up) and the
    agents staffed (busy, or idle in the queue). The stored names are the first version's."""
    values: dict[str, float] = {
        "occupancy_attending": busy,
        "occupancy_logged_in": staffed,
        "occupancy_samples": 1,
    }
    for pk, sk, keep in figure_keys(moment or now(), OCCUPANCY):
        counters.recorder.tally(pk, sk, values, keep=keep)
    counters.flush_if_due(db)


@dataclass
class Figures:
    """The service figures of one combination (or all of them) over one window."""

    offered: int = 0  # callers who entered the line
    offered_counted: bool = False  # the items counted arrivals (an earlier version's did not)
    answered: int = 0
    answered_within: int = 0
    wait_sum: float = 0.0
    abandoned: int = 0
    abandoned_wait_sum: float = 0.0
    wait_max: float | None = None
    handled: int = 0
    handle_sum: float = 0.0
    overflowed: int = 0  # ended unanswered past their line's limit
    short_abandoned: int = 0  # (per line) hung up sooner than the line's short_abandon_seconds
    refused: int = 0  # turned away by their line (closed, or full): never offered
    callbacks_requested: int = 0  # queued callbacks asked for (scheduled ones too)
    callbacks_connected: int = 0
    callback_connect_sum: float = 0.0  # seconds from each callback's request to its connection
    callbacks_failed: int = 0  # not reached in their line's attempts

    def add(self, values: dict[str, float]) -> None:
        if "offered" in values:
            self.offered += int(values["offered"])
            self.offered_counted = True
        self.handled += int(values.get("handled", 0))
        self.handle_sum += values.get("handle_sum", 0.0)
        self.answered += int(values.get("answered", 0))
        self.answered_within += int(values.get("answered_within", 0))
        self.wait_sum += values.get("wait_sum", 0.0)
        self.abandoned += int(values.get("abandoned", 0))
        self.abandoned_wait_sum += values.get("abandoned_wait_sum", 0.0)
        self.overflowed += int(values.get("overflowed", 0))
        self.short_abandoned += int(values.get("short_abandoned", 0))
        self.refused += int(values.get("refused", 0))
        self.callbacks_requested += int(values.get("callbacks_requested", 0))
        self.callbacks_connected += int(values.get("callbacks_connected", 0))
        self.callback_connect_sum += values.get("callback_connect_sum", 0.0)
        self.callbacks_failed += int(values.get("callbacks_failed", 0))
        peak = values.get("wait_max")
        if peak is not None and (self.wait_max is None or peak > self.wait_max):
            self.wait_max = peak

    @property
    def left_the_line(self) -> int:
        """Callers who stopped waiting in the window: answered or abandoned."""
        return self.answered + self.abandoned

    @property
    def gone(self) -> int:
        """Callers no longer in line by the window's end: answered, abandoned (short or
        not) or overflowed."""
        return self.left_the_line + self.overflowed + self.short_abandoned

    @property
    def service_level(self) -> float | None:
        """Share of the callers who left the line that were answered within the threshold."""
        return self.answered_within / self.left_the_line if self.left_the_line else None

    @property
    def average_speed_of_answer(self) -> float | None:
        return self.wait_sum / self.answered if self.answered else None

    @property
    def average_callback_connect_time(self) -> float | None:
        """From a callback's request to its connection, on average."""
        return self.callback_connect_sum / self.callbacks_connected if self.callbacks_connected else None

    @property
    def average_handle_time(self) -> float | None:
        return self.handle_sum / self.handled if self.handled else None

    @property
    def abandon_rate(self) -> float | None:
        return self.abandoned / self.left_the_line if self.left_the_line else None

    @property
    def service_level_percent(self) -> float | None:
        return None if self.service_level is None else self.service_level * 100

    @property
    def abandon_rate_percent(self) -> float | None:
        return None if self.abandon_rate is None else self.abandon_rate * 100


@dataclass
class Occupancy:
    busy: float = 0.0
    staffed: float = 0.0
    samples: int = 0

    def add(self, values: dict[str, float]) -> None:
        self.busy += values.get("occupancy_attending", 0.0)
        self.staffed += values.get("occupancy_logged_in", 0.0)
        self.samples += int(values.get("occupancy_samples", 0))

    @property
    def share(self) -> float | None:
        """Busy agents over staffed agents, summed across the samples."""
        return self.busy / self.staffed if self.staffed else None

    @property
    def percent(self) -> float | None:
        return None if self.share is None else self.share * 100


@dataclass
class Window:
    name: str  # "15 minutes" | "today"
    threshold_seconds: float
    overall: Figures = field(default_factory=Figures)
    by_combination: dict[str, Figures] = field(default_factory=dict)
    occupancy: Occupancy = field(default_factory=Occupancy)

    def add(self, combination: str, values: dict[str, float]) -> None:
        if combination == OCCUPANCY:
            self.occupancy.add(values)
            return
        self.by_combination.setdefault(combination, Figures()).add(values)
        self.overall.add(values)

    @property
    def rows(self) -> list[tuple[str, Figures]]:
        """(combination as people read it, figures), in name order: those with callers who
        left the line (a combination whose only news is a call ending has no service level)."""
        return [
            (name.replace("#", " · "), figures)
            for name, figures in sorted(self.by_combination.items())
            if figures.left_the_line
        ]


@dataclass(frozen=True)
class AnswerRates:
    like: float | None  # callers of the combinations asked about answered a second; None: none answered
    every: float | None  # callers of every combination answered a second
    answered_like: int  # how many of those combinations were answered in the window
    occupancy: float | None = None  # busy over staffed agents in the window's samples; None: no sample
    patience: float = 0.0  # callers' giving up a second of waiting: those who gave up over every second waited


@dataclass
class ServiceLevel:
    recent: Window
    today: Window


def figures_from(rows: list[tuple[str, dict[str, float]]], name: str, threshold: float) -> Window:
    """A window's figures from its items, each (combination, values)."""
    window = Window(name, threshold)
    for combination, values in rows:
        window.add(combination, values)
    return window


def query_spread(db: Dynamo, pk: str, params: dict) -> list[dict]:
    """A Query of a figure partition (`params` naming `:pk`) run on each of its shards at
    once, the items unmarshalled."""

    def one(partition: str) -> list[dict]:
        asked = {
            **params,
            "ExpressionAttributeValues": {**params["ExpressionAttributeValues"], ":pk": {"S": partition}},
        }
        return [unmarshal(raw) for response in db.pages("query", **asked) for raw in response.get("Items", [])]

    return [item for items in parallel.each(one, figure_partitions(pk)) for item in items]


class ServiceLevelReader:
    def __init__(self, db: Dynamo, clock: Callable[[], datetime] = now):
        self.db = db
        self.clock = clock

    @property
    def table_name(self) -> str:
        return self.db.table("metrics")

    def _items(self, pk: str, since: str, prefix: str | None = None) -> list[tuple[str, dict[str, float]]]:
        """(combination, values) of a partition's items from `since` on: one Query per page
        (a page holds about 5,000 of these small items, more than a day has combinations)."""
        params: dict = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk AND sk >= :since",
            "ExpressionAttributeValues": {":pk": {"S": pk}, ":since": {"S": since}},
        }
        if prefix:
            params["KeyConditionExpression"] = "pk = :pk AND begins_with(sk, :since)"
            params["ExpressionAttributeValues"][":since"] = {"S": prefix}
        rows = []
        for item in query_spread(self.db, pk, params):
            combination = item["sk"].split("#", 1)[1]
            rows.append((combination, {k: float(v) for k, v in item.items() if k not in ("pk", "sk", "expires_at")}))
        return rows

    def last_hour(self) -> Window:
        """The last 60 minutes (this one included), per combination: a Query of each shard."""
        since = counters.minute_of(self.clock() - timedelta(minutes=59))
        return figures_from(self._items(MINUTE_PK, since), "hour", threshold_seconds())

    def answer_rates(self, combinations: set[str]) -> AnswerRates:
        """How many callers were answered a second lately, of these combinations and of
        all: over the last `RECENT_MINUTES` minutes, or since the first minute with calls
        when that is later (a day just begun is not read as slow); the occupancy and the
        callers' rate of giving up over the same minutes. A Query of each shard."""
        moment = self.clock()
        since = counters.minute_of(moment - timedelta(minutes=RECENT_MINUTES - 1))
        params: dict = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk AND sk >= :since",
            "ExpressionAttributeValues": {":pk": {"S": MINUTE_PK}, ":since": {"S": since}},
        }
        like = 0
        first = None
        window = Window("recent", 0.0)
        for item in query_spread(self.db, MINUTE_PK, params):
            minute, combination = item["sk"].split("#", 1)
            window.add(combination, item)
            if combination == OCCUPANCY:
                continue
            if "offered" in item or "answered" in item:
                first = minute if first is None else min(first, minute)
            like += int(item.get("answered", 0)) if combination in combinations else 0
        if first is None:
            return AnswerRates(None, None, 0)
        began = datetime.strptime(first, "%Y-%m-%dT%H:%M").replace(tzinfo=UTC)
        span = max(60.0, (moment - began).total_seconds())
        every, waited = window.overall.answered, window.overall.wait_sum + window.overall.abandoned_wait_sum
        # Exponential patience's rate, as Erlang A has it: the callers who gave up over the time callers waited.
        patience = window.overall.abandoned / waited if waited else 0.0
        return AnswerRates(
            like / span if like else None, every / span if every else None, like, window.occupancy.share, patience
        )

    def lines_today(self) -> Window:
        """Each line's figures of the centre's today, by the line's own promise (the
        window's combinations are line ids): a Query of each shard."""
        day = centre_date(self.clock())
        return figures_from(self._items(LINE_PKS[DAY_PK], "", prefix=f"{day}#"), "today", threshold_seconds())

    def read(self) -> ServiceLevel:
        """The last `RECENT_MINUTES` minutes (this one included) and the centre's today: two reads of the shards."""
        moment = self.clock()
        threshold = threshold_seconds()
        since = counters.minute_of(moment - timedelta(minutes=RECENT_MINUTES - 1))
        recent = figures_from(self._items(MINUTE_PK, since), f"{RECENT_MINUTES} minutes", threshold)
        today = figures_from(self._items(DAY_PK, "", prefix=f"{centre_date(moment)}#"), "today", threshold)
        return ServiceLevel(recent, today)
