"""The overview: live panels per queue and the supply and demand grid.

The page renders every panel; each panel then refreshes itself every 2 seconds (and
after any change) by asking for `?panel=<name>`, which renders just that fragment of
the same template and costs only that panel's reads.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..dynamo.dashboard import Dashboard
from ..dynamo.errors import DynamoError
from ..dynamo.routing import Router
from ..user_errors import describe

PANELS = {
    "calls": Dashboard.calls_panel,
    "shipments": Dashboard.shipments_panel,
    "tasks": Dashboard.tasks_panel,
    "grid": Dashboard.supply_and_demand,
}


def _read(dashboard: Dashboard, name: str) -> dict:
    """A panel's figures, or the problem that kept us from reading them: a panel that
    cannot read shows a banner in its place and keeps polling."""
    try:
        return {name: PANELS[name](dashboard)}
    except DynamoError as exc:
        return {f"{name}_problem": describe(exc), f"{name}_error": exc}


@require_GET
def overview(request):
    dashboard = Dashboard()
    panel = request.GET.get("panel")
    if panel:
        if panel not in PANELS:
            raise Http404("No such panel.")
        context = _read(dashboard, panel)
        problem = context.get(f"{panel}_problem")
        return render(request, f"queues_app/overview.html#{panel}-panel", context,
                      status=problem.status if problem else 200)
    context: dict = {}
    for name in PANELS:
        context.update(_read(dashboard, name))
    failures = [context[f"{name}_error"] for name in PANELS if f"{name}_error" in context]
    if len(failures) == len(PANELS):
        # Nothing could be read: one clear error page (or JSON) instead of four banners.
        raise failures[0]
    return render(request, "queues_app/overview.html", context)


@require_GET
def queue_metadata(request):
    """Each skill combination's queue: depth, version, and its oldest queued agent."""
    router = Router()
    return render(request, "queues_app/queues.html", {"queues": router.queues(), "dimensions": router.catalog.names})
