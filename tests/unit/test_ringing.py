"""Ringing is a state of its own (ANSWER_TIMEOUT_SECONDS): an agent offered a call rings
until they pick up, and every page, list, count, CSV, the wallboard, the API and /metrics
say so; a missed offer is a miss in the agent's day, never talk time or a call taken."""

import re

import pytest
from django.urls import reverse

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import now
from queues_app.operations import Operations
from tests.helpers.pages import figure

SKILLS = {"language": ["Spanish"], "gender": ["F"]}
SPANISH_F = {"language": "Spanish", "gender": "F"}


@pytest.fixture
def ringing(moto_db, settings):
    """Ana is queued; a caller is placed through the supervisor's page and offered to her."""
    settings.ANSWER_TIMEOUT_SECONDS = 20
    ana = Agents().create("Ana", SKILLS)
    CallCenter().make_available(ana.agent_id)
    call, _ = Operations("sam-supervisor", "page").create_call(SPANISH_F)
    return ana, call


def test_the_overview_the_agents_tab_and_the_calls_page_say_ringing(supervisor_client, ringing):
    ana, call = ringing
    panel = supervisor_client.get("/?panel=calls", HTTP_HX_REQUEST="true").content.decode()
    assert figure(panel, "agents-ringing") == "1" and figure(panel, "agents-attending") == "0"
    agents = supervisor_client.get(reverse("agents")).content.decode()
    assert re.search(r'data-tab="ringing">Ringing\s*<span class="count">1</span>', agents)
    assert '<span class="status status-ringing">Ringing</span>' in agents
    calls = supervisor_client.get(reverse("calls")).content.decode()
    ringing_section = calls.split('id="ringing"')[1].split("</section>")[0]
    assert call.call_id in ringing_section and "data-countdown" in ringing_section
    assert "Transfer…" not in ringing_section  # a call not picked up is not handed on
    page = supervisor_client.get(reverse("call-detail", args=[call.call_id])).content.decode()
    assert "status-call-offered" in page and "ringing for <bdi>Ana</bdi>" in page and "data-countdown" in page


def test_the_wallboard_and_metrics_count_the_ringing_agent(supervisor_client, ringing):
    board = supervisor_client.get(reverse("wallboard")).content.decode()
    total = re.search(r'<section class="line total".*?</section>', board, re.S).group(0)
    assert figure(total, "agents-ringing") == "1" and figure(total, "agents-attending") == "0"
    metrics = supervisor_client.get("/metrics").content.decode()
    assert 'switchboard_agents{status="ringing"} 1.0' in metrics
    assert 'switchboard_agents{status="attending"} 0.0' in metrics


def test_a_missed_offer_is_ringing_then_not_ready_in_the_day_never_a_call_taken(supervisor_client, ringing):
    from datetime import timedelta

    ana, call = ringing
    later = CallCenter(clock=lambda: now() + timedelta(seconds=30))  # the escalation loop, half a minute on
    from queues_app.audit.store import AuditTrail
    from queues_app.operations.system import SystemEvents

    SystemEvents(AuditTrail()).missed(later.miss_expired_offers()[0])
    page = supervisor_client.get(reverse("agent-detail", args=[ana.agent_id])).content.decode()
    assert "Calls taken today (0)" in page
    day = page.split("Calls taken today")[0]
    assert "Ringing" in day and "Not ready: missed" in day and "Attending a call" not in day


def test_a_picked_up_call_is_a_call_taken_from_the_answer(supervisor_client, ringing):
    ana, call = ringing
    Operations("phone-system", "api").answered(call.call_id)
    assert Agents().get(ana.agent_id).status == AgentStatus.ATTENDING
    page = supervisor_client.get(reverse("agent-detail", args=[ana.agent_id])).content.decode()
    assert "Calls taken today (1)" in page and "Ringing" in page.split("Calls taken today")[0]
