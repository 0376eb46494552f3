"""A break after this call (Amazon Connect's "next status"): not ready asked for an agent on
a call is kept as their next status and applied when the call ends, whatever the ending
says; it can be taken back; pages and the API show it."""

from __future__ import annotations

import pytest

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.transfers import Transfer
from queues_app.centre.call_center import CallCenter
from tests.helpers.api import assert_problem

FRENCH = {"language": ["French"], "gender": ["F"]}


@pytest.fixture
def on_a_call(moto_db, api):
    agent = api.post("/api/agents", {"name": "Ana", "skills": FRENCH}).json()
    api.post(f"/api/agents/{agent['agent_id']}/available", {"version": 1})
    call = api.post("/api/calls", {"preferences": {}}).json()
    assert call["agent_id"] == agent["agent_id"]
    return api.get(f"/api/agents/{agent['agent_id']}").json(), call


@pytest.mark.parametrize("then", ["queue", "wrap_up", "offline"])
def test_a_break_asked_on_a_call_is_taken_when_the_call_ends_whatever_the_ending_says(api, on_a_call, then):
    agent, call = on_a_call
    url = f"/api/agents/{agent['agent_id']}"
    asked = api.post(f"{url}/not-ready", {"version": agent["version"], "reason": "break"})
    assert asked.status_code == 202, asked.json()
    body = asked.json()["agent"]
    assert (body["status"], body["next_status"], body["next_reason"]) == ("attending", "not_ready", "break")
    again = api.post(f"{url}/not-ready", {"version": agent["version"], "reason": "break"})  # retried after a timeout
    assert (again.status_code, again["Idempotent-Replayed"]) == (202, "true")
    api.post("/api/calls", {"preferences": {}})  # a caller waits: the agent does not take them
    ended = api.post(f"{url}/release", {"call_id": call["call_id"], "then": then}).json()
    assert (ended["agent"]["status"], ended["agent"]["reason"], ended["call"]) == ("not_ready", "break", None)
    assert ended["agent"]["next_status"] is None  # spent


def test_the_next_status_is_taken_back_and_the_ending_decides_again(api, on_a_call):
    agent, call = on_a_call
    url = f"/api/agents/{agent['agent_id']}"
    version = api.post(f"{url}/not-ready", {"version": agent["version"], "reason": "lunch"}).json()["agent"]["version"]
    stale = assert_problem(api.delete(f"{url}/next-status?version={version - 1}"), 409)
    assert "version" in stale["message"], stale
    cancelled = api.delete(f"{url}/next-status?version={version}")
    assert cancelled.status_code == 200 and cancelled.json()["agent"]["next_status"] is None
    assert api.delete(f"{url}/next-status?version={version}")["Idempotent-Replayed"] == "true"
    none_left = assert_problem(api.delete(f"{url}/next-status?version={version + 1}"), 409)
    assert "no next status" in none_left["message"], none_left
    ended = api.post(f"{url}/release", {"call_id": call["call_id"], "then": "wrap_up"}).json()
    assert ended["agent"]["status"] == "wrap_up"


def test_a_transfer_ends_the_agents_part_and_takes_the_next_status(moto_db, clock):
    centre = CallCenter(clock=clock)
    ana = Agents().create("Ana", FRENCH)
    bo = Agents().create("Bo", FRENCH)
    centre.make_available(ana.agent_id)
    call, _ = centre.create_call({})
    centre.set_not_ready(ana.agent_id, "training")
    centre.make_available(bo.agent_id)
    centre.transfer(Transfer(call.call_id, {"language": "French"}, then="queue", from_agent_id=ana.agent_id))
    after = Agents().get(ana.agent_id)
    assert (after.status, after.reason, after.next_status) == (AgentStatus.NOT_READY, "training", None)


def test_the_agent_page_says_it_and_a_supervisor_sets_and_cancels_it(api, on_a_call, supervisor_client):
    agent, _call = on_a_call
    page = f"/agents/{agent['agent_id']}/"
    posted = supervisor_client.post(
        f"/agents/{agent['agent_id']}/not-ready", {"reason": "break", "version": agent["version"]}
    )
    assert posted.status_code == 302, posted.content[:500]
    shown = supervisor_client.get(page).content.decode()
    assert '<strong data-figure="next-status">Break after this call</strong>' in shown
    now = Agents().get(agent["agent_id"])
    cancelled = supervisor_client.post(f"/agents/{agent['agent_id']}/next-status/cancel", {"version": now.version})
    assert cancelled.status_code == 302
    assert Agents().get(agent["agent_id"]).next_status is None
    assert 'data-figure="next-status"' not in supervisor_client.get(page).content.decode()
