"""A break asked for while the call ends, many times over, on DynamoDB Local (threads: the
conditional writes decide): each pair ends in one of the two orders, never half of each.
Asked first (202), the agent goes not ready with the reason when the call ends, whatever
the ending said; the call ended first, the request is refused as stale (409) and the agent
went where the ending said. No agent keeps a next status once off the call."""

from __future__ import annotations

import random
import threading
import time

import pytest

from queues_app.agents.records import AgentStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.monitoring import invariants

pytestmark = pytest.mark.integration

PAIRS = 24


def race(db, agent_id: str, call_id: str, version: int, delay: float) -> tuple[object, object]:
    start = threading.Barrier(2)
    outcome: dict[str, object] = {}

    def ask_break():
        start.wait()
        time.sleep(delay)
        try:
            outcome["break"] = CallCenter(db).set_not_ready(agent_id, "break", expected_version=version)
        except errors.Conflict as exc:
            outcome["break"] = exc

    def end_call():
        start.wait()
        outcome["end"] = CallCenter(db).release(agent_id, "queue", call_id=call_id)

    threads = [threading.Thread(target=ask_break), threading.Thread(target=end_call)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcome["break"], outcome["end"]


def test_a_break_asked_as_the_call_ends_is_taken_in_one_order_or_the_other(local_db):
    centre = CallCenter(local_db)
    rng = random.Random(11)
    first = {"break": 0, "end": 0}
    for n in range(PAIRS):
        agent = centre.agents.create(f"Agent {n}", {"language": ["French"], "gender": ["X"]})
        centre.make_available(agent.agent_id)
        call, _ = centre.create_call({"language": "French"})
        on_call = centre.agents.get(agent.agent_id)
        assert on_call.call_id == call.call_id
        asked, ended = race(
            local_db, agent.agent_id, call.call_id, on_call.version, rng.uniform(0, 0.012) if n % 2 else 0.0
        )
        after = centre.agents.get(agent.agent_id)
        assert after.next_status is None and after.call_id is None
        if isinstance(asked, errors.Conflict):  # the call ended first: the ending decided
            assert after.status == AgentStatus.QUEUED, (n, after)
            first["end"] += 1
            centre.log_off(agent.agent_id)
        else:  # asked first: the ending, whatever it said, left them not ready
            assert asked.agent.next_status == AgentStatus.NOT_READY
            assert (after.status, after.reason) == (AgentStatus.NOT_READY, "break"), (n, after)
            assert ended.call is None
            first["break"] += 1
    print(first)
    assert first["break"] and first["end"]  # both orders came up: each outcome was checked
    assert [str(v) for v in invariants.find_violations(local_db, centre.catalog)] == []
