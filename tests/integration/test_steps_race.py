"""Routing steps and profiles across processes, on DynamoDB Local: callers whose step
admits only experts (or whose line only some agents' profiles serve) are placed by two
processes while two others bring agents back. No agent is given two callers, no caller is
given to an agent below their step or who does not serve their line, and no agent who
may take such a caller is left queued while one waits."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.conf import settings

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.lines.profiles import ProfileStore
from queues_app.monitoring import invariants

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start(env, *args):
    command = [sys.executable, "-m", "tests.helpers.step_traffic", *args]
    return subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def environment():
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DYNAMODB_ENDPOINT_URL": settings.DYNAMODB_ENDPOINT_URL,
        "DYNAMODB_TABLE_PREFIX": settings.DYNAMODB_TABLE_PREFIX,
    }


def run_all(processes):
    for process in processes:
        _out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-3000:]


def test_no_agent_twice_and_no_caller_below_their_step_across_processes(local_db):
    env = environment()
    roster = Agents()
    experts = [roster.create(f"Expert {n}", {"language": {"French": 5}, "gender": ["F"]}) for n in range(6)]
    juniors = [roster.create(f"Junior {n}", {"language": {"French": 2}, "gender": ["M"]}) for n in range(6)]
    everyone = [agent.agent_id for agent in experts + juniors]
    processes = [
        start(env, "callers", "1", "8"),
        start(env, "callers", "2", "8"),
        start(env, "agents", "3", *everyone[0::2]),
        start(env, "agents", "4", *everyone[1::2]),
    ]
    run_all(processes)

    centre = CallCenter(local_db)
    agents = {agent.agent_id: agent for agent in roster.get_many(everyone)}
    calls = [call for agent in agents.values() if agent.call_id for call in [centre.get_call(agent.call_id)]]
    assert len({call.call_id for call in calls}) == len(calls)  # no call held by two agents
    assert {call.agent_id for call in calls} <= {agent.agent_id for agent in experts}  # none below the step
    assert all(agents[j.agent_id].status == AgentStatus.QUEUED for j in juniors)
    # Every expert took a caller: six of the sixteen are answered, ten wait.
    assert all(agents[e.agent_id].status in AgentStatus.ON_A_CALL for e in experts)
    waiting, _more = centre.line.count_waiting()
    assert waiting == 10
    assert [str(v) for v in invariants.find_violations(local_db, centre.catalog, passes=1)] == []
    assert all(call.status == CallStatus.ASSIGNED for call in calls)


def test_no_agent_twice_and_no_caller_to_an_agent_who_does_not_serve_their_line_across_processes(local_db):
    env = environment()
    centre = CallCenter(local_db)
    for line_id in ("support", "sales"):
        centre.lines.put({"line_id": line_id, "name": line_id.title()})
    ProfileStore(local_db).put(
        {"profile_id": "support-first", "name": "Support first", "lines": {"support": {}, "sales": {"priority": 2}}},
        known={"support", "sales"},
    )
    roster = Agents()
    skills = {"language": ["French"], "gender": ["F"]}
    serving = [roster.create(f"Support {n}", skills, profile="support-first") for n in range(6)]
    sales = [roster.create(f"Sales {n}", skills, lines={"sales": {"priority": 1}}) for n in range(6)]
    everyone = [agent.agent_id for agent in serving + sales]
    run_all(
        [
            start(env, "line-callers", "1", "8", "support"),
            start(env, "line-callers", "2", "8", "support"),
            start(env, "agents", "3", *everyone[0::2]),
            start(env, "agents", "4", *everyone[1::2]),
        ]
    )
    agents = {agent.agent_id: agent for agent in roster.get_many(everyone)}
    calls = [centre.get_call(agent.call_id) for agent in agents.values() if agent.call_id]
    assert len({call.call_id for call in calls}) == len(calls)  # no call held by two agents
    assert {call.agent_id for call in calls} <= {agent.agent_id for agent in serving}  # only who serves support
    assert all(agents[s.agent_id].status == AgentStatus.QUEUED for s in sales)
    assert all(agents[s.agent_id].status in AgentStatus.ON_A_CALL for s in serving)
    assert centre.line.count_waiting()[0] == 10
    assert [str(v) for v in invariants.find_violations(local_db, centre.catalog, passes=1)] == []
