"""A caller past their line's max wait being overflowed while an agent comes back for
them, many times over, on DynamoDB Local: each pair ends in exactly one place (taken by
the agent, or ended by the overflow), both ends come up, and the line's count, the
waiting counts and every invariant hold. The two sides run in threads of one process,
each with its own client; across processes the same two conditional transactions meet
in DynamoDB the same way (nothing is shared in memory)."""

from __future__ import annotations

import random
import threading
import time

import pytest

from queues_app.agents.records import AgentStatus
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.monitoring import invariants
from tests.helpers.clock import ManualClock

pytestmark = pytest.mark.integration

PAIRS = 30


def race(db, clock, agent_id: str, delay: float) -> tuple[list, object]:
    """The overflow pass and the agent's coming back, one `delay` seconds after the other
    (the agent later when positive, the overflow when negative)."""
    start = threading.Barrier(2)
    outcome: dict[str, object] = {}

    def overflow():
        start.wait()
        time.sleep(max(0.0, -delay))
        outcome["overflowed"] = CallCenter(db, clock=clock).escalator.overflow()

    def come_back():
        start.wait()
        time.sleep(max(0.0, delay))
        outcome["taken"] = CallCenter(db, clock=clock).make_available(agent_id).call

    threads = [threading.Thread(target=overflow), threading.Thread(target=come_back)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return outcome["overflowed"], outcome["taken"]  # type: ignore[return-value]


def test_a_caller_overflowing_as_an_agent_takes_them_ends_in_exactly_one_place(local_db):
    clock, rng = ManualClock(), random.Random(11)
    router = CallCenter(local_db, clock=clock)
    router.lines.put({"line_id": "vip", "name": "VIP", "max_wait_seconds": 60, "overflow": {"end": "voicemail"}})
    ended = taken = 0
    for n in range(PAIRS):
        call, _ = router.create_call({"language": "French", "gender": "X"}, line="vip")
        assert call.status == CallStatus.WAITING
        agent = router.agents.create(f"Agent {n}", {"language": ["French"], "gender": ["X"]})
        clock.advance(61)

        overflowed, took = race(local_db, clock, agent.agent_id, rng.uniform(-0.04, 0.02))

        final = router.get_call(call.call_id)
        now_agent = router.agents.get(agent.agent_id)
        if took is not None:
            assert overflowed == [], f"pair {n}: taken and overflowed"
            assert final.status == CallStatus.ASSIGNED and final.agent_id == agent.agent_id
            assert final.overflowed == []
            taken += 1
            router.release(agent.agent_id, then="offline")
        else:
            assert [c.call_id for c in overflowed] == [call.call_id]
            assert final.status == CallStatus.OVERFLOWED and final.end_reason == "voicemail"
            assert now_agent.status == AgentStatus.QUEUED
            ended += 1
            router.log_off(agent.agent_id)
        assert router.line.on_line(["vip"]) == {"vip": 0}
    print(f"{ended} overflowed, {taken} taken")
    assert ended > 0 and taken > 0  # both orders came up: each outcome was checked
    assert router.line.count_waiting() == (0, False)
    assert [str(v) for v in invariants.find_violations(local_db, router.catalog)] == []
