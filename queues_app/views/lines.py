"""The Lines page: the centre's lines with how they stand now (open or closed, callers
waiting, longest wait: `monitoring.overview.lines_now`), each edited from the version
shown and removed once nobody waits; and the routing profiles (`views/profiles.py`)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from queues_app.agents.skills import SkillCatalog
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import now
from queues_app.ddb.errors import DynamoError, InvalidRequest
from queues_app.forms import LineForm
from queues_app.http.roles import require_supervisor
from queues_app.lines.profiles import ProfileStore
from queues_app.monitoring.overview import lines_now
from queues_app.views.common import operations, problem_text, seen_version, supervisor_action


@require_GET
def line_list(request):
    center = CallCenter()
    lines = center.lines.all()
    rows = lines_now(center, lines, now())
    context = {"rows": rows, "configured": lines[0].version, "profiles": ProfileStore(center.db).all()}
    return render(request, "queues_app/lines.html", context)


@require_http_methods(["GET", "POST"])
def line_edit(request, line_id: str | None = None):
    """A new line (no `line_id`) or a line's settings, saved from the version shown."""
    if request.method == "POST":
        require_supervisor(request)
    center = CallCenter()
    line = center.lines.get(line_id) if line_id else None
    others = [other.line_id for other in center.lines.configured() if other.line_id != line_id]
    initial = LineForm.initial_for(line) if line else {"service_level_seconds": 20, "service_level_target": 80}
    form = LineForm(request.POST or None, catalog=SkillCatalog.from_settings(), others=others, initial=initial)
    if line is not None:
        form.fields["line_id"].disabled = True
        form.fields["line_id"].initial = line.line_id
    if request.method == "POST" and form.is_valid():
        try:
            # What the form does not show (priority aging, routing steps) stays as it was.
            kept = line.as_dict() if line else {}
            saved, outcome = operations(request).put_line({**kept, **form.settings()})
        except InvalidRequest as exc:
            form.add_error(form.field_for(exc.field), exc.message.split(": ", 1)[-1] if exc.field else exc.message)
        except DynamoError as exc:
            form.add_error(None, problem_text(exc)[0])
        else:
            said = {"created": "Created", "changed": "Saved", "replayed": "Already saved:"}[outcome]
            messages.success(request, f"{said} line {saved.name} (version {saved.version}).")
            return redirect("lines")
    context = {"form": form, "line": line, "creating": line is None}
    return render(request, "queues_app/line_form.html", context, status=400 if form.errors else 200)


@supervisor_action(default_back="/lines/")
def line_delete(request, line_id: str):
    line = operations(request).delete_line(line_id, seen_version(request))
    return f"Removed line {line.name}."
