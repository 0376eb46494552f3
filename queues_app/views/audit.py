"""The audit trail: newest first, or one item's history, found by id, id prefix or an
agent's name, and filtered by who acted, the action, where from and a time range.

What each search reads is in `queues_app/audit/store.py`'s docstring; every one is
bounded, and a page that is not full links on to the next.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django import forms
from django.shortcuts import render
from django.views.decorators.http import require_GET

from queues_app.agents.roster import Agents
from queues_app.audit.records import KINDS, SOURCE_LABELS, SOURCES, TrailFilter, TrailPage
from queues_app.audit.store import AuditTrail
from queues_app.ddb.clock import centre_zone
from queues_app.event_names import ACTION_LABELS, AUDIT_ACTIONS
from queues_app.forms import MAX_TARGET_LENGTH

PAGE_SIZE = 50
NAME_MATCHES = 10
# What the action filter offers: each family, then each action people see in the trail.
ACTIONS = AUDIT_ACTIONS
ACTION_CHOICES = [
    ("", "any action"),
    ("Families", [("agent.", "any agent action"), ("call.", "any call action"), ("shipment.", "any shipment action")]),
    *((group, [(name, ACTION_LABELS[name]) for name in names]) for group, names in ACTIONS.items()),
]
TARGET_KINDS = (*KINDS, "queue")
DATETIME_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"]


class TrailSearchForm(forms.Form):
    target = forms.CharField(required=False, max_length=MAX_TARGET_LENGTH, strip=True, label="Find")
    actor = forms.CharField(required=False, max_length=150, strip=True, label="Who")
    action = forms.ChoiceField(required=False, choices=ACTION_CHOICES, label="Action")
    source = forms.ChoiceField(
        required=False, choices=[("", "anywhere"), *((s, SOURCE_LABELS[s]) for s in SOURCES)], label="Where"
    )
    since = forms.DateTimeField(required=False, input_formats=DATETIME_FORMATS, label="From")
    until = forms.DateTimeField(required=False, input_formats=DATETIME_FORMATS, label="Until")

    def clean(self):
        data = super().clean() or {}
        for name in ("since", "until"):
            if data.get(name):
                # The person types the centre's local time (the page says which zone).
                data[name] = data[name].replace(tzinfo=None).replace(tzinfo=centre_zone())
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            raise forms.ValidationError("The start of the time range is after its end.")
        return data

    @property
    def filters(self) -> TrailFilter:
        data = self.cleaned_data
        return TrailFilter(
            actor=data.get("actor") or "",
            action=data.get("action") or "",
            source=data.get("source") or "",
            since=data.get("since"),
            until=data.get("until"),
        )


def _query(request, **changes) -> str:
    query = request.GET.copy()
    query.pop("cursor", None)
    for name, value in changes.items():
        query[name] = value
    return query.urlencode()


def _explicit_target(text: str) -> str | None:
    kind, sep, item_id = text.partition(":")
    return text if sep and kind in TARGET_KINDS and item_id else None


@dataclass
class Search:
    """What a trail search found: a page of entries and how the page should say it."""

    page: TrailPage
    heading: str
    target: str | None = None  # the one item whose history it is
    resolved: str = ""
    name_matches: list = field(default_factory=list)


def search(form: TrailSearchForm, cursor: str | None, limit: int = PAGE_SIZE) -> Search:
    """The trail for a valid search form (the page's and its CSV's): an item's history
    (by `kind:id`, a bare id, or the one agent a name finds), the items an id prefix
    starts, or every change; each filtered by who, what, where from and when."""
    trail = AuditTrail()
    term, filters = form.cleaned_data["target"], form.filters
    found = _explicit_target(term) if term else None
    matches: list = []
    if term and not found:
        # A bare id: the item whose history it names; else agents by name; else an id prefix.
        found = trail.find_target(term)
        if not found:
            agents = Agents().list(search=term, limit=NAME_MATCHES, max_reads=2).items
            if len(agents) == 1:
                found = f"agent:{agents[0].agent_id}"
            else:
                matches = agents
    if found:
        page = trail.for_target(found, cursor=cursor, limit=limit, filters=filters)
        resolved = f"{term!r} is {found}" if found != term else ""
        return Search(page, f"History of {found}", target=found, resolved=resolved, name_matches=matches)
    if term:
        page = trail.for_id_prefix(term, cursor=cursor, limit=limit, filters=filters)
        return Search(page, f"Items whose id starts with {term!r}", name_matches=matches)
    page = trail.recent(cursor=cursor, limit=limit, filters=filters)
    heading = "Matching changes, newest first" if filters.active else "Every change, newest first"
    return Search(page, heading)


@require_GET
def audit(request):
    form = TrailSearchForm(request.GET)
    context: dict = {"form": form, "sources": SOURCES, "export_query": _query(request)}
    if not form.is_valid():
        # The search is shown again with what is wrong with it; nothing is read.
        context["filter_problem"] = "Check the item and the filters: " + " ".join(
            str(error) for errors in form.errors.values() for error in errors
        )
        context["page"] = TrailPage()
        return render(request, "queues_app/audit.html", context, status=400)
    found = search(form, request.GET.get("cursor"))
    context.update(heading=found.heading, name_matches=found.name_matches)
    if found.target:
        context.update(shown_target=found.target, resolved=found.resolved)
        # Further pages go on with the item found, without searching again.
        context["more_query"] = _query(request, target=found.target)
    else:
        context["more_query"] = _query(request)
    term = form.cleaned_data["target"]
    context.update(page=found.page, searching=bool(term) or form.filters.active)
    return render(request, "queues_app/audit.html", context)
