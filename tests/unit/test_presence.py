"""Presence (AGENT_PRESENCE_SECONDS): an agent's client sends heartbeats; a queued or
ringing agent whose client went quiet is set not ready (`disconnected`), out of every
queue, and the call ringing for them goes back to its place."""

from __future__ import annotations

import io
import re
from datetime import timedelta

import pytest
from django.core.management import call_command

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import meter
from queues_app.ddb.clock import now, to_iso
from queues_app.routing.queues import list_queues
from tests.helpers.api import assert_problem

FRENCH = {"language": ["French"], "gender": ["F"]}


@pytest.fixture
def presence(settings):
    settings.AGENT_PRESENCE_SECONDS = 30


def test_a_heartbeat_is_one_conditional_write_that_changes_no_version(moto_db, api, presence):
    agent = Agents().create("Ana", FRENCH)
    with meter.measure() as seen:
        answer = api.post(f"/api/agents/{agent.agent_id}/heartbeat", {})
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["agent_id"], body["status"], body["presence_seconds"]) == (agent.agent_id, "offline", 30)
    assert (seen.calls, seen.calls_of("UpdateItem")) == (1, 1)
    after = Agents().get(agent.agent_id)
    assert (after.version, after.seen_at) == (agent.version, body["seen_at"])
    assert_problem(api.post("/api/agents/nobody/heartbeat", {}), 404)


def test_presence_off_reads_nothing_and_disconnects_nobody(moto_db, clock):
    centre = CallCenter(clock=clock)
    agent = Agents().create("Ana", FRENCH)
    centre.make_available(agent.agent_id)
    clock.advance(3600)
    with meter.measure() as seen:
        assert centre.disconnect_absent() == []
    assert seen.calls == 0
    assert Agents().get(agent.agent_id).status == AgentStatus.QUEUED


def test_a_quiet_queued_agent_is_disconnected_and_a_live_one_is_not(moto_db, clock, presence):
    centre = CallCenter(clock=clock)
    quiet, beating, late = (Agents().create(name, FRENCH) for name in ("Quiet", "Beating", "Late"))
    for agent in (quiet, beating):
        centre.make_available(agent.agent_id)
    clock.advance(25)
    centre.heartbeat(beating.agent_id)
    centre.make_available(late.agent_id)  # queued 10 s before the pass: not quiet yet
    clock.advance(10)
    gone = centre.disconnect_absent()
    assert [(agent.agent_id, call) for agent, call in gone] == [(quiet.agent_id, None)]
    after = Agents().get(quiet.agent_id)
    assert (after.status, after.reason, after.queue_token) == (AgentStatus.NOT_READY, "disconnected", None)
    assert sum(queue.depth for queue in list_queues(centre.table)) == 2  # out of every queue
    assert {Agents().get(a.agent_id).status for a in (beating, late)} == {AgentStatus.QUEUED}
    assert centre.disconnect_absent() == []  # once


def test_a_heartbeat_that_lands_first_wins_over_the_disconnection(moto_db, clock, presence):
    centre = CallCenter(clock=clock)
    agent = Agents().create("Ana", FRENCH)
    centre.make_available(agent.agent_id)
    clock.advance(60)
    read = Agents().get(agent.agent_id)  # the sweep read them quiet...
    centre.heartbeat(agent.agent_id)  # ...and the heartbeat lands before its write
    assert centre.availability.disconnect(read, to_iso(clock.moment - timedelta(seconds=30))) is False
    assert Agents().get(agent.agent_id).status == AgentStatus.QUEUED


def test_a_ringing_agent_who_is_gone_sends_the_call_back_to_its_place(moto_db, clock, presence, settings):
    settings.ANSWER_TIMEOUT_SECONDS = 60
    centre = CallCenter(clock=clock)
    ana = Agents().create("Ana", FRENCH)
    centre.make_available(ana.agent_id)
    clock.advance(20)
    call, _ = centre.create_call({"language": "French"})
    assert (call.agent_id, Agents().get(ana.agent_id).status) == (ana.agent_id, AgentStatus.RINGING)
    clock.advance(15)  # 35 s without a heartbeat, before the answer timeout
    [(gone, back)] = centre.disconnect_absent()
    assert gone.agent_id == ana.agent_id and back is not None
    assert (back.status, back.arrived_at, back.agent_id) == (CallStatus.WAITING, call.arrived_at, None)
    assert back.legs[-1]["agent_id"] == ana.agent_id
    after = Agents().get(ana.agent_id)
    assert (after.status, after.reason, after.call_id) == (AgentStatus.NOT_READY, "disconnected", None)
    assert centre.miss_expired_offers() == []  # the offer went with the disconnection


def test_the_escalation_pass_disconnects_and_says_so(moto_db, presence):
    agent = Agents().create("Ana", FRENCH)
    CallCenter(clock=lambda: now() - timedelta(seconds=120)).make_available(agent.agent_id)
    out = io.StringIO()
    call_command("escalate_callers", stdout=out)
    assert f"agent {agent.agent_id}: no heartbeat; not ready (disconnected)" in out.getvalue()
    assert Agents().get(agent.agent_id).reason == "disconnected"


def test_disconnected_is_the_systems_reason_not_one_a_person_gives(moto_db, api):
    agent = api.post("/api/agents", {"name": "Ana", "skills": FRENCH}).json()
    refused = assert_problem(
        api.post(f"/api/agents/{agent['agent_id']}/not-ready", {"version": 1, "reason": "disconnected"}), 400
    )
    assert "reason" in str(refused)


def test_the_agent_page_says_when_the_client_was_last_heard_of(moto_db, viewer_client):
    agent = Agents().create("Ana", FRENCH)
    page = viewer_client.get(f"/agents/{agent.agent_id}/").content.decode()
    assert 'data-figure="heartbeat"' not in page  # never sent one
    CallCenter().heartbeat(agent.agent_id)
    page = viewer_client.get(f"/agents/{agent.agent_id}/").content.decode()
    assert re.search(r"Last heartbeat \d s ago", page), page
