"""Callbacks reach only the public internet: addresses inside the network are refused when
a callback is registered and again when an event is delivered, on the address actually
connected to; CALLBACK_ALLOWED_NETWORKS lets an operator allow an internal receiver;
redirects are not followed. The receivers are real local HTTP servers."""

from __future__ import annotations

import json

import pytest

from queues_app.centre.call_center import CallCenter
from queues_app.models import ApiToken
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.worker import ShipmentWorker
from queues_app.webhooks.delivery import Deliverer
from queues_app.webhooks.destinations import refusal, url_refusal
from queues_app.webhooks.events import CALLBACK_QUEUE
from tests.helpers.api import Api, assert_problem
from tests.helpers.receiver import Receiver

LOOPBACK = ["127.0.0.0/8"]


@pytest.fixture
def issued(supervisor, settings):
    settings.SWITCHBOARD_CALLBACK_ALLOW_HTTP = True  # what is refused here is the address, not the scheme
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = []
    return ApiToken.issue(supervisor, "phone system")


def register(raw_token: str, url: str):
    return Api(raw_token).client.put(
        "/api/callback",
        data=json.dumps({"url": url}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw_token}",
    )


# --- registration ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),  # the cloud metadata address
        ("http://10.0.0.1/", "private"),
        ("http://172.16.5.4/", "private"),
        ("http://192.168.1.1/", "private"),
        ("http://127.0.0.1:9/x", "loopback"),
        ("http://localhost:8077/", "localhost resolves to 127.0.0.1: 127.0.0.1 is a loopback"),
        ("http://[::1]/", "loopback"),
        ("http://0.0.0.0/", "unspecified"),
        ("http://[::]/", "unspecified"),
        ("http://[fe80::1]/", "link-local"),
        ("http://[fd00::1]/", "private"),  # unique-local
        ("http://224.0.0.1/", "multicast"),
        ("http://[ff02::1]/", "multicast"),
        ("http://240.0.0.1/", "reserved"),
        ("http://100.64.0.1/", "reserved"),  # carrier-grade NAT: not global
        ("http://[::ffff:127.0.0.1]/", "loopback"),  # IPv4-mapped
        ("http://[64:ff9b::a9fe:a9fe]/", "link-local"),  # NAT64 of 169.254.169.254
    ],
)
def test_a_callback_inside_the_network_is_refused_at_registration(moto_db, db, issued, url, why):
    answer = register(issued[1], url)

    problem = assert_problem(answer, 400)
    assert problem["fields"]["url"].startswith("refused: ")
    assert why in problem["fields"]["url"]
    issued[0].refresh_from_db()
    assert issued[0].callback_url == ""


def test_a_public_address_is_registered(moto_db, db, issued):
    answer = register(issued[1], "http://93.184.215.14/events")
    assert answer.status_code == 200, answer.content


def test_an_allowed_network_lets_an_internal_receiver_register(moto_db, db, issued, settings):
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = LOOPBACK + ["10.20.0.0/16"]

    assert register(issued[1], "http://127.0.0.1:8077/events").status_code == 200
    assert register(issued[1], "http://10.20.3.4/events").status_code == 200
    assert_problem(register(issued[1], "http://10.21.3.4/events"), 400)  # outside what is allowed


@pytest.mark.parametrize(
    ("address", "allowed"),
    [
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
        ("169.254.169.254", False),
        ("fe80::1%eth0", False),  # with a zone
        ("::ffff:10.0.0.1", False),
        ("192.0.2.1", False),  # documentation range
        ("255.255.255.255", False),
        ("not an address", False),
    ],
)
def test_each_address_is_judged_by_what_it_reaches(settings, address, allowed):
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = []
    assert (refusal(address) is None) is allowed


def test_a_name_that_does_not_resolve_is_left_to_the_delivery(settings):
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = []
    assert url_refusal("https://phones.invalid/events") is None


# --- delivery -------------------------------------------------------------------------------


def one_event(moto_db, token: ApiToken) -> str:
    router = CallCenter(moto_db)
    call, _ = router.create_call({"language": "French", "gender": "X"}, callback=str(token.pk))
    router.abandon(call.call_id)
    [shipment] = ShipmentQueue(moto_db).list_queue(CALLBACK_QUEUE).items
    return shipment.shipment_id


def deliver_once(moto_db, shipment_id: str):
    """One attempt by the callback worker; the event as the callbacks queue then shows it.
    (The worker reads the token from its own thread: the tests that call it use
    `transactional_db`, so that thread sees the token.)"""
    queue = ShipmentQueue(moto_db)
    ShipmentWorker(queue, Deliverer(ApiToken.callback_of), queue_name=CALLBACK_QUEUE, idle_sleep=0.01).run(
        max_shipments=1
    )
    return queue.get(shipment_id)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_delivery_to_an_address_no_longer_allowed_fails_with_its_reason(
    moto_db, transactional_db, issued, settings, host
):
    """Registered while loopback was allowed; the allowance is withdrawn before delivery (as a
    name that resolved outside at registration may resolve inside later): the worker does
    not connect, and the callbacks queue says why."""
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = LOOPBACK
    with Receiver() as receiver:
        url = receiver.url.replace("127.0.0.1", host)
        assert register(issued[1], url).status_code == 200
        shipment_id = one_event(moto_db, issued[0])
        settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = []

        event = deliver_once(moto_db, shipment_id)

    assert receiver.received == []
    [failure] = event.failure_reasons
    assert "refused to connect" in failure["reason"]
    assert "127.0.0.1 is a loopback address" in failure["reason"]


def test_a_delivery_to_an_allowed_network_is_made(moto_db, transactional_db, issued, settings):
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = LOOPBACK
    with Receiver() as receiver:
        assert register(issued[1], receiver.url).status_code == 200
        shipment_id = one_event(moto_db, issued[0])

        event = deliver_once(moto_db, shipment_id)

    assert [e["id"] for e in receiver.events(204)] == [shipment_id]
    assert event.failure_reasons == []


def test_a_redirect_is_not_followed(moto_db, transactional_db, issued, settings):
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = LOOPBACK
    with Receiver() as inside, Receiver(lambda event: 302, redirect_to=inside.url) as receiver:
        assert register(issued[1], receiver.url).status_code == 200
        shipment_id = one_event(moto_db, issued[0])

        event = deliver_once(moto_db, shipment_id)

    assert len(receiver.received) == 1
    assert inside.received == []
    assert "answered 302" in event.failure_reasons[0]["reason"]
