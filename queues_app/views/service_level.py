"""The overview's service-level panel: how the callers were served over the last 15
minutes and today (two Queries of the metrics table; see figures/service_level.py)."""

from __future__ import annotations

from queues_app.figures.service_level import ServiceLevelReader
from queues_app.monitoring.overview import Dashboard


def service_level_panel(dashboard: Dashboard) -> dict:
    figures = ServiceLevelReader(dashboard.center.db).read()
    return {"service_level": figures, "service_windows": (figures.recent, figures.today)}
