"""Reports: the centre's day in intervals (figures/intervals.py), as a chart of the
callers offered and answered and a table, for the whole centre, one combination or one
line (counted by the line's own promise); the same report as CSV."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode

from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues_app.centre.call_center import CallCenter
from queues_app.figures.intervals import ALL, INTERVALS, DayReport, asked_report
from queues_app.lines.records import Line
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
