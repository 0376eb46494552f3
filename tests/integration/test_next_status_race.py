"""The agent's side raced on DynamoDB Local (threads: the conditional writes decide). A
break asked for while the call ends, many times over: each pair ends in one of the two orders, never half of each.
Asked first (202), the agent goes not ready with the reason when the call ends, whatever
the ending said; the call ended first, the request is refused as stale (409) and the agent
went where the ending said. No agent keeps a next status once off the call. And a wrap-up
past its limit ended by the escalation loop while someone makes the agent available by
hand: the agent is made available once, by one of the two. One pair in four runs each
order one after the other, so that a machine too loaded for the races to fall both ways
still checks both outcomes."""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta

import pytest

from queues_app.agents.records import AgentStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.ddb.clock import now
from queues_app.monitoring import invariants

pytestmark = pytest.mark.integration

PAIRS = 24


def both(first, second, delay: float | None) -> tuple[object, object]:
    """What `first` and `second` return, run at the same moment in two threads (`first`
    `delay` seconds later); a Conflict either meets is what it returns. `delay` None: one
    after the other, in the order of the pair's number (so that both orders come up
    whatever the machine's load does to the races)."""
    found: list[object] = [None, None]

    def run(index, work, pause):
        if start is not None:
            start.wait()
        time.sleep(pause)
        try:
            found[index] = work()
        except errors.Conflict as exc:
            found[index] = exc

    if delay is None or delay < 0:
        order = [(0, first), (1, second)] if delay is None else [(1, second), (0, first)]
        start = None
        for index, work in order:
            run(index, work, 0.0)
        return found[0], found[1]
    start = threading.Barrier(2)

    threads = [threading.Thread(target=run, args=(0, first, delay)), threading.Thread(target=run, args=(1, second, 0))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return found[0], found[1]


def lead(rng: random.Random, n: int, longest: float) -> float | None:
    """How much later the first of a pair starts: for one pair in four it runs alone
    before the other (None), for one in four after it (-1); the rest race."""
    return {0: None, 1: -1.0}.get(n % 4, rng.uniform(0, longest))


def race(db, agent_id: str, call_id: str, version: int, delay: float | None) -> tuple[object, object]:
    return both(
        lambda: CallCenter(db).set_not_ready(agent_id, "break", expected_version=version),
        lambda: CallCenter(db).release(agent_id, "queue", call_id=call_id),
        delay,
    )


def on_a_call(centre: CallCenter, n: int):
    """A new agent, given a new caller: the agent and the call."""
    agent = centre.agents.create(f"Agent {n}", {"language": ["French"], "gender": ["X"]})
    centre.make_available(agent.agent_id)
    call, _ = centre.create_call({"language": "French"})
    assert call.agent_id == agent.agent_id
    return agent, call


def test_a_break_asked_as_the_call_ends_is_taken_in_one_order_or_the_other(local_db):
    centre = CallCenter(local_db)
    rng = random.Random(11)
    first = {"break": 0, "end": 0}
    for n in range(PAIRS):
        agent, call = on_a_call(centre, n)
        on_call = centre.agents.get(agent.agent_id)
        asked, ended = race(local_db, agent.agent_id, call.call_id, on_call.version, lead(rng, n, 0.012))
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


def test_a_wrap_up_limit_and_a_make_available_at_the_same_moment_make_the_agent_available_once(local_db, settings):
    settings.WRAP_UP_SECONDS = 30
    past = CallCenter(local_db, clock=lambda: now() - timedelta(seconds=60))  # so the limit has passed
    centre = CallCenter(local_db)
    rng = random.Random(5)
    by = {"limit": 0, "hand": 0}
    for n in range(PAIRS):
        agent, call = on_a_call(past, n)
        past.release(agent.agent_id, "wrap_up", call_id=call.call_id)
        seen = centre.agents.get(agent.agent_id)
        # The pass reads more than the make-available does: it starts first, by a varying lead.
        by_hand, passes = both(
            lambda agent_id=agent.agent_id, version=seen.version: CallCenter(local_db).make_available(
                agent_id, expected_version=version
            ),
            lambda: CallCenter(local_db).end_overdue_wrap_ups(),
            lead(rng, n, 0.05),
        )
        after = centre.agents.get(agent.agent_id)
        assert (after.status, after.version) == (AgentStatus.QUEUED, seen.version + 1), (n, after)  # queued once
        mine = [o for o in passes if o.agent.agent_id == agent.agent_id]
        assert len(mine) + (not by_hand.replayed) == 1, (n, mine, by_hand)
        by["limit" if mine else "hand"] += 1
        centre.log_off(agent.agent_id)
    print(by)
    assert by["limit"] and by["hand"]
    assert [str(v) for v in invariants.find_violations(local_db, centre.catalog)] == []
