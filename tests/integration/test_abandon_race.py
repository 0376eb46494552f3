"""A caller hanging up while an agent comes back for them, many times over, on DynamoDB
Local: each pair ends with exactly one of the two, both ends come up, and every
invariant holds."""

from __future__ import annotations

import pytest

from queues_app.agents.records import AgentStatus
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.monitoring import invariants
from tests.helpers.races import HangUpRaces

pytestmark = pytest.mark.integration

PAIRS = 30


def test_an_abandon_and_an_assignment_at_the_same_moment_end_with_exactly_one(local_db):
    router = CallCenter(local_db)
    races = HangUpRaces(local_db, seed=7)
    abandoned = assigned = 0
    for n in range(PAIRS):
        call, _ = router.create_call({"language": "French", "gender": "X"})
        assert call.status == CallStatus.WAITING
        agent = router.agents.create(f"Agent {n}", {"language": ["French"], "gender": ["X"]})

        hung_up, took = races.run(call.call_id, agent.agent_id)

        final = router.get_call(call.call_id)
        now_agent = router.agents.get(agent.agent_id)
        if isinstance(hung_up, errors.Conflict):
            # The agent won: the caller was theirs before the hang-up landed.
            assert took is not None and took.call_id == call.call_id
            assert final.status == CallStatus.ASSIGNED and final.agent_id == agent.agent_id
            assert "assigned to" in str(hung_up)
            assert now_agent.status == AgentStatus.ATTENDING
            assigned += 1
            router.release(agent.agent_id, then="offline")
        else:
            assert took is None, f"pair {n}: abandoned and assigned"
            assert final.status == CallStatus.ABANDONED and final.agent_id is None
            assert now_agent.status == AgentStatus.QUEUED
            abandoned += 1
            router.log_off(agent.agent_id)
    print(f"{abandoned} abandoned, {assigned} assigned")
    assert abandoned > 0 and assigned > 0  # both orders came up: each outcome was checked
    assert router.line.count_waiting() == (0, False)
    assert [str(v) for v in invariants.find_violations(local_db, router.catalog)] == []
