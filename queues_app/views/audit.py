"""The audit trail, newest first, or one item's history."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues_app.audit_trail import AuditTrail


@require_GET
def audit(request):
    trail = AuditTrail()
    wanted = request.GET.get("target", "").strip()
    cursor = request.GET.get("cursor")
    page = trail.for_target(wanted, cursor=cursor, limit=50) if wanted else trail.recent(cursor=cursor, limit=50)
    return render(request, "queues_app/audit.html", {"page": page, "target": wanted})
