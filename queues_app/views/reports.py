"""Reports: the centre's day in intervals (figures/intervals.py), as a chart of the
callers offered and answered and a table, for the whole centre or one combination; the
same report as CSV."""

from __future__ import annotations

from datetime import timedelta

from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues_app.agents.skills import SkillCatalog
from queues_app.ddb.client import default
from queues_app.figures.intervals import ALL, INTERVALS, asked_report
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
    report, chosen = _asked(request)
    shown = chosen or ALL
    rows = interval_rows(report, shown)
    return render(
        request,
        "queues_app/reports.html",
        {
            "report": report,
            "rows": rows,
            "table_rows": [
                row
                for row in rows
                if row["offered"]
                or row["answered"]
                or row["abandoned"]
                or row["in_queue_at_end"]
                or row["occupancy"] is not None
            ],
            "shown": shown,
            "combinations": report.combinations,
            "intervals": INTERVALS,
            "chart": _chart(rows),
            "previous_day": report.day - timedelta(days=1),
            "next_day": report.day + timedelta(days=1),
            "totals": {
                name: sum(row[name] for row in rows) for name in ("offered", "answered", "answered_within", "abandoned")
            },
            "query": request.GET.urlencode(),
        },
    )


@require_GET
def reports_csv(request):
    report, chosen = _asked(request)
    columns = {
        "offered": "Offered",
        "answered": "Answered",
        "answered_within": f"Answered within {report.threshold_seconds:g} s",
        "abandoned": "Abandoned",
        "in_queue_at_end": "In queue at the end",
        "service_level": "Service level",
        "asa_seconds": "Average speed of answer (s)",
        "aht_seconds": "Average handle time (s)",
        "longest_wait_seconds": "Longest wait (s)",
        "occupancy": "Occupancy",
    }
    header = [f"Start ({report.zone})", "Combination", *columns.values()]
    rows = ([row["start"], row["combination"], *(row[n] for n in columns)] for row in interval_rows(report, chosen))
    name = f"intervals-{report.day.isoformat()}-{report.interval_minutes}min"
    return csv_answer(name, header, rows, dated=False)


def _asked(request):
    """The report the query asks for (figures.intervals.asked_report)."""
    query, known = request.GET, SkillCatalog.from_settings().combination_names()
    return asked_report(default(), query.get("date"), query.get("interval"), query.get("combination"), known=known)
