"""An offered call answered at the very moment its offer runs out, from two processes,
many times, on DynamoDB Local: every call ends in exactly one of the two, answered or
back in line, never both and never neither."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from queues_app.agents.records import MISSED, AgentStatus
from queues_app.calls.records import CallStatus
from queues_app.centre import keys
from queues_app.centre.call_center import CallCenter

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNS = 40
STEP = 0.08  # seconds between two runs: each side's request takes a few milliseconds


def test_an_answer_and_a_timeout_at_the_same_moment_end_in_exactly_one(local_db, settings, tmp_path):
    settings.ANSWER_TIMEOUT_SECONDS = 0.01  # every offer has run out by the time the race starts
    center = CallCenter(local_db)
    offers = []
    for n in range(RUNS):
        agent = center.agents.create(f"Agent {n}", {"language": ["English"], "gender": ["F"]})
        center.make_available(agent.agent_id)
        call, _ = center.create_call({"language": "English", "gender": "F"})
        assert call.agent_id == agent.agent_id and call.offer_sk
        offers.append({"call_id": call.call_id, "offer_sk": call.offer_sk, "agent_id": agent.agent_id})
    path = tmp_path / "offers.json"
    path.write_text(json.dumps(offers))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DYNAMODB_ENDPOINT_URL": settings.DYNAMODB_ENDPOINT_URL,
        "DYNAMODB_TABLE_PREFIX": settings.DYNAMODB_TABLE_PREFIX,
    }
    start = time.time() + 6  # both processes are up and connected by then (Django starts in 2-3 s)
    sides = {
        side: subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.offer_race", side, str(start), str(STEP), str(path)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for side in ("answer", "miss")
    }
    results = {}
    for side, process in sides.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-3000:]
        results[side] = json.loads(out)

    answered = missed = 0
    for offer in offers:
        call_id = offer["call_id"]
        call = center.get_call(call_id)
        agent = center.agents.get(offer["agent_id"])
        won = (results["answer"][call_id], results["miss"][call_id])
        assert won in (("won", "lost"), ("lost", "won")), f"{call_id}: {won}"
        missed_legs = [leg for leg in call.legs if leg["how"] == "missed"]
        if won[0] == "won":
            answered += 1
            assert call.status == CallStatus.ASSIGNED and call.answered_at and not missed_legs
            assert agent.status == AgentStatus.ATTENDING and agent.call_id == call_id
        else:
            missed += 1
            assert call.status == CallStatus.WAITING and call.answered_at is None and len(missed_legs) == 1
            assert (agent.status, agent.reason) == (AgentStatus.NOT_READY, MISSED)
    left = [
        item for pk in keys.offer_partitions() for item in local_db.partition_items(local_db.table("callcenter"), pk)
    ]
    print(f"{RUNS} runs: {answered} answered, {missed} missed, 0 both, 0 neither; {len(left)} offers left")
    assert answered + missed == RUNS and not left
    assert answered and missed  # both orders came up: each outcome was checked
