"""Agent events: a callback that asks for them hears of every change of every agent's
status (`agent.status_changed`: from, to, reason, at, version), whoever made it, written
in the change's own transaction; `agent.disconnected` when presence took an agent out."""

from __future__ import annotations

from datetime import timedelta

import pytest

from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import now
from queues_app.figures import facts
from queues_app.models import ApiToken
from queues_app.operations import Operations
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.records import Shipment
from queues_app.webhooks.delivery import Deliverer
from queues_app.webhooks.events import CALLBACK_QUEUE, listen

FRENCH = {"language": ["French"], "gender": ["F"]}


def agent_events(db, agent_id: str | None = None) -> list[dict]:
    """The callback queue's agent events (of one agent), in the agent's order (version)."""
    page = ShipmentQueue(db).list_queue(CALLBACK_QUEUE, limit=200)
    found = [s.data["event"] for s in page.items if s.data["event"]["type"].startswith("agent.")]
    found = [e for e in found if agent_id is None or e["agent"]["agent_id"] == agent_id]
    return sorted(found, key=lambda e: (e["version"] or 0, e["at"], e["type"]))


def status_facts(db) -> list[dict]:
    return [
        item
        for partition in facts.partitions()
        for item in db.partition_items(db.table("metrics"), partition)
        if item["kind"] == facts.STATUS
    ]


def test_a_callback_asks_for_agent_events_and_hears_every_change_whoever_made_it(moto_db, api, supervisor, clock):
    registered = api.put("/api/callback", {"url": "https://phones.example.com/events", "agents": True}).json()
    assert registered["agents"] is True and "agent.status_changed" in registered["events"]
    centre = CallCenter(clock=clock)
    ana = api.post("/api/agents", {"name": "Ana", "skills": FRENCH}).json()
    api.post(f"/api/agents/{ana['agent_id']}/available", {"version": 1})  # the phone system
    call, _ = centre.create_call({"language": "French"})  # the matcher
    centre.release(ana["agent_id"], "wrap_up", call_id=call.call_id)  # the agent's client
    Operations("sam", "web").make_available(ana["agent_id"])  # a supervisor on a page
    Operations("sam", "web").set_not_ready(ana["agent_id"], "lunch")
    centre.log_off(ana["agent_id"])

    told = agent_events(moto_db, ana["agent_id"])
    steps = [(e["from"], e["to"], e["reason"]) for e in told]
    assert steps == [
        ("offline", "queued", None),
        ("queued", "attending", None),
        ("attending", "wrap_up", None),
        ("wrap_up", "queued", None),
        ("queued", "not_ready", "lunch"),
        ("not_ready", "offline", None),
    ]
    assert [e["version"] for e in told] == list(range(2, 8))  # one version each, in order
    assert Agents().get(ana["agent_id"]).version == 7
    assert told[1]["call_id"] == call.call_id and all(e["type"] == "agent.status_changed" for e in told)
    assert len({e["id"] for e in told}) == 6
    # The fact of each change is written with it, whether or not anybody listens.
    assert len([f for f in status_facts(moto_db) if f["agent_id"] == ana["agent_id"]]) == 6


def test_without_asking_a_callback_hears_no_agent_events(moto_db, api, clock):
    api.put("/api/callback", {"url": "https://phones.example.com/events"})
    assert api.get("/api/callback").json()["agents"] is False
    ana = api.post("/api/agents", {"name": "Ana", "skills": FRENCH}).json()
    api.post(f"/api/agents/{ana['agent_id']}/available", {"version": 1})
    assert agent_events(moto_db) == []
    assert len(status_facts(moto_db)) == 1


def test_a_disconnection_tells_both_events_in_one_transaction(moto_db, settings):
    settings.AGENT_PRESENCE_SECONDS = 30
    listen(moto_db, 5, True)
    agent = Agents().create("Ana", FRENCH)
    CallCenter(clock=lambda: now() - timedelta(seconds=90)).make_available(agent.agent_id)
    CallCenter().disconnect_absent()
    told = agent_events(moto_db, agent.agent_id)
    assert [(e["type"], e["to"], e["reason"]) for e in told[-2:]] == [
        ("agent.disconnected", "not_ready", "disconnected"),
        ("agent.status_changed", "not_ready", "disconnected"),
    ]
    assert told[-1]["version"] == told[-2]["version"] == 3


def test_an_event_for_a_token_that_stopped_listening_is_dropped_not_retried(moto_db, supervisor):
    token, _ = ApiToken.issue(supervisor, "workforce tool")
    event = {"id": "ev1", "type": "agent.status_changed", "agent": {"agent_id": "a1", "name": "Ana"}}
    shipment = Shipment(shipment_id="s1", data={"event": event, "token": token.pk}, status="in_flight")
    Deliverer(ApiToken.callback_of)(shipment, None)  # no callback: completed, nothing owed
    call_event = Shipment("s2", {"event": {"id": "ev2", "type": "call.assigned"}, "token": token.pk}, "in_flight")
    with pytest.raises(Exception, match="has no callback"):
        Deliverer(ApiToken.callback_of)(call_event, None)


def test_removing_the_callback_stops_agent_events(moto_db, api):
    api.put("/api/callback", {"url": "https://phones.example.com/events", "agents": True})
    api.delete("/api/callback")
    ana = api.post("/api/agents", {"name": "Ana", "skills": FRENCH}).json()
    api.post(f"/api/agents/{ana['agent_id']}/available", {"version": 1})
    assert agent_events(moto_db) == []


def test_a_queue_message_written_before_versions_were_kept_still_tells_the_change(moto_db, clock):
    listen(moto_db, 5, True)
    centre = CallCenter(clock=clock)
    agent = Agents().create("Ana", FRENCH)
    centre.make_available(agent.agent_id)
    table = moto_db.table("callcenter")
    messages = [
        item
        for page in moto_db.pages("scan", TableName=table)
        for item in page.get("Items", [])
        if item.get("agent_id", {}).get("S") == agent.agent_id and item.get("type", {}).get("S") == "message"
    ]
    assert messages and all("v" in message for message in messages)
    for message in messages:  # as an earlier version wrote them
        moto_db.call(
            "update_item", TableName=table, Key={"pk": message["pk"], "sk": message["sk"]}, UpdateExpression="REMOVE v"
        )
    call, _ = centre.create_call({"language": "French"})
    assert call.agent_id == agent.agent_id
    taken = agent_events(moto_db, agent.agent_id)
    assert [(e["from"], e["to"], e["version"]) for e in taken if e["to"] == "attending"] == [
        ("queued", "attending", None)
    ]


def test_asking_for_agent_events_takes_true_or_false_only(moto_db, api):
    from tests.helpers.api import assert_problem

    refused = assert_problem(
        api.put("/api/callback", {"url": "https://phones.example.com/events", "agents": "yes"}), 400
    )
    assert "agents" in str(refused)
    assert api.get("/api/callback").json()["url"] is None  # nothing registered


def test_the_openapi_document_describes_both_events_and_an_agent_event_fits_it(moto_db, api, clock):
    from jsonschema import Draft202012Validator

    from queues_app.event_names import AGENT_EVENTS, CALL_EVENTS

    document = api.get("/api/openapi.json").json()
    schemas = document["components"]["schemas"]
    assert set(document["webhooks"]) == {"callEvent", "agentEvent"}
    assert set(schemas["CallEventOut"]["properties"]["type"]["enum"]) == set(CALL_EVENTS)
    assert set(schemas["AgentEventOut"]["properties"]["type"]["enum"]) == set(AGENT_EVENTS)
    listen(moto_db, 5, True)
    agent = Agents().create("Ana", FRENCH)
    CallCenter(clock=clock).make_available(agent.agent_id)
    [event] = agent_events(moto_db, agent.agent_id)
    validator = Draft202012Validator({**schemas["AgentEventOut"], "components": {"schemas": schemas}})
    assert list(validator.iter_errors(event)) == []
