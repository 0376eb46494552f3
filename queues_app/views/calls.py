"""Calls: add a caller and assign at once, the waiting list in order, calls in
progress, and each call's "why this agent" record."""

from __future__ import annotations

import uuid

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from queues_app.agents.records import AgentStatus
from queues_app.agents.skills import ANY
from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from queues_app.calls.records import CallStatus
from queues_app.calls.transfers import Transfer
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import from_iso, now
from queues_app.ddb.errors import InvalidRequest, KeyReused
from queues_app.figures.service_level import ServiceLevelReader
from queues_app.forms import AfterCallForm, CallForm, CallLookupForm, TransferForm, errors_in
from queues_app.http.roles import require_supervisor
from queues_app.inputs import THEN
from queues_app.routing.matching import WHY_OUTCOMES
from queues_app.routing.standing import standing_of
from queues_app.views.common import (
    ask_first,
    back_url,
    capped,
    check_id,
    confirmed,
    operations,
    repeat_or_done,
    save_form,
    supervisor_action,
)

WAITING_PAGE = 50
WHAT_WAS_SEARCHED = {  # one, several
    CallStatus.WAITING: ("waiting call", "waiting calls"),
    CallStatus.ASSIGNED: ("call in progress", "calls in progress"),
}


def _waiting_rows(center: CallCenter, items: list[dict]) -> list[dict]:
    moment = now()
    rows = []
    for item in items:
        arrived = from_iso(item.get("arrived_at"))
        rows.append(
            {
                "call_id": item["call_id"],
                "priority": int(item.get("priority", 0)),
                "preferences": {d: (item.get("preferences") or {}).get(d) for d in center.catalog.names},
                "arrived_at": item.get("arrived_at"),
                "waited": (moment - arrived).total_seconds() if arrived else None,
                "callback_tail": item.get("callback_tail"),  # a queued callback: its number's last digits
            }
        )
    return rows


@require_http_methods(["GET", "POST"])
def calls(request):
    center = CallCenter()
    lines = [line.line_id for line in center.lines.all()]
    form = CallForm(request.POST or None, catalog=center.catalog, lines=lines)
    if request.method == "POST":
        require_supervisor(request)
        placed = form.is_valid() and _place(request, form)
        if placed:
            call, created = placed
            if not created:
                messages.warning(request, f"This form had placed call {call.call_id} already; nothing changed.")
            elif call.status == CallStatus.ASSIGNED:
                messages.success(request, f"Call {call.call_id} assigned to {call.agent_name}.")
            else:
                messages.warning(request, f"No agent fits right now: call {call.call_id} is waiting.")
            return redirect("call-detail", call_id=call.call_id)
    waiting, more = center.line.waiting_calls(limit=WAITING_PAGE)
    in_progress = center.calls.in_progress(cursor=request.GET.get("cursor"), limit=25)
    ringing = center.calls.ringing(limit=25)
    return render(
        request,
        "queues_app/calls.html",
        {
            "form": form,
            "waiting": _waiting_rows(center, waiting),
            "waiting_more": more is not None,
            "in_progress": in_progress,
            "ringing": ringing,
            "dimensions": center.catalog.names,
            "any": ANY,
            "several_lines": len(lines) > 1,
        },
        status=400 if form.errors else 200,
    )


def _place(request, form: CallForm):
    """Place the form's caller, once however many times the same form is sent (a retry
    after an error too: the key stays with the form until it is answered)."""
    key = form.cleaned_data.get("request_key")

    def place():
        try:
            # "any" is the word the service takes for no preference.
            return operations(request).create_call(
                form.preferences,
                priority=form.cleaned_data["priority"],
                order=form.cleaned_data["order"],
                idempotency_key=f"page:{request.user.pk}:{key}" if key else None,
                line=form.cleaned_data.get("line") or None,
            )
        except KeyReused:
            # Drawn again with a new key: sent again, it places a new caller.
            form.data = {**form.data, "request_key": uuid.uuid4().hex}
            form.add_error(
                None, "This form had placed a caller with other choices already; send it again for a new one."
            )
            return None

    return save_form(form, place)


LEG_WORDS = {
    "ended": "ended the call",
    "transferred": "transferred it",
    "missed": "did not pick up in time",
    "rang": "it rang; the caller hung up",
}
QUEUED_CHOICES = 50  # queued agents offered as a transfer's target (the first by name)


@require_GET
def call_detail(request, call_id: str):
    center = CallCenter()
    call = center.get_call(check_id("call", call_id))
    history = AuditTrail().for_target(target("call", call.call_id), limit=20)
    transfer = None
    if call.status == CallStatus.ASSIGNED and not call.offer_sk:
        queued = center.agents.list(status=AgentStatus.QUEUED, limit=QUEUED_CHOICES).items
        transfer = {"form": TransferForm(catalog=center.catalog), "queued": queued}
    return render(
        request,
        "queues_app/call_detail.html",
        {
            "call": call,
            "outcomes": WHY_OUTCOMES,
            "any": ANY,
            "history": history.entries,
            "history_more": history.next_cursor is not None,
            "after_call": THEN,
            "transfer": transfer,
            "leg_words": LEG_WORDS,
            "answer_by": call.answer_by,
            "standing": standing_of(center.line, ServiceLevelReader(center.db), call),
        },
    )


@supervisor_action(default_back="/calls/")
def call_transfer(request, call_id: str):
    """Hand a call in progress on: to new preferences, or to a named queued agent."""
    call_id = check_id("call", call_id)
    center = CallCenter()
    form = TransferForm(request.POST, catalog=center.catalog)
    if not form.is_valid():
        raise InvalidRequest(errors_in(form, "The transfer was not made: "))
    data = form.cleaned_data
    to_agent = data["to"] == "agent"
    outcome = operations(request).transfer(
        Transfer(
            call_id,
            preferences=None if to_agent else form.preferences,
            agent_id=check_id("agent", data["agent_id"]) if to_agent else None,
            then=data["then"],
            from_agent_id=check_id("agent", data["from_agent_id"]),
        )
    )
    agent, call = outcome
    holder = call.agent_name if call and call.agent_id else None
    if outcome.replayed:
        return f"Call {call_id} had been transferred already; it is {f'with {holder}' if holder else 'waiting'} now."
    where = f"to {holder}" if holder else "back to the line, at its place"
    who = f"{agent.name} is {agent.doing} now" if agent else "its agent is free"
    return f"Call {call_id} transferred {where}; {who}."


@supervisor_action(default_back="/calls/")
def call_abandon(request, call_id: str):
    """End a waiting call as abandoned (the caller hung up): asks first."""
    call_id = check_id("call", call_id)
    if not confirmed(request):
        return ask_first(
            request,
            title="The caller hung up",
            question=f"End waiting call {call_id} as abandoned (the caller hung up)?",
            url=reverse("call-abandon", args=[call_id]),
            back=back_url(request, reverse("call-detail", args=[call_id])),
            fields=[],
        )
    outcome = operations(request).abandon_call(call_id)
    return repeat_or_done(
        outcome.replayed, f"Call {call_id} ended as abandoned.", f"Call {call_id} had ended as abandoned already."
    )


@supervisor_action(default_back="/calls/")
def call_end(request, call_id: str):
    """End a call in progress by naming it (asks first); its agent then goes back to the
    queue, to wrap-up or offline."""
    call_id = check_id("call", call_id)
    form = AfterCallForm(request.POST)
    if not form.is_valid():
        raise InvalidRequest(errors_in(form))
    then = form.cleaned_data["then"]
    if not confirmed(request):
        call = CallCenter().get_call(call_id)
        return ask_first(
            request,
            title="End the call",
            question=f"End call {call_id} of {call.agent_name or 'its agent'}, then {THEN[then]}?",
            url=reverse("call-end", args=[call_id]),
            back=back_url(request, reverse("call-detail", args=[call_id])),
            fields=[("then", then)],
        )
    outcome = operations(request).end_call(call_id, then)
    agent, taken = outcome
    name = agent.name if agent else "The agent"
    took = f" and took call {taken.call_id}" if taken else ""
    return repeat_or_done(
        outcome.replayed,
        f"Call {call_id} ended; {name} is {agent.doing if agent else 'free'} now{took}.",
        f"Call {call_id} had already ended; {name} is {agent.doing if agent else 'free'} now.",
    )


@require_GET
def call_lookup(request):
    """Find a call by its id or the first characters of it (at least four): one match
    opens it, several are listed, none says what was searched."""
    form = CallLookupForm(request.GET)
    if not form.is_valid():
        return render(request, "queues_app/call_search.html", {"form": form, "search": None}, status=400)
    prefix = form.cleaned_data["call_id"]
    search = CallCenter().calls.find_by_prefix(prefix)
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
