"""Callbacks: the callers to be called back at a time (scheduled, and those not reached
to be tried again), soonest first; a supervisor schedules one, moves or cancels one
still to come. Times are on the centre's clock."""

from __future__ import annotations

from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from queues_app.centre.call_center import CallCenter
from queues_app.ddb.errors import InvalidRequest
from queues_app.forms import MoveCallbackForm, ScheduleCallbackForm, errors_in
from queues_app.views.common import (
    ask_first,
    back_url,
    check_id,
    confirmed,
    operations,
    seen_version,
    supervisor_action,
)


@require_GET
def callback_list(request):
    center = CallCenter()
    return render(
        request,
        "queues_app/callbacks.html",
        {
            "upcoming": center.upcoming_callbacks(),
            "lines": [line.line_id for line in center.lines.all()],
            "form": ScheduleCallbackForm(),
        },
    )


@supervisor_action(default_back="/callbacks/")
def callback_schedule(request):
    form = ScheduleCallbackForm(request.POST)
    if not form.is_valid():
        raise InvalidRequest(errors_in(form))
    data = form.cleaned_data
    call, created = operations(request).schedule_callback(data["line"], {}, data["number"], data["at"])
    if not created:
        return f"This callback was scheduled already (call {call.call_id}); nothing changed."
    return f"Callback scheduled on {call.line} (call {call.call_id})."


@supervisor_action(default_back="/callbacks/")
def callback_move(request, call_id: str):
    call_id = check_id("call", call_id)
    form = MoveCallbackForm(request.POST)
    if not form.is_valid():
        raise InvalidRequest(errors_in(form))
    operations(request).move_callback(call_id, seen_version(request), form.cleaned_data["at"])
    return f"Callback {call_id} moved."


@supervisor_action(default_back="/callbacks/")
def callback_cancel(request, call_id: str):
    call_id = check_id("call", call_id)
    if not confirmed(request):
        return ask_first(
            request,
            title="Remove the callback",
            question=f"Remove callback {call_id}? The caller will not be called back.",
            url=reverse("callback-cancel", args=[call_id]),
            back=back_url(request, reverse("callbacks")),
            fields=[("version", request.POST.get("version", ""))],
        )
    operations(request).cancel_callback(call_id, seen_version(request))
    return f"Callback {call_id} removed: the caller will not be called back."
