"""Assignment callbacks on moto: the token's registration through the API, the events
written with the change they tell of, their signature, and one delivery attempt."""

from __future__ import annotations

import json
import threading

import httpx
import pytest
from standardwebhooks import Webhook

from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.models import ApiToken
from queues_app.routing.escalation import EscalationPolicy
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.worker import HandlerFailed
from queues_app.webhooks.delivery import Deliverer
from queues_app.webhooks.events import CALLBACK_QUEUE, event_id
from tests.helpers.api import Api, assert_problem

FRENCH_X = {"language": "French", "gender": "X"}


@pytest.fixture
def issued(supervisor):
    return ApiToken.issue(supervisor, "phone system")


def events(db) -> list[dict]:
    """The callback queue's events, oldest first."""
    page = ShipmentQueue(db).list_queue(CALLBACK_QUEUE, limit=100)
    return [s.data["event"] for s in sorted(page.items, key=lambda s: s.created_at)]


# --- registration -------------------------------------------------------------------------


def test_a_token_registers_reads_and_removes_its_callback(moto_db, db, issued, settings):
    settings.SWITCHBOARD_CALLBACK_ALLOW_HTTP = False
    api = Api(issued[1])
    assert api.get("/api/callback").json() == {
        "url": None,
        "events": [
            "call.assigned",
            "call.answered",
            "call.missed",
            "call.transferred",
            "call.abandoned",
            "call.relaxed",
            "call.refused",
            "call.overflowed",
            "call.callback_requested",
            "call.callback_due",
            "call.callback_retry",
            "call.callback_failed",
        ],
        "previous_secret_until": None,
        "agents": False,
    }

    answer = api.client.put(
        "/api/callback",
        data=json.dumps({"url": "https://phones.example.com/events"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {issued[1]}",
    )
    assert answer.status_code == 200, answer.content
    secret = answer.json()["secret"]
    assert secret.startswith("whsec_") and len(secret) > 30
    assert api.get("/api/callback").json()["url"] == "https://phones.example.com/events"
    assert "secret" not in api.get("/api/callback").json()  # shown once

    gone = api.client.delete("/api/callback", HTTP_AUTHORIZATION=f"Bearer {issued[1]}")
    assert gone.status_code == 200 and gone.json()["url"] is None
    issued[0].refresh_from_db()
    assert (issued[0].callback_url, issued[0].callback_secret) == ("", "")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "http://phones.example.com/events"}, "url"),  # https only here
        ({"url": "not a url"}, "url"),
        ({"url": "https://phones.example.com/", "secret": "short"}, "secret"),
        ({"url": "https://phones.example.com/", "extra": 1}, "extra"),
    ],
)
def test_a_bad_callback_is_refused_with_the_field_named(moto_db, db, issued, settings, body, field):
    settings.SWITCHBOARD_CALLBACK_ALLOW_HTTP = False
    answer = Api(issued[1]).client.put(
        "/api/callback",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {issued[1]}",
    )
    assert field in assert_problem(answer, 400)["fields"]
    issued[0].refresh_from_db()
    assert issued[0].callback_url == ""


def test_a_viewer_token_may_not_register_a_callback(moto_db, db, viewer):
    raw = ApiToken.issue(viewer, "wallboard")[1]
    answer = Api(raw).client.put(
        "/api/callback",
        data=json.dumps({"url": "https://x.example.com/"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw}",
    )
    assert_problem(answer, 403)


# --- events written with the change ---------------------------------------------------------


def test_calls_of_a_token_with_a_callback_tell_of_their_assignment(moto_db, db, issued):
    token, raw = issued
    token.set_callback("https://phones.example.com/events")
    router = CallCenter(moto_db)
    router.make_available(router.agents.create("Ana", {"language": ["French"], "gender": ["X"]}).agent_id)

    created = Api(raw).post("/api/calls", {"preferences": FRENCH_X}).json()

    assert created["status"] == CallStatus.ASSIGNED
    [event] = events(moto_db)
    assert event["type"] == "call.assigned"
    assert event["call"]["call_id"] == created["call_id"]
    assert event["call"]["agent_name"] == "Ana"


def test_calls_of_a_token_without_a_callback_write_no_event(moto_db, db, issued):
    Api(issued[1]).post("/api/calls", {"preferences": FRENCH_X})
    assert events(moto_db) == []


def test_waiting_relaxed_abandoned_and_assigned_each_write_one_event(moto_db, clock):
    router = CallCenter(
        moto_db, clock=clock, escalation=EscalationPolicy(after_seconds=60, order=("gender", "language"))
    )
    kept, _ = router.create_call(FRENCH_X, callback="7")
    left, _ = router.create_call({"language": "English", "gender": "M"}, callback="7")
    silent, _ = router.create_call({"language": "English", "gender": "M"})
    assert events(moto_db) == []  # waiting is what the API's answer said already

    clock.advance(61)
    router.escalate()  # gender relaxed for all three
    router.abandon(left.call_id)
    agent = router.agents.create("Ana", {"language": ["French"], "gender": ["F"]})
    _, taken = router.make_available(agent.agent_id)

    assert taken is not None and taken.call_id == kept.call_id
    told = [(e["type"], e["call"]["call_id"]) for e in events(moto_db)]
    assert sorted(told) == sorted(
        [
            ("call.relaxed", kept.call_id),
            ("call.relaxed", left.call_id),
            ("call.abandoned", left.call_id),
            ("call.assigned", kept.call_id),
        ]
    )
    assert silent.call_id not in {call_id for _, call_id in told}
    relaxed = next(e for e in events(moto_db) if e["type"] == "call.relaxed" and e["call"]["call_id"] == kept.call_id)
    assert relaxed["call"]["preferences"] == {"language": "French", "gender": "any"}
    # Each event's id is the call's and its version's: a redelivery carries the same one.
    assert len({e["id"] for e in events(moto_db)}) == 4


# --- one delivery -----------------------------------------------------------------------------


def delivery(moto_db, token, transport):
    router = CallCenter(moto_db)
    router.create_call(FRENCH_X, callback=str(token.pk))
    router.abandon(router.line.waiting_calls()[0][0]["call_id"])
    [shipment] = ShipmentQueue(moto_db).list_queue(CALLBACK_QUEUE).items
    return Deliverer(ApiToken.callback_of, httpx.Client(transport=transport)), shipment


def test_a_delivery_posts_the_event_signed_and_succeeds_on_2xx(moto_db, db, issued):
    token = issued[0]
    secret = token.set_callback("https://phones.example.com/events")
    seen = []

    def receiver(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    deliver, shipment = delivery(moto_db, token, httpx.MockTransport(receiver))
    deliver(shipment, threading.Event())

    [request] = seen
    assert str(request.url) == "https://phones.example.com/events"
    body = Webhook(secret).verify(request.content, dict(request.headers))  # the specification's library
    assert body["type"] == "call.abandoned"
    assert request.headers["webhook-id"] == body["id"] == shipment.shipment_id


@pytest.mark.parametrize(
    ("answer", "reason"),
    [(httpx.Response(500), "answered 500"), (httpx.Response(302), "answered 302"), (None, "could not reach")],
)
def test_a_delivery_fails_on_anything_but_2xx(moto_db, db, issued, answer, reason):
    token = issued[0]
    token.set_callback("https://phones.example.com/events")

    def receiver(request):
        if answer is None:
            raise httpx.ConnectError("refused", request=request)
        return answer

    deliver, shipment = delivery(moto_db, token, httpx.MockTransport(receiver))
    with pytest.raises(HandlerFailed, match=reason):
        deliver(shipment, threading.Event())


def test_a_delivery_for_a_revoked_token_fails_without_a_request(moto_db, db, issued):
    token = issued[0]
    token.set_callback("https://phones.example.com/events")
    seen = []
    deliver, shipment = delivery(moto_db, token, httpx.MockTransport(lambda r: seen.append(r) or httpx.Response(200)))
    token.revoked = True
    token.save()

    with pytest.raises(HandlerFailed, match="no callback any more"):
        deliver(shipment, threading.Event())
    assert seen == []


def test_event_ids_differ_per_change_and_repeat_for_the_same_one():
    from queues_app.calls.records import Call

    call = Call(call_id="c1", status="assigned", preferences={}, version=2)
    assert event_id("call.assigned", call) == event_id("call.assigned", call)
    assert event_id("call.assigned", call) != event_id("call.abandoned", call)
    assert event_id("call.assigned", call) != event_id("call.assigned", Call("c1", "assigned", {}, version=3))
