"""Agents: list with search and filters, create and edit, and the queue actions
(make available, release, log off), one at a time or on a selection."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from queues_app.agents.roster import Agents
from queues_app.agents.skills import SkillCatalog
from queues_app.audit_trail import AuditTrail, target
from queues_app.ddb.errors import InvalidRequest
from queues_app.forms import AgentFilterForm, AgentForm
from queues_app.roles import require_supervisor
from queues_app.views.common import back_url, check_id, confirm, operations, save_form, selected_ids, supervisor_action

PAGE_SIZE = 25
BULK_ACTIONS = {
    "available": "Make available",
    "release": "Release (end call, back to the queue)",
    "offline": "Log off",
}
RELEASE_THEN = {"queue": "back to the queue", "wrap_up": "wrap-up", "offline": "offline"}


@require_GET
def agent_list(request):
    catalog = SkillCatalog.from_settings()
    filters = AgentFilterForm(request.GET or None, catalog=catalog)
    page, problem = None, None
    if filters.is_valid() or not request.GET:
        data = filters.cleaned_data if request.GET else {}
        page = Agents(catalog=catalog).list(
            cursor=request.GET.get("cursor"),
            limit=PAGE_SIZE,
            status=data.get("status") or None,
            search=data.get("q") or None,
            skill=filters.skill_filter if request.GET else None,
        )
    else:
        problem = "Check the filters: " + "; ".join(
            f"{filters.fields[k].label if k in filters.fields else k}: {' '.join(v)}" for k, v in filters.errors.items()
        )
    query = request.GET.copy()
    query.pop("cursor", None)
    context = {
        "filters": filters,
        "page": page,
        "filter_problem": problem,
        "query": query.urlencode(),
        "bulk_actions": BULK_ACTIONS,
        "release_then": RELEASE_THEN,
        "dimensions": catalog.names,
        "here": request.get_full_path(),
    }
    status = 400 if problem else 200
    if request.htmx and request.GET.get("partial") == "table":
        return render(request, "queues_app/agents.html#agents-table", context, status=status)
    return render(request, "queues_app/agents.html", context, status=status)


@require_http_methods(["GET", "POST"])
def agent_create(request):
    catalog = SkillCatalog.from_settings()
    form = AgentForm(request.POST or None, catalog=catalog)
    if request.method == "POST":
        require_supervisor(request)
        agent = form.is_valid() and save_form(
            form, lambda: operations(request).create_agent(form.cleaned_data["name"], form.skills)
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
    form = AgentForm(request.POST or None, catalog=catalog, initial=AgentForm.initial_for(agent))
    if request.method == "POST" and form.is_valid():
        updated = save_form(
            form,
            lambda: operations(request).update_agent(
                agent_id,
                name=form.cleaned_data["name"],
                skills=form.skills,
                expected_version=form.expected_version or agent.version,
            ),
        )
        if updated:
            messages.success(request, f"Saved {updated.name}.")
            return redirect("agent-detail", agent_id=agent_id)
    history = AuditTrail().for_target(target("agent", agent_id), limit=20)
    return render(
        request,
        "queues_app/agent_detail.html",
        {
            "agent": agent,
            "form": form,
            "history": history.entries,
            "release_then": RELEASE_THEN,
            "here": request.get_full_path(),
        },
        status=400 if form.errors else 200,
    )


def _call_note(call) -> str:
    return f" and took call {call.call_id} (waited {call.waited_seconds:.0f} s)" if call else ""


@supervisor_action(default_back="/agents/")
def agent_available(request, agent_id: str):
    agent, call = operations(request).make_available(check_id("agent", agent_id))
    return f"{agent.name} is {'attending' if call else 'queued'}{_call_note(call)}."


@supervisor_action(default_back="/agents/")
def agent_release(request, agent_id: str):
    then = request.POST.get("then", "queue")
    if then not in RELEASE_THEN:
        raise InvalidRequest(f"After a call an agent goes to one of: {', '.join(RELEASE_THEN)}.")
    agent, call = operations(request).release(check_id("agent", agent_id), then=then)
    return f"Released {agent.name}; now {agent.status_label.lower()}{_call_note(call)}."


@supervisor_action(default_back="/agents/")
def agent_offline(request, agent_id: str):
    agent = operations(request).log_off(check_id("agent", agent_id))
    return f"{agent.name} is offline."


@supervisor_action(default_back="/agents/")
def agent_bulk(request) -> HttpResponse | str:
    action = request.POST.get("action", "")
    ids = selected_ids(request)
    if action not in BULK_ACTIONS:
        raise InvalidRequest("Choose what to do with the selected agents.")
    if not ids:
        raise InvalidRequest("Select at least one agent first.")
    if request.POST.get("confirmed") != "1":
        return confirm(
            request,
            title="Confirm",
            count=len(ids),
            question=f"{BULK_ACTIONS[action]}: {len(ids)} agent{'s' if len(ids) != 1 else ''}?",
            action_url=reverse("agent-bulk"),
            back=back_url(request, reverse("agents")),
            fields=[("action", action), *(("ids", i) for i in ids)],
            danger=action != "available",
        )
    report = operations(request).on_agents(action, ids)
    return f"{BULK_ACTIONS[action]}: {report.summary}."
