"""The wallboard: the live figures per skill combination in large type, for a screen on
the floor. Anyone signed in may open it; it refreshes itself by asking for its board
fragment (htmx), and shares the overview's panel cache period, so screens left open all
day cost one read of the figures per period however many there are."""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues_app.ddb.clock import now
from queues_app.ddb.errors import DynamoError, NotFound
from queues_app.http.errors import describe
from queues_app.http.middleware import wrote_recently
from queues_app.monitoring.overview import Dashboard
from queues_app.monitoring.shared import cached_panel
from queues_app.monitoring.wallboard import read_board

REFRESH_SECONDS = 5


@require_GET
def wallboard(request):
    dashboard = Dashboard()
    seconds = settings.SWITCHBOARD_PANEL_CACHE_SECONDS
    only = request.GET.get("line") or None
    context: dict = {"refresh_seconds": REFRESH_SECONDS, "only_line": only}
    status = 200
    try:
        if only is not None and not any(line.line_id == only for line in dashboard.center.lines.current()):
            raise NotFound(f"There is no line {only[:40]!r}.")
        context |= cached_panel(
            dashboard.center.db.prefix,
            f"wallboard:{only}" if only else "wallboard",
            lambda: {"board": read_board(dashboard, only), "read_at": now()},
            seconds,
            fresh=wrote_recently(request, seconds + 1),
        )
    except DynamoError as exc:
        # The board shows the problem in its place and keeps asking.
        context["problem"] = describe(exc)
        status = context["problem"].status
    template = "queues_app/wallboard.html#board" if request.htmx else "queues_app/wallboard.html"
    return render(request, template, context, status=status)
