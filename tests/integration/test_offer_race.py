"""An offered call answered at the very moment its offer runs out, from two processes,
many times, on DynamoDB Local: every call ends in exactly one of the two, answered or
back in line, never both and never neither. The same for a queued callback's result
against its reservation running out."""

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
STEP = 0.15  # seconds between two runs: a side takes a few milliseconds, up to 100 on a busy machine


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
    results = race("answer", offers, settings, tmp_path)

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
    left = offers_left(local_db)
    print(f"{RUNS} runs: {answered} answered, {missed} missed, 0 both, 0 neither; {len(left)} offers left")
    assert answered + missed == RUNS and not left
    assert answered and missed  # both orders came up: each outcome was checked


def test_a_callback_result_and_the_reservation_running_out_end_in_exactly_one(local_db, settings, tmp_path):
    """A queued callback's agent is reserved while the phone system dials; its result
    (connected or busy) and the reservation's timeout race as an answer and a miss do."""
    center = CallCenter(local_db)
    offers = []
    for n in range(RUNS):
        call, _ = center.create_call({"language": "English", "gender": "F"})
        center.request_callback(call.call_id, f"+336{n:08d}")
        agent = center.agents.create(f"Agent {n}", {"language": ["English"], "gender": ["F"]})
        center.make_available(agent.agent_id)
        due = center.get_call(call.call_id)
        assert due.state == CallStatus.CALLBACK_DUE and due.agent_id == agent.agent_id
        offers.append({"call_id": call.call_id, "offer_sk": due.offer_sk, "agent_id": agent.agent_id})
    results = race("result", offers, settings, tmp_path)

    counted = {"connected": 0, "busy": 0, "missed": 0}
    for n, offer in enumerate(offers):
        call_id = offer["call_id"]
        call, agent = center.get_call(call_id), center.agents.get(offer["agent_id"])
        won = (results["result"][call_id], results["miss"][call_id])
        assert won in (("won", "lost"), ("lost", "won")), f"{call_id}: {won}"
        if won[1] == "won":
            counted["missed"] += 1  # back at its place (where an agent freed by a later busy may take it)
            assert call.state in (CallStatus.CALLBACK_WAITING, CallStatus.CALLBACK_DUE) and not call.callback_results
            assert call.agent_id != agent.agent_id and (agent.status, agent.reason) == (AgentStatus.NOT_READY, MISSED)
        elif n % 2 == 0:
            counted["connected"] += 1
            assert call.status == CallStatus.ASSIGNED and call.answered_at and call.agent_id == agent.agent_id
            assert agent.status == AgentStatus.ATTENDING
        else:
            counted["busy"] += 1
            assert call.status == CallStatus.CALLBACK_RETRY and call.agent_id is None
            assert agent.status != AgentStatus.NOT_READY and agent.call_id != call_id
    # A reservation stands only for a callback due now (one a busy agent freed took up again).
    left = [o for o in offers_left(local_db) if center.get_call(o["call_id"]).offer_sk != o["sk"]]
    print(f"{RUNS} callbacks: {counted}, 0 both, 0 neither; {len(left)} reservations left")
    assert sum(counted.values()) == RUNS and not left
    assert counted["missed"] and counted["connected"] + counted["busy"]  # both orders came up


def offers_left(db) -> list[dict]:
    return [item for pk in keys.offer_partitions() for item in db.partition_items(db.table("callcenter"), pk)]


def race(racer: str, offers: list[dict], settings, tmp_path) -> dict[str, dict[str, str]]:
    """`racer` against the sweep's miss, each in a process of its own, every offer at its moment."""
    path = tmp_path / "offers.json"
    path.write_text(json.dumps(offers))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DYNAMODB_ENDPOINT_URL": settings.DYNAMODB_ENDPOINT_URL,
        "DYNAMODB_TABLE_PREFIX": settings.DYNAMODB_TABLE_PREFIX,
    }
    sides = {
        side: subprocess.Popen(
            [sys.executable, "-m", "tests.helpers.offer_race", side, str(STEP), str(path)],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for side in (racer, "miss")
    }
    for process in sides.values():  # both booted and connected, however long each took on a busy machine
        assert process.stdout is not None and process.stdout.readline().strip() == "ready", process.stderr
    start = time.time() + 0.5
    for process in sides.values():
        assert process.stdin is not None
        process.stdin.write(f"{start}\n")
        process.stdin.flush()
    results = {}
    for name, process in sides.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-3000:]
        results[name] = json.loads(out)
    return results
