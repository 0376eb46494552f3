"""Reports: the centre's day in intervals (figures/intervals.py), as a chart of the
callers offered and answered and a table, for the whole centre, one combination or one
line (counted by the line's own promise); each agent's day (monitoring/agent_report.py);
both as CSV too."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode

from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.errors import InvalidRequest
from queues_app.figures.agent_days import AgentsDay
from queues_app.figures.intervals import ALL, INTERVALS, DayReport, asked_report
from queues_app.inputs import ID_PROBLEM, is_item_id
from queues_app.lines.records import Line
from queues_app.monitoring.agent_report import asked_agents_report
from queues_app.serializers import interval_rows
from queues_app.views.exports import csv_answer

CHART_WIDTH, CHART_HEIGHT = 1000, 160


def _chart(rows: list[dict]) -> dict:
    """Bars of offered (behind) and answered (in front) per interval, scaled to the peak."""
    peak = max((row["offered"] for row in rows), default=0)
    step = CHART_WIDTH / max(1, len(rows))
    bars = []
    for n, row in enumerate(rows):
        offered = CHART_HEIGHT * row["offered"] / peak if peak else 0
        answered = CHART_HEIGHT * row["answered"] / peak if peak else 0
        bars.append(
            {
                "x": round(n * step + step * 0.1, 2),
                "width": round(step * 0.8, 2),
                "offered_y": round(CHART_HEIGHT - offered, 2),
                "offered_h": round(offered, 2),
                "answered_y": round(CHART_HEIGHT - answered, 2),
                "answered_h": round(answered, 2),
                "row": row,
            }
        )
    return {"bars": bars, "peak": peak, "width": CHART_WIDTH, "height": CHART_HEIGHT}


@require_GET
def reports(request):
    asked = _asked(request)
    rows = asked.rows()
    return render(
        request,
        "queues_app/reports.html",
        {
            "report": asked.report,
            "rows": rows,
            "table_rows": [
                row
                for row in rows
                if row["offered"]
                or row["answered"]
                or row["abandoned"]
                or row["short_abandoned"]
                or row["overflowed"]
                or row["refused"]
                or row["callbacks_requested"]
                or row["in_queue_at_end"]
                or row["occupancy"] is not None
            ],
            "shown": asked.shown,
            "line": asked.line,
            "lines": asked.lines,
            "threshold": asked.threshold,
            "combinations": asked.report.combinations,
            "intervals": INTERVALS,
            "chart": _chart(rows),
            "previous_day": asked.report.day - timedelta(days=1),
            "next_day": asked.report.day + timedelta(days=1),
            "day_query": "&" + urlencode({"line": asked.line.line_id} if asked.line else {"combination": asked.shown}),
            "totals": {
                name: sum(row[name] for row in rows)
                for name in (
                    "offered",
                    "answered",
                    "answered_within",
                    "abandoned",
                    "short_abandoned",
                    "overflowed",
                    "refused",
                    "callbacks_requested",
                    "callbacks_connected",
                    "callbacks_failed",
                )
            },
            "query": request.GET.urlencode(),
        },
    )


@require_GET
def reports_csv(request):
    asked = _asked(request)
    columns = {
        "offered": "Offered",
        "answered": "Answered",
        "answered_within": f"Answered within {asked.threshold:g} s",
        "abandoned": "Abandoned",
        **(
            {"short_abandoned": "Short abandons", "overflowed": "Overflowed", "refused": "Refused"}
            if asked.line
            else {}
        ),
        "callbacks_requested": "Callbacks asked for",
        "callbacks_connected": "Callbacks connected",
        "callbacks_failed": "Callbacks failed",
        "callback_connect_seconds": "Callback: request to connection (s)",
        "in_queue_at_end": "In queue at the end",
        "service_level": "Service level",
        "asa_seconds": "Average speed of answer (s)",
        "aht_seconds": "Average handle time (s)",
        "longest_wait_seconds": "Longest wait (s)",
        "occupancy": "Occupancy",
    }
    report = asked.report
    header = [f"Start ({report.zone})", "Line" if asked.line else "Combination", *columns.values()]
    rows = (
        [row["start"], row["line"] or row["combination"], *(row[n] for n in columns)]
        for row in asked.rows(every_combination=True)
    )
    name = f"intervals-{report.day.isoformat()}-{report.interval_minutes}min"
    if asked.line:
        name += f"-{asked.line.line_id}"
    return csv_answer(name, header, rows, dated=False)


@dataclass
class _Asked:
    """The report a page or CSV asks for: the whole centre, a combination (`chosen`) or
    a line."""

    report: DayReport
    chosen: str | None
    line: Line | None
    lines: list[Line]

    @property
    def shown(self) -> str:
        return self.chosen or ALL

    @property
    def threshold(self) -> float:
        return self.line.service_level_seconds if self.line else self.report.threshold_seconds

    def rows(self, *, every_combination: bool = False) -> list[dict]:
        """The line's rows; or the combination's (the whole centre's by default, or with
        `every_combination` each combination's after the whole centre's, as the CSV has)."""
        if self.line:
            return interval_rows(self.report, line=self.line.line_id)
        return interval_rows(self.report, self.chosen if every_combination else self.shown)


def _asked(request) -> _Asked:
    """The report the query asks for (figures.intervals.asked_report); lines listed once
    any is configured."""
    query, center = request.GET, CallCenter()
    every = center.lines.all()  # `main` alone (version 0) while none is configured
    configured = [line for line in every if line.version]
    line_id = (query.get("line") or "").strip() or None
    known = center.catalog.combination_names()
    report, chosen = asked_report(
        center.db,
        query.get("date"),
        query.get("interval"),
        # The form sends both: a line's report is of all its callers.
        None if line_id and query.get("combination") == ALL else query.get("combination"),
        known=known,
        line=line_id,
        lines=[line.line_id for line in every],
    )
    line = next((each for each in every if each.line_id == line_id), None)
    return _Asked(report, None if line else chosen, line, configured)


# --- each agent's day -----------------------------------------------------------------


@require_GET
def agent_report(request):
    report = _agents_asked(request)
    rows = [agent.row() for agent in report.agents]
    return render(
        request,
        "queues_app/agent_report.html",
        {
            "report": report,
            "rows": rows,
            "totals": report.totals.row(),
            "previous_day": report.day - timedelta(days=1),
            "next_day": report.day + timedelta(days=1),
            "query": request.GET.urlencode(),
        },
    )


# The CSV's columns: the page's, durations in seconds, and the not-ready time of each
# reason of the day in two columns of its own.
AGENT_COLUMNS = {
    "calls_handled": "Calls handled",
    "answered": "Answered",
    "answered_within": "Answered within the threshold",
    "service_level": "Service level",
    "talk_seconds": "Talk (s)",
    "after_call_work_seconds": "After-call work (s)",
    "average_handle_seconds": "Average handle (s)",
    "ringing_seconds": "Ringing (s)",
    "idle_seconds": "Idle (s)",
    "not_ready_seconds": "Not ready (s)",
    "missed_offers": "Missed offers",
    "logged_in_seconds": "Logged in (s)",
    "occupancy": "Occupancy",
}


@require_GET
def agent_report_csv(request):
    report = _agents_asked(request)
    reasons = report.reasons
    header = [
        "Agent id",
        "Name",
        *AGENT_COLUMNS.values(),
        *(f"Not ready: {reason} ({part})" for reason in reasons for part in ("s", "times")),
    ]

    def line(row: dict, agent_id: str, name: str) -> list:
        by_reason = {entry["reason"]: entry for entry in row["not_ready"]}
        spent = [by_reason.get(r, {}).get(part, 0) for r in reasons for part in ("seconds", "times")]
        return [agent_id, name, *(row[column] for column in AGENT_COLUMNS), *spent]

    rows = [line(row, row["agent_id"], row["name"] or "(removed)") for row in (agent.row() for agent in report.agents)]
    rows.append(line(report.totals.row(), "", "All agents"))
    return csv_answer(f"agents-{report.day.isoformat()}", header, rows, dated=False)


def _agents_asked(request) -> AgentsDay:
    """The agents' report the query asks for: its `date` (today when left out) and, with
    `agent_id`, one agent."""
    agent_id = (request.GET.get("agent_id") or "").strip() or None
    if agent_id is not None and not is_item_id(agent_id):
        raise InvalidRequest(f"`agent_id` {ID_PROBLEM}.")
    return asked_agents_report(Agents(), request.GET.get("date"), agent_id)
