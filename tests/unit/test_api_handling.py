"""The phone system's side of not ready, offers and transfers, through the JSON API."""

from datetime import timedelta

import pytest

from queues_app.agents.records import AgentStatus
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import now
from tests.helpers.api import agent, assert_problem


@pytest.fixture
def offers(settings):
    settings.ANSWER_TIMEOUT_SECONDS = 20


def not_ready(api, agent_id, reason, version=None):
    version = api.seen(agent_id)["version"] if version is None else version
    return api.post(f"/api/agents/{agent_id}/not-ready", {"version": version, "reason": reason})


def test_an_agent_set_not_ready_says_why_and_since_when(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    api.available(ana.agent_id)
    response = not_ready(api, ana.agent_id, "lunch")
    assert response.status_code == 200 and response["Idempotent-Replayed"] == "false"
    body = response.json()["agent"]
    assert (body["status"], body["reason"], body["status_label"]) == ("not_ready", "lunch", "Not ready: lunch")
    assert body["status_since"]
    assert all(q["depth"] == 0 for q in api.get("/api/queues").json()["queues"])
    listed = api.get("/api/agents?status=not_ready").json()["agents"]
    assert [a["name"] for a in listed] == ["Ana"]


def test_a_retried_not_ready_is_replayed_and_a_stale_one_refused(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    seen = api.seen(ana.agent_id)["version"]
    assert not_ready(api, ana.agent_id, "break", seen).status_code == 200
    again = not_ready(api, ana.agent_id, "break", seen)
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert_problem(not_ready(api, ana.agent_id, "lunch", seen), 409)


def test_a_reason_not_configured_is_a_400_and_changes_nothing(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    body = assert_problem(not_ready(api, ana.agent_id, "nap"), 400)
    assert "break" in body["message"]
    assert_problem(not_ready(api, ana.agent_id, "missed"), 400)  # the system's own
    assert api.seen(ana.agent_id)["status"] == AgentStatus.OFFLINE


def test_an_offered_call_is_confirmed_once_and_a_late_answer_is_refused(moto_db, api, offers):
    ana = agent("Ana", ["English"], "F")
    api.available(ana.agent_id)
    call = api.post("/api/calls", {"preferences": {}}).json()
    assert call["status"] == "offered" and call["answer_by"] and call["answered_at"] is None
    assert api.seen(ana.agent_id)["status"] == "ringing"
    assert [c["call_id"] for c in api.get("/api/calls?status=offered").json()["calls"]] == [call["call_id"]]
    assert api.get("/api/calls?status=assigned").json()["calls"] == []
    answered = api.post(f"/api/calls/{call['call_id']}/answered")
    assert answered.status_code == 200 and answered.json()["answered_at"] and answered.json()["answer_by"] is None
    assert answered.json()["status"] == "assigned" and api.seen(ana.agent_id)["status"] == "attending"
    assert api.post(f"/api/calls/{call['call_id']}/answered")["Idempotent-Replayed"] == "true"

    api.release(ana.agent_id, "queue")
    late = api.post("/api/calls", {"preferences": {}}).json()
    center = CallCenter(clock=lambda: now() + timedelta(seconds=30))  # the escalation loop, half a minute on
    assert [c.call_id for c in center.miss_expired_offers()] == [late["call_id"]]
    body = assert_problem(api.post(f"/api/calls/{late['call_id']}/answered"), 409)
    assert "not answered in time" in body["message"]
    assert api.seen(ana.agent_id)["reason"] == "missed"
    # Offered to Bea once Ana's offer ran out: Ana's late answer is not taken for Bea's offer.
    bea = agent("Bea", ["English"], "F")
    api.available(bea.agent_id)
    body = assert_problem(api.post(f"/api/calls/{late['call_id']}/answered", {"agent_id": ana.agent_id}), 409)
    assert "is offered to Bea now, not to that agent" in body["message"]
    assert api.seen(bea.agent_id)["status"] == "ringing"
    picked = api.post(f"/api/calls/{late['call_id']}/answered", {"agent_id": bea.agent_id})
    assert picked.status_code == 200 and picked.json()["agent_name"] == "Bea"
    assert_problem(api.post(f"/api/calls/{late['call_id']}/answered", {"agent_id": "x" * 300}), 400)


def test_a_call_is_transferred_to_new_preferences_or_a_named_agent(moto_db, api):
    ana, bea, cid = agent("Ana", ["English"], "F"), agent("Bea", ["French"], "F"), agent("Cid", ["French"], "M")
    for someone in (ana, bea, cid):
        api.available(someone.agent_id)
    call = api.post("/api/calls", {"preferences": {"language": "English"}}).json()
    to_cid = {"agent_id": cid.agent_id, "then": "wrap_up", "from_agent_id": ana.agent_id}
    moved = api.post(f"/api/calls/{call['call_id']}/transfer", to_cid)
    assert moved.status_code == 200, moved.json()
    assert moved["Idempotent-Replayed"] == "false"
    assert moved.json()["agent"]["status"] == AgentStatus.WRAP_UP
    assert moved.json()["call"]["agent_name"] == "Cid"
    assert [leg["agent_name"] for leg in moved.json()["call"]["legs"]] == ["Ana"]
    # The phone system's retry after a timeout: answered as done, the call stays with Cid.
    retried = api.post(f"/api/calls/{call['call_id']}/transfer", to_cid)
    assert retried.status_code == 200 and retried["Idempotent-Replayed"] == "true"
    assert retried.json()["call"]["agent_name"] == "Cid" and len(retried.json()["call"]["legs"]) == 1
    # Another transfer decided on Ana's part, from a stale read: refused, saying where the call is.
    stale = {"preferences": {"language": "Spanish"}, "from_agent_id": ana.agent_id}
    body = assert_problem(api.post(f"/api/calls/{call['call_id']}/transfer", stale), 409)
    assert "with Cid" in body["message"]

    again = api.post(
        f"/api/calls/{call['call_id']}/transfer",
        {"preferences": {"language": "Spanish"}, "from_agent_id": cid.agent_id},
    )
    assert again.status_code == 200
    waiting = again.json()["call"]
    assert (waiting["status"], waiting["arrived_at"]) == (CallStatus.WAITING, call["arrived_at"])
    assert [leg["agent_name"] for leg in waiting["legs"]] == ["Ana", "Cid"]


def test_a_transfer_names_preferences_or_an_agent_and_only_of_a_call_in_progress(moto_db, api):
    ana = agent("Ana", ["English"], "F")
    api.available(ana.agent_id)
    call = api.post("/api/calls", {"preferences": {}}).json()
    ana_id = ana.agent_id
    both = {"preferences": {"language": "English"}, "agent_id": ana_id, "from_agent_id": ana_id}
    assert_problem(api.post(f"/api/calls/{call['call_id']}/transfer", both), 400)
    assert_problem(api.post(f"/api/calls/{call['call_id']}/transfer", {"from_agent_id": ana_id}), 400)
    body = assert_problem(api.post(f"/api/calls/{call['call_id']}/transfer", {"preferences": {}}), 400)
    assert "from_agent_id" in body["fields"]
    klingon = {"preferences": {"language": "Klingon"}, "from_agent_id": ana_id}
    assert_problem(api.post(f"/api/calls/{call['call_id']}/transfer", klingon), 400)
    api.release(ana.agent_id, "offline")
    anyone = {"preferences": {}, "from_agent_id": ana_id}
    assert_problem(api.post(f"/api/calls/{call['call_id']}/transfer", anyone), 409)
    assert_problem(api.post("/api/calls/nope/transfer", anyone), 404)


def test_a_transfer_naming_an_agent_never_on_the_call_says_so_and_moves_nothing(moto_db, api):
    from queues_app.agents.roster import Agents

    ana = Agents().create("Ana", {"language": ["English"], "gender": ["F"]})
    api.available(ana.agent_id)
    call = api.post("/api/calls", {"preferences": {"language": "English"}}).json()
    refused = assert_problem(
        api.post(f"/api/calls/{call['call_id']}/transfer", {"from_agent_id": "typo", "preferences": {}}), 409
    )
    assert "Agent 'typo' was never on call" in refused["message"] and "with Ana" in refused["message"]
    assert api.get(f"/api/calls/{call['call_id']}").json()["agent_id"] == ana.agent_id  # not moved
