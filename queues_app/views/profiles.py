"""Routing profiles, from the Lines page: a profile created, or its lines changed from the
version shown (a stale edit shows the profile as it is now, with why), and removed once
no agent uses it (`lines/profiles.py` says what a profile is)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from queues_app.centre.call_center import CallCenter
from queues_app.ddb.errors import Conflict, DynamoError, InvalidRequest
from queues_app.forms import ProfileForm, errors_in
from queues_app.http.roles import require_supervisor
from queues_app.lines.profiles import Profile, ProfileStore
from queues_app.lines.records import Line
from queues_app.views.common import operations, problem_text, seen_version, supervisor_action

STALE_SHOWN = "The form now shows the profile as it is: make your change again from there."


def _form(data, lines: list[Line], profile: Profile | None) -> ProfileForm:
    form = ProfileForm(data, lines=lines, initial=ProfileForm.initial_for(profile) if profile else None)
    if profile is not None:
        form.fields["profile_id"].disabled = True
        form.fields["profile_id"].initial = profile.profile_id
    return form


@require_http_methods(["GET", "POST"])
def profile_edit(request, profile_id: str | None = None):
    """A new routing profile (no `profile_id`) or a profile's name and lines, saved from
    the version shown."""
    if request.method == "POST":
        require_supervisor(request)
    center = CallCenter()
    store = ProfileStore(center.db)
    profile = store.get(profile_id) if profile_id else None
    lines = center.lines.all()
    form = _form(request.POST or None, lines, profile)
    stale, status = "", 200
    if request.method == "POST" and form.is_valid():
        try:
            saved, outcome = operations(request).put_profile(form.profile_data())
        except InvalidRequest as exc:
            form.add_error(form.field_for(exc.field), exc.message.split(": ", 1)[-1] if exc.field else exc.message)
        except Conflict as exc:
            now = store.read().profiles.get(profile_id) if profile_id else None
            if now is None:
                form.add_error("profile_id" if profile is None else None, exc.message)
            else:  # changed by someone else since the page was drawn: shown as it is now
                profile, form = now, _form(None, lines, now)
                stale, status = f"{problem_text(exc)[0]} {STALE_SHOWN}", 409
        except DynamoError as exc:
            form.add_error(None, problem_text(exc)[0])
        else:
            said = {"created": "Created", "changed": "Saved", "replayed": "Already saved:"}[outcome]
            messages.success(request, f"{said} routing profile {saved.name} (version {saved.version}).")
            return redirect("lines")
    configured = {line.line_id for line in lines}
    context = {
        "form": form,
        "profile": profile,
        "creating": profile is None,
        "stale": stale,
        "problem": errors_in(form) if form.errors else "",  # each field by its label
        # Lines the profile serves that are no longer configured: saving leaves them out.
        "gone": sorted(set(profile.lines) - configured) if profile else [],
    }
    return render(request, "queues_app/profile_form.html", context, status=400 if form.errors else status)


@supervisor_action(default_back="/lines/")
def profile_delete(request, profile_id: str):
    """Remove the profile from the version shown; refused (on the profile's page, its
    `next`) while an agent uses it."""
    profile = operations(request).delete_profile(profile_id, seen_version(request))
    messages.success(request, f"Removed routing profile {profile.name}.")
    return redirect("lines")
