"""Agents: list with search and filters, create and edit, and the queue actions
(make available, release, log off), one at a time or on a selection."""

from __future__ import annotations

from typing import cast

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from queues_app.agents.records import Agent, AgentStatus, not_ready_reasons
from queues_app.agents.roster import COUNT_CAP, Agents
from queues_app.agents.skills import SkillCatalog
from queues_app.audit.day import agent_day
from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.client import default
from queues_app.ddb.errors import DynamoError, InvalidRequest, NotFound
from queues_app.forms import AgentFilterForm, AgentForm, ReleaseForm, errors_in
from queues_app.http.roles import require_supervisor
from queues_app.inputs import THEN
from queues_app.lines.profiles import Profile, ProfileStore
from queues_app.views.common import (
    ask_first,
    back_url,
    bulk,
    capped,
    check_id,
    confirmed,
    list_filters,
    operations,
    repeat_or_done,
    save_form,
    seen_version,
    supervisor_action,
)

PAGE_SIZE = 25
BULK_ACTIONS = {
    "available": "Make available",
    "release": "Release (end call, back to the queue)",
    "offline": "Log off",
}
# The day's timeline (SVG fills: the page's CSP allows no inline style).
DAY_COLORS = {
    "queued": "#2f855a",
    "ringing": "#d69e2e",
    "attending": "#2b6cb0",
    "wrap_up": "#c05621",
    "offline": "#a0aec0",
    "available": "#68d391",
    "not_ready": "#805ad5",
}


def _status_tabs(agents: Agents) -> dict:
    """Agents per status for the tabs, and all of them: one COUNT query per status, each
    stopping at COUNT_CAP (a capped figure shows as "1,000+")."""
    counts = agents.count_by_status(cap=COUNT_CAP)
    everyone = sum(n for n, _ in counts.values()), any(more for _, more in counts.values())
    return {
        "counts": counts,
        "status_counts": [(status, AgentStatus.LABELS[status], capped(*counts[status])) for status in AgentStatus.ALL],
        "all_count": capped(*everyone),
        "everyone": everyone,
    }


def _tab_query(query) -> str:
    """The filters other than status (and no page), for the status tabs' links."""
    kept = query.copy()
    for name in ("status", "cursor", "before", "partial"):
        kept.pop(name, None)
    return kept.urlencode()


def _list_context(query) -> tuple[dict, bool]:
    """The agents list for a query (the page's, or the one an action was posted from):
    the page of agents, the counts and the filters; and whether the filters were refused."""
    catalog = SkillCatalog.from_settings()
    agents = Agents(catalog=catalog)
    filters = AgentFilterForm(query or None, catalog=catalog)
    page, problem, total = None, None, None
    tabs = _status_tabs(agents)
    if filters.is_valid() or not query:
        data = filters.cleaned_data if query else {}
        status, search = data.get("status") or None, data.get("q") or None
        skill = filters.skill_filter if query else None
        page = agents.list(
            cursor=query.get("cursor"),
            before=query.get("before"),
            limit=PAGE_SIZE,
            status=status,
            search=search,
            skill=skill,
        )
        if search or skill:  # one more COUNT query, with the filters
            total = agents.count(status=status, search=search, skill=skill, cap=COUNT_CAP)
        elif status:
            total = tabs["counts"][status]
        else:
            total = tabs["everyone"]
    else:
        problem = errors_in(filters, "Check the filters: ")
    kept = query.copy()
    for name in ("cursor", "before", "partial"):
        kept.pop(name, None)
    context = {
        "filters": filters,
        "page": page,
        "total": capped(*total) if total else None,
        "total_count": total[0] if total else 0,
        "filter_problem": problem,
        "query": kept.urlencode(),
        "tab_query": _tab_query(query),
        "current_status": query.get("status", ""),
        **tabs,
        "bulk_actions": BULK_ACTIONS,
        "release_then": THEN,
        "not_ready_reasons": not_ready_reasons(),
        "dimensions": catalog.names,
    }
    return context, problem is not None


@require_GET
def agent_list(request):
    context, refused = _list_context(request.GET)
    context["here"] = request.get_full_path()
    status = 400 if refused else 200
    if request.htmx and request.GET.get("partial") == "table":
        return render(request, "queues_app/agents.html#agents-table", context, status=status)
    return render(request, "queues_app/agents.html", context, status=status)


def agents_answer(request, *, text: str, tag: str, status: int, agent_id: str):
    """The answer to an action on the agents list: the list read again with the filters
    it was showing (so it re-sorts and drops who no longer belongs), the message under the
    agent's row or, when they left the list, above it; and the tabs' counts."""
    context, _ = _list_context(list_filters(request))
    page = context["page"]
    shown = page is not None and any(agent.agent_id == agent_id for agent in page.items)
    context.update(
        {
            "here": request.POST.get("next") or reverse("agents"),
            "note": text,
            "note_tag": tag,
            "note_for": agent_id,
            "note_shown": shown,
        }
    )
    if not shown:
        context.update(_gone(agent_id, context["current_status"]))
    return render(request, "queues_app/_agents_answer.html", context, status=status)


def _gone(agent_id: str, listed_status: str) -> dict:
    """Why an agent acted on is not in the list any more: another status, another page,
    or no longer there at all."""
    try:
        agent = Agents().get(agent_id)
    except NotFound:
        return {"gone_text": "This agent no longer exists."}
    where = (
        "so no longer in this list"
        if listed_status and agent.status != listed_status
        else "on another page of this list"
    )
    return {
        "gone_text": f"{agent.name} is {agent.status_label.lower()} now, {where}.",
        "gone_url": reverse("agent-detail", args=[agent_id]),
    }


@require_http_methods(["GET", "POST"])
def agent_create(request):
    require_supervisor(request)  # a viewer is shown no form they could not send
    catalog = SkillCatalog.from_settings()
    try:
        named: list[Profile] | None = ProfileStore(default()).all()
    except DynamoError:
        named = None  # DynamoDB is out of reach: saving says so, on the form
    form = AgentForm(request.POST or None, catalog=catalog, named=named)
    if request.method == "POST":
        agent = form.is_valid() and save_form(
            form, lambda: operations(request).create_agent(form.cleaned_data["name"], form.skills, **form.serving)
        )
        if agent:
            messages.success(request, f"Created agent {agent.name}.")
            return redirect("agent-detail", agent_id=agent.agent_id)
    return render(
        request, "queues_app/agent_form.html", {"form": form, "creating": True}, status=400 if form.errors else 200
    )


@require_http_methods(["GET", "POST"])
def agent_detail(request, agent_id: str):
    if request.method == "POST":
        require_supervisor(request)  # before anything is read: a viewer learns nothing
    catalog = SkillCatalog.from_settings()
    agents = Agents(catalog=catalog)
    agent = agents.get(check_id("agent", agent_id))
    named = ProfileStore(agents.db).read().profiles
    form = AgentForm(
        request.POST or None,
        catalog=catalog,
        named=sorted(named.values(), key=lambda p: p.profile_id),
        own=agent.lines,
        initial=AgentForm.initial_for(agent),
    )
    if request.method == "POST" and form.is_valid():
        outcome = save_form(
            form,
            lambda: operations(request).update_agent(
                agent_id,
                name=form.cleaned_data["name"],
                skills=form.skills,
                expected_version=form.expected_version or agent.version,
                **form.serving,
            ),
        )
        if outcome:
            if outcome.replayed:
                messages.warning(request, f"{outcome.agent.name} was saved already; nothing changed.")
            else:
                messages.success(request, f"Saved {outcome.agent.name}.")
            return redirect("agent-detail", agent_id=agent_id)
    return render(
        request,
        "queues_app/agent_detail.html",
        {
            "agent": agent,
            "form": form,
            "profiles": named,
            **_activity(agent),
            "day_colors": DAY_COLORS,
            "status_labels": AgentStatus.LABELS,
            "release_then": THEN,
            "not_ready_reasons": not_ready_reasons(),
            "here": request.get_full_path(),
        },
        status=400 if form.errors else 200,
    )


def _activity(agent: Agent) -> dict:
    """The agent's day so far and their recent history, for their page."""
    trail = AuditTrail()
    history = trail.for_target(target("agent", agent.agent_id), limit=20)
    # The current call's record gives the start of the stretch in progress (one GetItem).
    call = CallCenter().find_call(agent.call_id) if agent.call_id else None
    day = agent_day(
        trail,
        agent.agent_id,
        current_status=agent.status,
        current_since=agent.status_since or agent.updated_at,
        current_reason=agent.reason,
        current_call=agent.call_id,
        call_started=(call.answered_at or call.assigned_at) if call else None,
    )
    return {
        "history": history.entries,
        "history_more": history.next_cursor is not None,
        "day": day,
        "answer_by": call.answer_by if call else None,
    }


def _call_note(call) -> str:
    if call and call.offer_sk:
        return f" and was offered call {call.call_id}: ringing (waited {call.waited_seconds:.0f} s so far)"
    return f" and took call {call.call_id} (waited {call.waited_seconds:.0f} s)" if call else ""


@supervisor_action(default_back="/agents/", row=agents_answer)
def agent_available(request, agent_id: str):
    outcome = operations(request).make_available(check_id("agent", agent_id), expected_version=seen_version(request))
    agent, call = outcome
    return repeat_or_done(
        outcome.replayed,
        f"{agent.name} is {'attending' if call else 'queued'}{_call_note(call)}.",
        f"{agent.name} was made available already; {agent.name} is {agent.doing} now.",
    )


@supervisor_action(default_back="/agents/", row=agents_answer)
def agent_release(request, agent_id: str):
    """End the agent's call named by the page (asks first), then queue them again, or
    wrap-up, or offline."""
    agent_id = check_id("agent", agent_id)
    form = ReleaseForm(request.POST)
    if not form.is_valid():
        raise InvalidRequest(errors_in(form))
    then, call_id = form.cleaned_data["then"], form.cleaned_data["call_id"]
    if not confirmed(request):
        name = Agents().get(agent_id).name
        return ask_first(
            request,
            title="End the call",
            question=f"End {name}'s call {call_id}, then {THEN[then]}?",
            url=reverse("agent-release", args=[agent_id]),
            back=back_url(request, reverse("agents")),
            fields=[("call_id", call_id), ("then", then)],
        )
    outcome = operations(request).release(agent_id, then=then, call_id=call_id)
    agent, call = outcome
    return repeat_or_done(
        outcome.replayed,
        f"Released {agent.name}; now {agent.status_label.lower()}{_call_note(call)}.",
        f"Call {call_id} had already ended ({agent.name} went {THEN[then]}); {agent.name} is {agent.doing} now.",
    )


@supervisor_action(default_back="/agents/", row=agents_answer)
def agent_offline(request, agent_id: str):
    outcome = operations(request).log_off(check_id("agent", agent_id), expected_version=seen_version(request))
    agent = cast(Agent, outcome.agent)
    return repeat_or_done(outcome.replayed, f"{agent.name} is offline.", f"{agent.name} was logged off already.")


@supervisor_action(default_back="/agents/", row=agents_answer)
def agent_not_ready(request, agent_id: str):
    """Logged in, offered no call, for the reason chosen (AGENT_NOT_READY_REASONS)."""
    reason = request.POST.get("reason", "")
    outcome = operations(request).set_not_ready(
        check_id("agent", agent_id), reason, expected_version=seen_version(request)
    )
    agent = cast(Agent, outcome.agent)
    if agent.next_status:  # on a call: not ready once it ends
        return repeat_or_done(
            outcome.replayed,
            f"{agent.name} goes not ready ({reason}) when the call ends.",
            f"{agent.name} was set to go not ready after this call already.",
        )
    return repeat_or_done(
        outcome.replayed, f"{agent.name} is not ready: {reason}.", f"{agent.name} was set not ready already."
    )


@supervisor_action(default_back="/agents/", row=agents_answer)
def agent_next_status_cancel(request, agent_id: str):
    """The agent's next status taken back: the end of their call decides again."""
    outcome = operations(request).cancel_next_status(
        check_id("agent", agent_id), expected_version=seen_version(request)
    )
    agent = cast(Agent, outcome.agent)
    return repeat_or_done(
        outcome.replayed,
        f"{agent.name} no longer goes not ready after this call.",
        f"{agent.name}'s next status was cancelled already.",
    )


@supervisor_action(default_back="/agents/")
def agent_bulk(request) -> HttpResponse | str:
    action = request.POST.get("action", "")
    if action not in BULK_ACTIONS:
        raise InvalidRequest("Choose what to do with the selected agents.")
    ops = operations(request)
    return bulk(
        request,
        label=BULK_ACTIONS[action],
        kind="agent",
        effect=lambda selection: ops.agents_effect(action, selection),
        act=lambda selection: ops.on_agents(action, selection),
        url=reverse("agent-bulk"),
        back=reverse("agents"),
        danger=action != "available",
        question_titled=False,
    )
