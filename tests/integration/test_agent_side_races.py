"""The agent's side raced on DynamoDB Local (threads: the conditional writes decide).

- Presence: the sweep finds a ringing agent's client quiet while the phone system says
  the agent picked up, many times over: each pair ends one way. Picked up first, the
  agent attends the call and stays; disconnected first, the call is back at its place
  and the pick-up is refused. Never both, never neither.
- Agent events: one agent changed from three threads at once (made available, set not
  ready, logged off, each from what the thread read): every change that took effect has
  exactly one `agent.status_changed` event, one version each, and read in version order
  each event starts where the one before ended."""

from __future__ import annotations

import random
import threading
from datetime import timedelta

import pytest

from queues_app.agents.records import AgentStatus
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.ddb.clock import now
from queues_app.shipments.queue import ShipmentQueue
from queues_app.webhooks.events import CALLBACK_QUEUE, listen
from tests.integration.test_next_status_race import both

pytestmark = pytest.mark.integration

PAIRS = 20


def test_a_pick_up_and_a_disconnection_racing_end_one_way(local_db, settings):
    settings.ANSWER_TIMEOUT_SECONDS = 120
    settings.AGENT_PRESENCE_SECONDS = 30
    centre = CallCenter(local_db)
    later = CallCenter(local_db, clock=lambda: now() + timedelta(seconds=60))  # the sweep, a minute on
    rng = random.Random(5)
    won = {"answered": 0, "disconnected": 0}
    for n in range(PAIRS):
        agent = centre.agents.create(f"Agent {n}", {"language": ["French"], "gender": ["X"]})
        centre.make_available(agent.agent_id)
        call, _ = centre.create_call({"language": "French"})
        assert centre.agents.get(agent.agent_id).status == AgentStatus.RINGING
        picked, swept = both(
            lambda call_id=call.call_id: CallCenter(local_db).answered(call_id),
            lambda: later.disconnect_absent(),
            rng.uniform(0, 0.4) if n % 2 else 0.0,  # the sweep reads more first (tens of ms when busy)
        )
        after, call_now = centre.agents.get(agent.agent_id), centre.get_call(call.call_id)
        if isinstance(picked, errors.Conflict):
            won["disconnected"] += 1
            assert [a.agent_id for a, _ in swept] == [agent.agent_id]
            assert (after.status, after.reason) == (AgentStatus.NOT_READY, "disconnected")
            assert (call_now.status, call_now.arrived_at, call_now.answered_at) == (
                CallStatus.WAITING,
                call.arrived_at,
                None,
            )
            centre.abandon(call.call_id)  # the next pair starts with an empty line
        else:
            won["answered"] += 1
            assert swept == []
            assert (after.status, after.call_id) == (AgentStatus.ATTENDING, call.call_id)
            assert call_now.answered_at is not None
            centre.release(agent.agent_id, "offline", call_id=call.call_id)
    assert sum(won.values()) == PAIRS
    assert min(won.values()) > 0, won  # both orders were tried


def test_concurrent_changes_of_one_agent_each_tell_one_event_in_order(local_db):
    listen(local_db, 9, True)
    centre = CallCenter(local_db)
    agent = centre.agents.create("Ana", {"language": ["French"], "gender": ["X"]})
    done = {"changes": 0}
    lock = threading.Lock()

    def churn(seed: int) -> None:
        rng, mine = random.Random(seed), CallCenter(local_db)
        for _ in range(15):
            version = mine.agents.get(agent.agent_id).version
            pick = rng.randrange(3)
            reason = rng.choice(["break", "lunch"])
            try:
                if pick == 0:
                    outcome = mine.make_available(agent.agent_id, expected_version=version)
                elif pick == 1:
                    outcome = mine.set_not_ready(agent.agent_id, reason, expected_version=version)
                else:
                    outcome = mine.log_off(agent.agent_id, expected_version=version)
            except (errors.Conflict, errors.InvalidRequest):
                continue
            if not outcome.replayed:
                with lock:
                    done["changes"] += 1

    threads = [threading.Thread(target=churn, args=(seed,)) for seed in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)

    page = ShipmentQueue(local_db).list_queue(CALLBACK_QUEUE, limit=500)
    told = sorted((s.data["event"] for s in page.items), key=lambda e: e["version"])
    final = centre.agents.get(agent.agent_id)
    assert done["changes"] > 5
    assert len(told) == done["changes"] == final.version - 1
    assert [e["version"] for e in told] == list(range(2, final.version + 1))
    assert told[0]["from"] == "offline" and told[-1]["to"] == final.status
    for before, event in zip(told, told[1:], strict=False):
        assert event["from"] == before["to"], (before, event)
        assert event["from_reason"] == before["reason"]
