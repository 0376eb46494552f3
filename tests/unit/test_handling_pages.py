"""Not ready, transfers and each agent's part of a call, from the Agents and Calls pages."""

from __future__ import annotations

from django.urls import reverse

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter


def staff(*names):
    center = CallCenter()
    made = [Agents().create(name, {"language": [language], "gender": ["F"]}) for name, language in names]
    for agent in made:
        center.make_available(agent.agent_id)
    return center, made


def test_a_supervisor_sets_an_agent_not_ready_from_the_list_with_a_reason(supervisor_client, moto_db):
    center, (ana,) = staff(("Ana", "English"))
    html = supervisor_client.get(reverse("agents")).content.decode()
    assert f'action="{reverse("agent-not-ready", args=[ana.agent_id])}"' in html
    assert '<option value="lunch">lunch</option>' in html
    version = center.agents.get(ana.agent_id).version
    response = supervisor_client.post(
        reverse("agent-not-ready", args=[ana.agent_id]), {"reason": "lunch", "version": version}, follow=True
    )
    assert "Ana is not ready: lunch." in response.content.decode()
    now = center.agents.get(ana.agent_id)
    assert (now.status, now.reason) == (AgentStatus.NOT_READY, "lunch")
    listed = supervisor_client.get(reverse("agents") + "?status=not_ready").content.decode()
    assert "Not ready: lunch" in listed


def test_a_reason_that_is_not_configured_is_refused_on_the_page(supervisor_client, moto_db):
    center, (ana,) = staff(("Ana", "English"))
    version = center.agents.get(ana.agent_id).version
    response = supervisor_client.post(
        reverse("agent-not-ready", args=[ana.agent_id]), {"reason": "nap", "version": version}, follow=True
    )
    assert "A reason to be not ready is one of" in response.content.decode()
    assert center.agents.get(ana.agent_id).status == AgentStatus.QUEUED


def test_a_supervisor_transfers_a_call_from_its_page_and_sees_each_agents_part(supervisor_client, moto_db):
    center, (ana, bea) = staff(("Ana", "English"), ("Bea", "French"))
    call, _ = center.create_call({"language": "English", "gender": "F"})
    calls_page = supervisor_client.get(reverse("calls")).content.decode()
    assert f"{reverse('call-detail', args=[call.call_id])}#transfer" in calls_page
    detail = supervisor_client.get(reverse("call-detail", args=[call.call_id])).content.decode()
    assert 'id="transfer"' in detail and f'<option value="{bea.agent_id}">Bea</option>' in detail

    response = supervisor_client.post(
        reverse("call-transfer", args=[call.call_id]),
        {
            "to": "preferences",
            "skill_language": "French",
            "skill_gender": "any",
            "then": "wrap_up",
            "agent_id": "",
            "from_agent_id": ana.agent_id,
        },
        follow=True,
    )
    assert f"Call {call.call_id} transferred to Bea" in response.content.decode()
    moved = center.get_call(call.call_id)
    assert (moved.status, moved.agent_id) == (CallStatus.ASSIGNED, bea.agent_id)
    detail = supervisor_client.get(reverse("call-detail", args=[call.call_id])).content.decode()
    assert "Agents on this call" in detail and "transferred it" in detail and "in progress" in detail
    # The same form again, from a tab that still showed Ana on the call: nothing moves.
    again = supervisor_client.post(
        reverse("call-transfer", args=[call.call_id]),
        {
            "to": "preferences",
            "skill_language": "English",
            "skill_gender": "any",
            "then": "queue",
            "from_agent_id": ana.agent_id,
        },
        follow=True,
    )
    assert "is no longer with the agent named: it is with Bea now" in again.content.decode()
    assert center.get_call(call.call_id).agent_id == bea.agent_id


def test_a_transfer_form_without_an_agent_changes_nothing(supervisor_client, moto_db):
    center, (ana,) = staff(("Ana", "English"))
    call, _ = center.create_call({})
    response = supervisor_client.post(
        reverse("call-transfer", args=[call.call_id]),
        {"to": "agent", "agent_id": "", "then": "queue", "from_agent_id": ana.agent_id},
        follow=True,
    )
    assert "Choose the queued agent" in response.content.decode()
    assert center.get_call(call.call_id).agent_id == ana.agent_id


def test_a_viewer_gets_neither_form(viewer_client, moto_db):
    center, (ana,) = staff(("Ana", "English"))
    call, _ = center.create_call({})
    assert "agent-not-ready" not in viewer_client.get(reverse("agents")).content.decode()
    html = viewer_client.get(reverse("call-detail", args=[call.call_id])).content.decode()
    assert 'id="transfer"' not in html
    response = viewer_client.post(reverse("call-transfer", args=[call.call_id]), {"to": "preferences"})
    assert response.status_code == 403


def test_the_overview_names_the_agents_not_ready_with_why_and_for_how_long(supervisor_client, moto_db):
    center, (ana, bea) = staff(("Ana", "English"), ("Bea", "French"))
    center.set_not_ready(ana.agent_id, "training")
    html = supervisor_client.get(reverse("home")).content.decode()
    assert 'data-figure="agents-not-ready"' in html
    assert "Ana</bdi></a> (training," in html and "Bea</bdi></a> (" not in html
