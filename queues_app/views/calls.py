"""Calls: add a caller and assign at once, the waiting list in order, calls in
progress, and each call's "why this agent" record."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from queues_app.agents.matching import WHY_OUTCOMES
from queues_app.agents.records import CallStatus
from queues_app.agents.router import Router
from queues_app.agents.skills import ANY
from queues_app.audit_trail import AuditTrail, target
from queues_app.ddb.clock import from_iso, now
from queues_app.forms import CallForm, CallLookupForm
from queues_app.roles import require_supervisor
from queues_app.views.common import back_url, capped, check_id, confirm, operations, save_form, supervisor_action

WAITING_PAGE = 50
WHAT_WAS_SEARCHED = {  # one, several
    CallStatus.WAITING: ("waiting call", "waiting calls"),
    CallStatus.ASSIGNED: ("call in progress", "calls in progress"),
}


def _waiting_rows(router: Router, items: list[dict]) -> list[dict]:
    moment = now()
    rows = []
    for item in items:
        arrived = from_iso(item.get("arrived_at"))
        rows.append(
            {
                "call_id": item["call_id"],
                "priority": int(item.get("priority", 0)),
                "preferences": {d: (item.get("preferences") or {}).get(d) for d in router.catalog.names},
                "arrived_at": item.get("arrived_at"),
                "waited": (moment - arrived).total_seconds() if arrived else None,
            }
        )
    return rows


@require_http_methods(["GET", "POST"])
def calls(request):
    router = Router()
    form = CallForm(request.POST or None, catalog=router.catalog)
    if request.method == "POST":
        require_supervisor(request)
        # "any" is the word the service takes for no preference.
        call = form.is_valid() and save_form(
            form,
            lambda: operations(request).create_call(
                form.preferences, priority=form.cleaned_data["priority"], order=form.cleaned_data["order"]
            )[0],
        )
        if call:
            if call.status == CallStatus.ASSIGNED:
                messages.success(request, f"Call {call.call_id} assigned to {call.agent_name}.")
            else:
                messages.warning(request, f"No agent fits right now: call {call.call_id} is waiting.")
            return redirect("call-detail", call_id=call.call_id)
    waiting, more = router.line.waiting_calls(limit=WAITING_PAGE)
    in_progress = router.calls.in_progress(cursor=request.GET.get("cursor"), limit=25)
    return render(
        request,
        "queues_app/calls.html",
        {
            "form": form,
            "waiting": _waiting_rows(router, waiting),
            "waiting_more": more is not None,
            "in_progress": in_progress,
            "dimensions": router.catalog.names,
            "any": ANY,
        },
        status=400 if form.errors else 200,
    )


@require_GET
def call_detail(request, call_id: str):
    call = Router().get_call(check_id("call", call_id))
    history = AuditTrail().for_target(target("call", call.call_id), limit=20)
    return render(
        request,
        "queues_app/call_detail.html",
        {
            "call": call,
            "outcomes": WHY_OUTCOMES,
            "any": ANY,
            "history": history.entries,
            "history_more": history.next_cursor is not None,
        },
    )


@supervisor_action(default_back="/calls/")
def call_abandon(request, call_id: str):
    """End a waiting call as abandoned (the caller hung up): asks first."""
    call_id = check_id("call", call_id)
    if request.POST.get("confirmed") != "1":
        return confirm(
            request,
            title="Confirm",
            count=1,
            question=f"End waiting call {call_id} as abandoned (the caller hung up)?",
            action_url=reverse("call-abandon", args=[call_id]),
            back=back_url(request, reverse("call-detail", args=[call_id])),
            fields=[],
        )
    call = operations(request).abandon_call(call_id)
    return f"Call {call.call_id} ended as abandoned."


@require_GET
def call_lookup(request):
    """Find a call by its id or the first characters of it (at least four): one match
    opens it, several are listed, none says what was searched."""
    form = CallLookupForm(request.GET)
    if not form.is_valid():
        return render(request, "queues_app/call_search.html", {"form": form, "search": None}, status=400)
    prefix = form.cleaned_data["call_id"]
    search = Router().calls.find_by_prefix(prefix)
    if len(search.calls) == 1 and not search.more:
        return redirect("call-detail", call_id=search.calls[0].call_id)
    searched = [
        f"{capped(read, more)} {WHAT_WAS_SEARCHED[status][read != 1 or more]}{'' if not more else ' (the first read)'}"
        for status, (read, more) in search.searched.items()
    ]
    return render(
        request,
        "queues_app/call_search.html",
        {"form": form, "search": search, "searched": " and ".join(searched), "any": ANY},
        status=200 if search.calls else 404,
    )
