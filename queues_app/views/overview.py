"""The overview: the supervisor's figures first (calls and agents with their alarms, the
service level, supply and demand per skill), then the back office's queues and the
metrics history. DynamoDB's own figures (the capacity panel) are on the System page,
refreshed through the same `?panel=` answers.

The page renders every panel; each panel then refreshes itself (and after any change)
by asking for `?panel=<name>`, which renders just that fragment of the same template
and costs only that panel's reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues_app.centre.call_center import CallCenter
from queues_app.ddb import meter
from queues_app.ddb.clock import now
from queues_app.ddb.errors import DynamoError
from queues_app.figures import heartbeats
from queues_app.figures.counters import CALLS, LIVE, SPILLOVER, TASKS, MetricsStore, minute_of
from queues_app.http.errors import describe
from queues_app.http.middleware import wrote_recently
from queues_app.monitoring.overview import Alarm, Dashboard, alarms_for
from queues_app.monitoring.shared import cached_panel
from queues_app.monitoring.wallboard import read_lines
from queues_app.views import charts
from queues_app.views.service_level import service_level_panel

HISTORY_MINUTES = 60
CAPACITY_MINUTES = 15


def _limits() -> tuple[dict, dict]:
    thresholds = settings.SWITCHBOARD_ALARMS["oldest_age_seconds"]
    bounds = settings.SWITCHBOARD_FAIRNESS["backlog_bounds"]
    return thresholds, bounds


def calls_panel(dashboard: Dashboard) -> dict:
    panel = dashboard.calls_panel()
    thresholds, bounds = _limits()
    return {
        "calls": panel,
        "calls_alarms": alarms_for(
            CALLS,
            depth=panel.callers_waiting.value,
            oldest_age=panel.oldest_wait_seconds,
            thresholds=thresholds,
            bounds=bounds,
        ),
    }


@dataclass
class Liveness:
    """What the processes of one kind last said (from their heartbeats)."""

    live: int
    last_age: float | None
    state: str | None

    @property
    def quiet(self) -> bool:
        return self.live == 0


def liveness(dashboard: Dashboard, kind: str) -> Liveness:
    """The live (reporting, not stale, not stopped) processes of a kind and the freshest
    beat among them: one Query of the heartbeats."""
    beats = [w for w in heartbeats.workers(dashboard.center.db) if w.kind == kind]
    live = [w for w in beats if not w.stale and w.state != heartbeats.STOPPED]
    freshest = min(live, key=lambda w: w.age_seconds, default=None)
    if freshest is None:
        return Liveness(0, None, None)
    # Of several task processors one holds the lease and the others stand by: say that one's.
    state = heartbeats.HOLDING if any(w.state == heartbeats.HOLDING for w in live) else freshest.state
    return Liveness(len(live), freshest.age_seconds, state)


def shipments_panel(dashboard: Dashboard) -> dict:
    panel = dashboard.shipments_panel()
    thresholds, bounds = _limits()
    return {
        "shipments_workers": liveness(dashboard, heartbeats.SHIPMENT_WORKER),
        "shipments": panel,
        "shipments_alarms": alarms_for(
            LIVE,
            depth=panel.queued.value,
            oldest_age=panel.oldest_age_seconds,
            dlq=panel.dlq.value,
            thresholds=thresholds,
            bounds=bounds,
        ),
    }


def tasks_panel(dashboard: Dashboard) -> dict:
    panel = dashboard.tasks_panel()
    thresholds, _ = _limits()
    alarms = alarms_for(TASKS, oldest_age=panel.oldest_pending_age_seconds, thresholds=thresholds)
    if panel.shed_last_hour:
        alarms.append(Alarm(TASKS, "shed", count=panel.shed_last_hour))
    return {"tasks": panel, "tasks_alarms": alarms, "tasks_processor": liveness(dashboard, heartbeats.TASK_PROCESSOR)}


def grid_panel(dashboard: Dashboard) -> dict:
    return {
        "grid": dashboard.supply_and_demand(),
        "service_level_target": settings.SERVICE_LEVEL_TARGET,
        "service_level_seconds": settings.SERVICE_LEVEL_SECONDS,
    }


def history_panel(dashboard: Dashboard) -> dict:
    """Depth and oldest age over the last hour, per queue (one Query per queue)."""
    store = MetricsStore(dashboard.center.db)
    moment = now()
    rows = []
    for queue, title in (
        (CALLS, "Callers waiting"),
        (LIVE, "Shipments, live"),
        (SPILLOVER, "Shipments, spillover"),
        (TASKS, "Tasks pending"),
    ):
        history = store.history(queue, HISTORY_MINUTES)
        rows.append(
            {
                "queue": queue,
                "title": title,
                "depth": charts.line(history, "depth", "depth", moment=moment, minutes=HISTORY_MINUTES),
                "age": charts.line(
                    history, "oldest_age", "oldest age", moment=moment, minutes=HISTORY_MINUTES, unit="s"
                ),
                "flow": charts.pair(
                    history,
                    "enqueued",
                    "completed",
                    "enqueued and completed a minute",
                    moment=moment,
                    minutes=HISTORY_MINUTES,
                ),
                "samples": len(history),
            }
        )
    return {"history": rows, "history_minutes": HISTORY_MINUTES}


def capacity_panel(dashboard: Dashboard) -> dict:
    """Requests, capacity, throttles and transaction conflicts per operation over the
    last minutes (every process's finished minutes, plus this process's current one),
    and expired leases from the queue history."""
    store = MetricsStore(dashboard.center.db)
    totals: dict[str, dict[str, float]] = {}
    for row in store.capacity(CAPACITY_MINUTES):
        for key, value in row.values.items():
            operation, _, figure = key.partition("__")
            totals.setdefault(operation, {}).setdefault(figure, 0.0)
            totals[operation][figure] += value
    current = meter.recent_meter.recent()
    if current:
        for operation, stats in current[-1][1].operations.items():
            entry = totals.setdefault(operation, {})
            entry["calls"] = entry.get("calls", 0) + stats.calls
            entry["capacity"] = entry.get("capacity", 0) + stats.capacity
    expired = sum(
        r.values.get("expired_leases", 0) for queue in (LIVE, SPILLOVER) for r in store.history(queue, CAPACITY_MINUTES)
    )
    operations = sorted(
        (
            {"operation": op, **{k: v.get(k, 0) for k in ("calls", "capacity", "throttles", "conflicts")}}
            for op, v in totals.items()
        ),
        key=lambda o: -float(o["calls"] or 0),  # type: ignore[arg-type]
    )
    return {
        "capacity": operations,
        "expired_leases": int(expired),
        "capacity_minutes": CAPACITY_MINUTES,
        "capacity_since": minute_of(now()),
    }


def lines_panel(dashboard: Dashboard) -> dict:
    """The configured lines with their callers waiting and their day by their own
    promise (the wallboard's reading); none while no line is configured."""
    return {"lines": read_lines(dashboard)}


PANELS = {
    "calls": calls_panel,
    "lines": lines_panel,
    "shipments": shipments_panel,
    "tasks": tasks_panel,
    "grid": grid_panel,
    "history": history_panel,
    "capacity": capacity_panel,
    "service_level": service_level_panel,
}


# The overview draws these on its page; every panel of PANELS answers `?panel=<name>`.
OVERVIEW_PANELS = ("calls", "lines", "service_level", "grid", "shipments", "tasks", "history")
PANEL_TEMPLATES = {"capacity": "queues_app/_capacity_panel.html"}


def read_panel(request, dashboard: Dashboard, name: str) -> dict:
    """A panel's figures and when they were read (`<name>_read_at`: a cached panel says
    when the cache was filled), or the problem that kept us from reading them: a panel
    that cannot read shows a banner in its place and keeps polling."""

    def read() -> dict:
        return {**PANELS[name](dashboard), f"{name}_read_at": now()}

    try:
        seconds = settings.SWITCHBOARD_PANEL_CACHE_SECONDS
        # Figures cached before the session's write expire within `seconds` of it (a
        # second more for clocks of several hosts sharing a cache).
        fresh = wrote_recently(request, seconds + 1)
        dashboard.fresh = dashboard.fresh or fresh  # and the floor it shares with other panels
        return cached_panel(dashboard.center.db.prefix, name, read, seconds, fresh=fresh)
    except DynamoError as exc:
        return {f"{name}_problem": describe(exc), f"{name}_error": exc}


@require_GET
def overview(request):
    dashboard = Dashboard()
    panel = request.GET.get("panel")
    if panel:
        if panel not in PANELS:
            raise Http404("No such panel.")
        read = read_panel(request, dashboard, panel)
        problem = read.get(f"{panel}_problem")
        template = PANEL_TEMPLATES.get(panel, f"queues_app/overview.html#{panel}-panel")
        return render(request, template, read, status=problem.status if problem else 200)
    context: dict = {}
    for name in OVERVIEW_PANELS:
        context.update(read_panel(request, dashboard, name))
    failures = [context[f"{name}_error"] for name in OVERVIEW_PANELS if f"{name}_error" in context]
    if len(failures) == len(OVERVIEW_PANELS):
        # Nothing could be read: one clear error page (or JSON) instead of a banner per panel.
        raise failures[0]
    return render(request, "queues_app/overview.html", context)


@require_GET
def queue_metadata(request):
    """Each skill combination's queue: depth, version, and its oldest queued agent."""
    center = CallCenter()
    return render(request, "queues_app/queues.html", {"queues": center.queues(), "dimensions": center.catalog.names})


ALARM_PANELS = ("calls", "shipments", "tasks")


def current_alarms(request, dashboard: Dashboard) -> list[Alarm]:
    """The alarms the overview's panels show now, read as the panels read them (through
    their cache, so a background check costs no more reads than the page); a panel that
    cannot be read raises its error rather than count as no alarm."""
    found: list[Alarm] = []
    for name in ALARM_PANELS:
        read = read_panel(request, dashboard, name)
        if f"{name}_error" in read:
            raise read[f"{name}_error"]
        found += read[f"{name}_alarms"]
    return found
