"""The wallboard's figures: per skill combination, the callers waiting and the longest
wait, the agents who fit it queued and attending (the overview's supply and demand), and
today's service level; the same figures for all calls on top.

Read with the overview's own readers (`Dashboard`, `ServiceLevelReader`): the board
counts nothing itself, so it always agrees with the overview.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from queues_app.agents.records import AgentStatus
from queues_app.figures.service_level import Figures, ServiceLevelReader, Window, combination_name
from queues_app.monitoring.overview import Dashboard, DemandCell, Figure, LineNow, lines_now


@dataclass
class BoardLine:
    label: str
    waiting: Figure
    oldest_wait_seconds: float | None
    agents_queued: int
    agents_ringing: int
    agents_attending: int
    today: Figures  # service level today
    short: bool = False  # callers wait and nobody who fits is queued


@dataclass
class Board:
    total: BoardLine
    lines: list[BoardLine]
    threshold_seconds: float  # of the service level
    capped: bool  # some counts stopped at their caps: the lines are lower bounds
    by_line: list[LineNow] = field(default_factory=list)  # the configured lines (none: nothing configured)


def _line(cell: DemandCell, today: Window) -> BoardLine:
    return BoardLine(
        label=cell.label,
        waiting=Figure(cell.waiting),
        oldest_wait_seconds=cell.oldest_wait_seconds,
        agents_queued=cell.agents_queued,
        agents_ringing=cell.agents_ringing,
        agents_attending=cell.agents_attending,
        today=today.by_combination.get(combination_name(cell.preferences), Figures()),
        short=cell.short,
    )


def read_lines(dashboard: Dashboard, only: str | None = None) -> list[LineNow]:
    """The configured lines (or only the one asked for) as they stand, with today's
    figures (one Query more)."""
    center = dashboard.center
    lines = [line for line in center.lines.configured() if only is None or line.line_id == only]
    if not lines:
        return []
    today = ServiceLevelReader(center.db, clock=dashboard.clock).lines_today()
    return lines_now(center, lines, dashboard.clock(), today)


def read_board(dashboard: Dashboard, only_line: str | None = None) -> Board:
    """Every combination of the catalog, then the preference sets with "any" that have
    callers waiting or figures today (as the overview's grid and service level show
    them), under the totals of the calls panel."""
    calls = dashboard.calls_panel()
    today = ServiceLevelReader(dashboard.center.db, clock=dashboard.clock).read().today
    names = dashboard.center.catalog.names
    partial = [
        {name: (None if value == "any" else value) for name, value in zip(names, combination.split("#"), strict=False)}
        for combination in today.by_combination
        if "any" in combination.split("#")
    ]
    grid = dashboard.supply_and_demand(also=partial)
    total = BoardLine(
        label="All calls",
        waiting=calls.callers_waiting,
        oldest_wait_seconds=calls.oldest_wait_seconds,
        agents_queued=calls.agents[AgentStatus.QUEUED].value,
        agents_ringing=calls.agents[AgentStatus.RINGING].value,
        agents_attending=calls.agents[AgentStatus.ATTENDING].value,
        today=today.overall,
    )
    return Board(
        total=total,
        lines=[] if only_line else [_line(cell, today) for cell in [*grid.cells.values(), *grid.flexible]],
        threshold_seconds=today.threshold_seconds,
        capped=grid.waiting_capped or grid.agents_capped,
        by_line=read_lines(dashboard, only_line),
    )
