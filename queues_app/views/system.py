"""The system page: what is running, what DynamoDB has served lately, and proof that
htmx requests carry CSRF."""

from __future__ import annotations

import time

from django.contrib import messages
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from queues_app.ddb import schema
from queues_app.ddb.client import default
from queues_app.ddb.errors import DynamoError
from queues_app.figures import heartbeats
from queues_app.http.roles import supervisor_required
from queues_app.monitoring.overview import Dashboard
from queues_app.views.overview import read_panel


@require_GET
def system(request):
    db = default()
    try:
        workers = heartbeats.workers(db)
    except DynamoError:
        workers = None  # the tables' panel says what is wrong
    return render(
        request,
        "queues_app/system.html",
        {
            "endpoint": db.endpoint,
            "prefix": db.prefix,
            "tables": schema.describe_tables(db),
            "workers": workers,
            "beat_seconds": int(heartbeats.BEAT_SECONDS),
            "workers_window_minutes": int(heartbeats.EXPIRES_AFTER.total_seconds() // 60),
            **read_panel(request, Dashboard(), "capacity"),
        },
    )


@require_POST
@supervisor_required
def htmx_check(request):
    """An htmx POST: it only gets here if the CSRF header was sent and accepted."""
    started = time.perf_counter()
    missing = schema.missing_tables(default())
    elapsed_ms = (time.perf_counter() - started) * 1000
    if not request.htmx:
        # Without JavaScript the form posts normally: answer with a message and a redirect.
        status = f"missing tables: {', '.join(missing)}" if missing else "all tables present"
        messages.success(
            request, f"POST accepted with its CSRF token; DynamoDB answered in {elapsed_ms:.1f} ms, {status}."
        )
        return redirect("system")
    return render(
        request,
        "queues_app/_htmx_check.html",
        {"at": timezone.now(), "elapsed_ms": elapsed_ms, "missing": missing},
    )
