"""The audit trail, newest first, or one item's history."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues_app.audit_trail import AuditTrail, TrailPage
from queues_app.forms import MAX_TARGET_LENGTH, AuditFilterForm

PAGE_SIZE = 50


@require_GET
def audit(request):
    form = AuditFilterForm(request.GET)
    if not form.is_valid():
        # The filter is shown again with what is wrong with it; nothing is read.
        problem = "Check the item: " + " ".join(str(error) for errors in form.errors.values() for error in errors)
        return render(
            request,
            "queues_app/audit.html",
            {
                "page": TrailPage(),
                "target": request.GET.get("target", "")[:MAX_TARGET_LENGTH],
                "filter_problem": problem,
            },
            status=400,
        )
    trail = AuditTrail()
    wanted = form.cleaned_data["target"]
    cursor = request.GET.get("cursor")
    if wanted:
        page = trail.for_target(wanted, cursor=cursor, limit=PAGE_SIZE)
    else:
        page = trail.recent(cursor=cursor, limit=PAGE_SIZE)
    return render(request, "queues_app/audit.html", {"page": page, "target": wanted})
