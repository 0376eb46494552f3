"""The alarms as JSON, for the pages' background check (static/js/alerts.js): while a
tab is hidden it asks every 15 s, to keep the count in the tab's title and to show a
desktop notification when an alarm starts."""

from __future__ import annotations

from django.http import JsonResponse
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from queues_app.figures.counters import CALLS, LIVE, TASKS
from queues_app.monitoring.overview import Dashboard
from queues_app.views.overview import current_alarms

# Where each queue's alarms show on the overview (its panel's heading).
PANEL_TITLES = {CALLS: "Calls and agents", LIVE: "Shipments", TASKS: "Tasks"}


@require_GET
def alarms(request):
    found = current_alarms(request, Dashboard())
    return JsonResponse(
        {
            "count": len(found),
            "alarms": [
                {
                    # The same key as the overview's `data-alarm`: an alarm keeps it while it lasts.
                    "key": f"{alarm.queue}-{alarm.kind}",
                    "panel": PANEL_TITLES.get(alarm.queue, alarm.queue),
                    "text": render_to_string("queues_app/_alarm_text.html", {"alarm": alarm}).strip(),
                }
                for alarm in found
            ],
        }
    )
