"""Wrap-up that ends by itself: past WRAP_UP_SECONDS (or its call's line's own
`wrap_up_seconds`) the escalation loop makes the agent available, exactly once, and they
may take a waiting caller at once; made available sooner by hand, nothing more happens."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from queues_app.centre.call_center import CallCenter

FRENCH = {"language": ["French"], "gender": ["F"]}


@pytest.fixture
def centre(moto_db, clock, settings):
    settings.WRAP_UP_SECONDS = 30
    return CallCenter(clock=clock)


def in_wrap_up(centre, name="Ana", line=None):
    agent = Agents().create(name, FRENCH)
    centre.make_available(agent.agent_id)
    call, _ = centre.create_call({}, **({"line": line} if line else {}))
    assert call.agent_id == agent.agent_id
    centre.release(agent.agent_id, "wrap_up", call_id=call.call_id)
    return Agents().get(agent.agent_id)


def test_a_wrap_up_past_its_limit_ends_once_and_the_agent_takes_a_waiting_caller(centre, clock):
    agent = in_wrap_up(centre)
    assert agent.status == AgentStatus.WRAP_UP and agent.wrap_up_until
    waiting, _ = centre.create_call({})
    clock.advance(29)
    assert centre.end_overdue_wrap_ups() == []
    clock.advance(1)
    [ended] = centre.end_overdue_wrap_ups()
    assert (ended.agent.status, ended.call.call_id) == (AgentStatus.ATTENDING, waiting.call_id)
    assert centre.end_overdue_wrap_ups() == []  # once
    assert Agents().get(agent.agent_id).wrap_up_until is None  # spent with the wrap-up


def test_made_available_by_hand_first_the_limit_does_nothing(centre, clock):
    agent = in_wrap_up(centre)
    centre.make_available(agent.agent_id, expected_version=agent.version)
    clock.advance(60)
    assert centre.end_overdue_wrap_ups() == []
    assert Agents().get(agent.agent_id).status == AgentStatus.QUEUED


def test_a_lines_own_limit_and_no_limit_at_all(centre, clock, settings):
    centre.lines.put({"line_id": "support", "name": "Support", "wrap_up_seconds": 5})
    centre.lines.put({"line_id": "sales", "name": "Sales"})
    quick = in_wrap_up(centre, "Quick", line="support")
    slow = in_wrap_up(centre, "Slow", line="sales")
    clock.advance(5)
    assert [o.agent.agent_id for o in centre.end_overdue_wrap_ups()] == [quick.agent_id]
    clock.advance(25)
    assert [o.agent.agent_id for o in centre.end_overdue_wrap_ups()] == [slow.agent_id]
    for agent in (quick, slow):  # queued by their limits: out of the way of the next call
        centre.log_off(agent.agent_id)
    settings.WRAP_UP_SECONDS = None
    centre.lines.put({"line_id": "support", "name": "Support", "version": 1})  # no line sets one
    lasting = in_wrap_up(centre, "Lasting", line="support")
    clock.advance(3600)
    assert centre.end_overdue_wrap_ups() == [] and lasting.wrap_up_until is None


def test_the_escalation_command_does_it_and_the_audit_trail_says_so(centre, clock):
    clock.advance(-60)  # the wrap-up began a minute ago by the command's own (real) clock
    agent = in_wrap_up(centre)
    out = io.StringIO()
    call_command("escalate_callers", stdout=out)
    assert f"agent {agent.agent_id}: wrap-up reached its limit; queued" in out.getvalue()
    assert Agents().get(agent.agent_id).status == AgentStatus.QUEUED
    [latest, *_] = AuditTrail().for_target(target("agent", agent.agent_id)).entries
    assert (latest.actor, latest.source, latest.summary) == (
        "wrap-up timeout",
        "system",
        "Ana's wrap-up reached its limit: queued",
    )


def test_the_agent_page_says_when_the_wrap_up_ends(centre, supervisor_client):
    agent = in_wrap_up(centre)
    shown = supervisor_client.get(f"/agents/{agent.agent_id}/").content.decode()
    assert 'data-figure="wrap-up-ends">Made available in ' in shown, shown[:300]


def test_the_lines_page_sets_a_lines_wrap_up_limit_and_refuses_a_bad_one(centre, supervisor_client):
    form = {"line_id": "support", "name": "Support", "service_level_seconds": "20", "service_level_target": "80"}
    form.update(short_abandon_seconds="0", hours="", holidays="", overflow_kind="", wrap_up_seconds="45")
    assert supervisor_client.post("/lines/new", form).status_code == 302
    assert centre.lines.get("support").wrap_up_seconds == 45
    bad = supervisor_client.post("/lines/support/", {**form, "wrap_up_seconds": "7200", "version": "1"})
    assert bad.status_code == 400 and "3600" in bad.content.decode()
    assert centre.lines.get("support").wrap_up_seconds == 45  # nothing lost
