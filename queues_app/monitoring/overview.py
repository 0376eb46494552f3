"""What the overview shows, read with a bounded number of requests.

Every figure here comes from capped COUNT queries, Limit-1 queries or one capped page,
so a panel costs the same with ten items as with ten thousand. When a cap is reached
the figure says so (`capped`), and the page shows "1,000+" rather than a wrong number.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from queues_app import staffing
from queues_app.agents.records import Agent, AgentStatus
from queues_app.agents.roster import Agents
from queues_app.agents.skills import ANY, fits
from queues_app.centre.call_center import CallCenter
from queues_app.centre.keys import ANY_VALUE
from queues_app.ddb.clock import centre_zone, from_iso, now
from queues_app.figures.service_level import Figures, ServiceLevelReader, Window, combination_name
from queues_app.lines.records import Line
from queues_app.monitoring.shared import cached_panel
from queues_app.shipments.queue import DEFAULT_QUEUE, SPILLOVER_QUEUE, ShipmentQueue
from queues_app.tasks.queue import TaskQueue, TaskStatus

WAITING_READ_CAP = 1000  # waiting callers read for the grid (the longest-waiting first)
NOT_READY_SHOWN = 10  # not-ready agents named on the overview (with why and for how long)
LOGGED_IN_READ_CAP = 2000  # logged-in agents read per status for the grid
COUNT_CAP = 10_000
FLOOR_SHARE = 1 / 3  # of the panel period: how long one read of the logged-in agents serves every panel


def _age(stamp: str | None, moment: datetime) -> float | None:
    at = from_iso(stamp)
    return max(0.0, (moment - at).total_seconds()) if at else None


@dataclass
class Figure:
    value: int
    capped: bool = False


@dataclass
class CallsPanel:
    callers_waiting: Figure
    oldest_wait_seconds: float | None
    agents: dict[str, Figure]  # by AgentStatus
    not_ready: list[Agent] = field(default_factory=list)  # the first NOT_READY_SHOWN, by name

    @property
    def available(self) -> int:
        return self.agents[AgentStatus.QUEUED].value + self.agents[AgentStatus.AVAILABLE].value

    @property
    def in_flight(self) -> Figure:
        return self.agents[AgentStatus.ATTENDING]


@dataclass
class ShipmentsPanel:
    queue: str
    queued: Figure
    in_flight: Figure
    delayed: Figure
    dlq: Figure
    oldest_age_seconds: float | None
    spillover: Figure | None = None  # sidelined work, taken when the live queue is caught up


@dataclass
class TasksPanel:
    pending: Figure
    taken: Figure
    succeeded: Figure
    failed: Figure
    oldest_pending_age_seconds: float | None
    shed_last_hour: int


@dataclass
class DemandCell:
    """One preference set: callers who wait with exactly these preferences, and the
    agents who could take them."""

    preferences: dict[str, str | None]
    waiting: int = 0
    oldest_wait_seconds: float | None = None
    agents_queued: int = 0  # queued now, ready to take a call
    agents_logged_in: int = 0  # not offline: queued, available, attending or wrap-up
    agents_ringing: int = 0  # offered a call, not picked up yet
    agents_attending: int = 0  # on a call now
    # Erlang C's agents for the last hour's calls and handle time to meet the target
    # (SERVICE_LEVEL_TARGET within SERVICE_LEVEL_SECONDS); None without calls to go by.
    agents_needed: int | None = None

    @property
    def label(self) -> str:
        return " · ".join(value if value is not ANY else f"any {name}" for name, value in self.preferences.items())

    @property
    def agents_ready(self) -> int:
        """Agents taking calls who fit: queued, ringing or attending. Erlang C's agents
        are these (not those in wrap-up or not ready), so they stand beside `agents_needed`."""
        return self.agents_queued + self.agents_ringing + self.agents_attending

    @property
    def understaffed(self) -> bool:
        """Fewer agents take calls who fit than Erlang C says the last hour's calls need."""
        return self.agents_needed is not None and self.agents_ready < self.agents_needed

    @property
    def uncovered(self) -> bool:
        """Callers wait that no logged-in agent could take."""
        return self.waiting > 0 and self.agents_logged_in == 0

    @property
    def short(self) -> bool:
        """Callers wait and nobody who fits is queued right now."""
        return self.waiting > 0 and self.agents_queued == 0


@dataclass
class SupplyDemand:
    dimensions: tuple[str, ...]
    cells: dict[tuple, DemandCell] = field(default_factory=dict)  # full combinations
    flexible: list[DemandCell] = field(default_factory=list)  # preference sets with "any"
    waiting_capped: bool = False
    agents_capped: bool = False

    def cell(self, *values: str) -> DemandCell:
        return self.cells[tuple(values)]

    @property
    def rows(self) -> list[tuple[str, list[DemandCell]]]:
        """For a two-dimension catalog: one row per value of the first, a cell per value of the second."""
        rows: dict[str, list[DemandCell]] = {}
        for combo, cell in self.cells.items():
            rows.setdefault(combo[0], []).append(cell)
        return list(rows.items())

    @property
    def warnings(self) -> list[DemandCell]:
        return [c for c in [*self.cells.values(), *self.flexible] if c.uncovered]


@dataclass
class LineNow:
    """One of the centre's lines as it stands: open or not (and when it opens), its callers
    waiting and the longest wait, and (on the boards) its day by its own promise."""

    line: Line
    open_now: bool
    opens_at: datetime | None
    waiting: int
    oldest_wait_seconds: float | None
    today: Figures = field(default_factory=Figures)

    @property
    def below_target(self) -> bool:
        level = self.today.service_level
        return level is not None and level < self.line.service_level_target


def lines_now(center: CallCenter, lines: list[Line], moment: datetime, today: Window | None = None) -> list[LineNow]:
    """Each line as it stands at `moment`: its count of callers waiting (one BatchGetItem
    for all of them) and its longest wait (the line by arrival, read until each line with
    callers has shown up); with `today`, each line's figures from it."""
    waiting = center.line.on_line([line.line_id for line in lines])
    oldest = center.line.oldest_by_line({line_id for line_id, n in waiting.items() if n})
    zone = centre_zone()
    shown = []
    for line in lines:
        since = from_iso(oldest.get(line.line_id))
        open_now = line.hours.is_open(moment, zone)
        shown.append(
            LineNow(
                line,
                open_now,
                None if open_now else line.hours.opens_at(moment, zone),
                waiting[line.line_id],
                (moment - since).total_seconds() if since and waiting[line.line_id] else None,
                today.by_combination.get(line.line_id, Figures()) if today else Figures(),
            )
        )
    return shown


@dataclass
class Floor:
    """The logged-in agents: a capped page of each of their statuses' index partitions
    (`capped`: some partition had more)."""

    agents: list[Agent]
    capped: bool

    def counts(self) -> dict[str, tuple[int, bool]]:
        """Logged-in agents per status, as `count_by_status` gives them; exact unless capped."""
        tally = Counter(agent.status for agent in self.agents)
        return {s: (tally[s], self.capped) for s in AgentStatus.ALL if s != AgentStatus.OFFLINE}


class Dashboard:
    def __init__(
        self,
        center: CallCenter | None = None,
        shipments: ShipmentQueue | None = None,
        tasks: TaskQueue | None = None,
        clock: Callable[[], datetime] = now,
    ):
        self.center = center or CallCenter()
        self.agents: Agents = self.center.agents
        self.shipments = shipments or ShipmentQueue(self.center.db)
        self.tasks = tasks or TaskQueue(self.center.db)
        self.clock = clock
        # A viewer who has just changed something reads the floor now, not the period's.
        self.fresh = False

    def floor(self) -> Floor:
        """The logged-in agents, read at most once every `FLOOR_SHARE` of the panel period
        (the panel cache's) for every panel and viewer that shows them: the calls panel's
        counts and the grid, refreshed together (a live stream's round, the wallboard),
        read them once, and their figures are at most that much older for it."""
        from django.conf import settings

        def read() -> dict:
            return {"floor": Floor(*self.agents.logged_in(cap=LOGGED_IN_READ_CAP))}

        seconds = settings.SWITCHBOARD_PANEL_CACHE_SECONDS * FLOOR_SHARE
        return cached_panel(self.center.db.prefix, "floor", read, seconds, fresh=self.fresh)["floor"]

    def calls_panel(self) -> CallsPanel:
        # The logged-in statuses from the floor the grid reads too; counted apart only when
        # it was capped, and the offline always (nobody shows them one by one).
        floor = self.floor()
        counted = AgentStatus.ALL if floor.capped else (AgentStatus.OFFLINE,)
        pairs = {**floor.counts(), **self.agents.count_by_status(cap=COUNT_CAP, statuses=counted)}
        agents = {status: Figure(*pairs[status]) for status in AgentStatus.ALL}
        waiting, more = self.center.line.count_waiting(cap=COUNT_CAP)
        oldest = self.center.line.longest_waiting_since()
        away = agents[AgentStatus.NOT_READY].value
        not_ready = self.agents.list(status=AgentStatus.NOT_READY, limit=NOT_READY_SHOWN).items if away else []
        return CallsPanel(Figure(waiting, more), _age(oldest, self.clock()), agents, not_ready)

    def shipments_panel(self, queue: str = DEFAULT_QUEUE) -> ShipmentsPanel:
        counts = self.shipments.counts(queue, cap=COUNT_CAP)
        capped = counts.capped
        return ShipmentsPanel(
            queue=queue,
            queued=Figure(counts.queued, capped and counts.queued >= COUNT_CAP),
            in_flight=Figure(counts.in_flight, capped and counts.in_flight >= COUNT_CAP),
            delayed=Figure(counts.delayed, capped and counts.delayed >= COUNT_CAP),
            dlq=Figure(counts.dlq, capped and counts.dlq >= COUNT_CAP),
            oldest_age_seconds=_age(self.shipments.oldest_queued_at(queue), self.clock()),
            spillover=Figure(*self._count_spillover()) if queue == DEFAULT_QUEUE else None,
        )

    def _count_spillover(self) -> tuple[int, bool]:
        depth = self.shipments.count_queued(SPILLOVER_QUEUE, cap=COUNT_CAP)
        return depth, depth >= COUNT_CAP

    def tasks_panel(self) -> TasksPanel:
        def figure(status: str) -> Figure:
            return Figure(*self.tasks.count(status, cap=COUNT_CAP))

        oldest = self.tasks.oldest_pending_created()
        return TasksPanel(
            pending=figure(TaskStatus.PENDING),
            taken=figure(TaskStatus.TAKEN),
            succeeded=figure(TaskStatus.SUCCESS),
            failed=figure(TaskStatus.FAILURE),
            oldest_pending_age_seconds=_age(oldest, self.clock()),
            shed_last_hour=sum(row["shed"] for row in self.tasks.shed_history(minutes=60)),
        )

    def supply_and_demand(self, also: Iterable[dict] = ()) -> SupplyDemand:
        """Callers waiting per preference set against the agents who fit them: every full
        combination, the sets with "any" that have callers waiting, and those of `also`.

        Reads the waiting line's counts per preference set, the longest wait of each, and
        the logged-in agents (one capped page per status).
        """
        catalog = self.center.catalog
        moment = self.clock()
        grid = SupplyDemand(dimensions=catalog.names)
        for combo in catalog.all_combinations():
            grid.cells[combo] = DemandCell(dict(zip(catalog.names, combo, strict=True)))
        flexible: dict[tuple, DemandCell] = {}
        for prefs in also:
            asked = tuple(prefs.get(name) for name in catalog.names)
            if ANY in asked:
                flexible.setdefault(tuple("" if v is ANY else v for v in asked), DemandCell(dict(prefs)))

        # The partitions' counts (one BatchGetItem) and, for the longest wait of each, the
        # line by arrival until every non-empty partition has shown up (at most a page
        # or so): the cost does not grow with the line's length.
        counts = self.center.line.counts()
        oldest = self.center.line.oldest_by_partition(set(counts), cap=WAITING_READ_CAP)
        grid.waiting_capped = len(oldest) < len(counts)
        for wanted, waiting in counts.items():
            prefs = {name: (ANY if v == ANY_VALUE else v) for name, v in zip(catalog.names, wanted, strict=False)}
            wants: tuple = tuple(prefs.values())
            if ANY in wants:
                cell = flexible.setdefault(tuple("" if v is ANY else v for v in wants), DemandCell(prefs))
            else:
                cell = grid.cells.setdefault(wants, DemandCell(prefs))
            cell.waiting += waiting
            age = _age(oldest.get(wanted), moment)
            if age is not None and (cell.oldest_wait_seconds is None or age > cell.oldest_wait_seconds):
                cell.oldest_wait_seconds = age

        floor = self.floor()
        logged_in, grid.agents_capped = floor.agents, floor.capped
        cells = [*grid.cells.values(), *flexible.values()]
        for agent in logged_in:
            for cell in cells:
                if fits(agent.skills, cell.preferences):
                    cell.agents_logged_in += 1
                    if agent.status == AgentStatus.QUEUED:
                        cell.agents_queued += 1
                    elif agent.status == AgentStatus.ATTENDING:
                        cell.agents_attending += 1
                    elif agent.status == AgentStatus.RINGING:
                        cell.agents_ringing += 1
        grid.flexible = sorted(flexible.values(), key=lambda c: -(c.oldest_wait_seconds or 0))
        self._advise(cells)
        return grid

    def _advise(self, cells: list[DemandCell]) -> None:
        """Each cell's agents needed, by Erlang C, from the last hour's callers offered and
        handle time of its combination (one Query of the last hour's minutes)."""
        from django.conf import settings

        hour = ServiceLevelReader(self.center.db, clock=self.clock).last_hour()
        target = float(getattr(settings, "SERVICE_LEVEL_TARGET", 0.8))
        for cell in cells:
            figures = hour.by_combination.get(combination_name(cell.preferences))
            aht = figures.average_handle_time if figures else None
            if figures and figures.left_the_line and aht:
                cell.agents_needed = staffing.required(
                    calls_per_hour=figures.left_the_line,
                    aht_seconds=aht,
                    answer_within_seconds=hour.threshold_seconds,
                    service_level=target,
                ).agents


@dataclass
class Alarm:
    """Something a supervisor should look at; the page words it."""

    queue: str
    kind: str  # dlq | age | backpressure | shed
    count: int = 0
    age_seconds: float = 0.0
    limit: float = 0.0


def alarms_for(
    queue: str,
    *,
    depth: int | None = None,
    oldest_age: float | None = None,
    dlq: int | None = None,
    thresholds: dict | None = None,
    bounds: dict | None = None,
) -> list[Alarm]:
    """The alarms one panel shows: DLQ not empty, oldest item older than its threshold,
    backlog past its backpressure bound."""
    found = []
    if dlq:
        found.append(Alarm(queue, "dlq", count=dlq))
    limit = (thresholds or {}).get(queue)
    if limit is not None and oldest_age is not None and oldest_age > limit:
        found.append(Alarm(queue, "age", age_seconds=oldest_age, limit=limit))
    bound = (bounds or {}).get(queue)
    if bound is not None and depth is not None and depth > bound:
        found.append(Alarm(queue, "backpressure", count=depth, limit=bound))
    return found
