"""Deliveries are signed as the Standard Webhooks specification says, and checked here with
its own library (`standardwebhooks`), as a receiver would: standard secrets, rotation with
both signatures during the overlap, and secrets from before that keep working until
rotated. The receiver is a real local HTTP server."""

from __future__ import annotations

import base64
import hashlib
import hmac
import importlib
import json
import secrets
import threading
from datetime import timedelta

import pytest
from django.apps import apps
from django.utils.dateparse import parse_datetime
from standardwebhooks import Webhook, WebhookVerificationError

from queues_app.centre.call_center import CallCenter
from queues_app.models import ApiToken
from queues_app.shipments.queue import ShipmentQueue
from queues_app.webhooks import signing
from queues_app.webhooks.delivery import Deliverer
from queues_app.webhooks.events import CALLBACK_QUEUE
from tests.helpers.api import Api, assert_problem
from tests.helpers.receiver import Receiver


@pytest.fixture
def issued(supervisor, settings):
    settings.SWITCHBOARD_CALLBACK_ALLOW_HTTP = True
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # the receiver is on this machine
    return ApiToken.issue(supervisor, "phone system")


@pytest.fixture
def receiver():
    with Receiver() as running:
        yield running


def put_callback(raw_token: str, body: dict):
    return Api(raw_token).client.put(
        "/api/callback",
        data=json.dumps(body),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {raw_token}",
    )


def deliver_one(moto_db, token: ApiToken, receiver: Receiver) -> tuple[dict, bytes]:
    """A call event of `token`, delivered by the callback worker's deliverer; what arrived."""
    router = CallCenter(moto_db)
    call, _ = router.create_call({"language": "French", "gender": "X"}, callback=str(token.pk))
    router.abandon(call.call_id)
    queue = ShipmentQueue(moto_db)
    [shipment] = [
        s
        for s in queue.list_queue(CALLBACK_QUEUE, limit=100).items
        if s.data["event"]["call"]["call_id"] == call.call_id
    ]
    Deliverer(ApiToken.callback_of)(shipment, threading.Event())
    headers, body, _ = receiver.received[-1]
    return headers, body


def test_a_new_secret_is_a_standard_one_the_library_reads_as_we_sign():
    for _ in range(200):
        secret = signing.new_secret()
        assert secret.startswith("whsec_")
        key = base64.b64decode(secret.removeprefix("whsec_"), validate=True)
        assert len(key) == 32
        headers = signing.signed_headers([signing.SigningSecret(secret)], b'{"id":"ev1"}', "ev1")
        assert Webhook(secret).verify(b'{"id":"ev1"}', headers) == {"id": "ev1"}


def test_a_delivery_verifies_with_the_standardwebhooks_library(moto_db, db, issued, receiver):
    secret = put_callback(issued[1], {"url": receiver.url}).json()["secret"]

    headers, body = deliver_one(moto_db, issued[0], receiver)

    event = Webhook(secret).verify(body, headers)
    assert event["type"] == "call.abandoned"
    assert headers["webhook-id"] == event["id"]
    assert headers["webhook-signature"].startswith("v1,") and " " not in headers["webhook-signature"]
    assert not any(name.startswith("Switchboard-") for name in headers)  # a standard secret: standard headers only
    with pytest.raises(WebhookVerificationError):
        Webhook(secret).verify(body.replace(b"abandoned", b"assigned_"), headers)
    with pytest.raises(WebhookVerificationError):
        Webhook(signing.new_secret()).verify(body, headers)


def test_a_given_secret_must_be_a_standard_one(moto_db, db, issued):
    mine = "whsec_" + base64.b64encode(secrets.token_bytes(24)).decode()
    assert put_callback(issued[1], {"url": "https://phones.example.com/", "secret": mine}).json()["secret"] == mine
    for wrong in (
        "x" * 20,
        "whsec_" + secrets.token_urlsafe(32),  # what Switchboard made before: not base64
        "whsec_" + base64.b64encode(secrets.token_bytes(16)).decode(),  # too short a key
    ):
        problem = assert_problem(put_callback(issued[1], {"url": "https://phones.example.com/", "secret": wrong}), 400)
        assert "secret" in problem["fields"]


def test_during_a_rotation_every_delivery_verifies_with_either_secret(moto_db, db, issued, receiver):
    old = put_callback(issued[1], {"url": receiver.url}).json()["secret"]
    rotated = put_callback(issued[1], {"url": receiver.url, "rotate": True}).json()
    new = rotated["secret"]
    assert new != old

    headers, body = deliver_one(moto_db, issued[0], receiver)

    assert len(headers["webhook-signature"].split(" ")) == 2
    assert Webhook(old).verify(body, headers) == Webhook(new).verify(body, headers)
    issued[0].refresh_from_db()
    until = issued[0].callback_previous_until
    assert parse_datetime(rotated["previous_secret_until"]) == until
    assert until - issued[0].created >= timedelta(hours=24) - timedelta(minutes=1)  # the default overlap
    # Once the overlap is over only the new secret signs.
    assert [s.secret for s in issued[0].signing_secrets(moment=until)] == [new]


def test_after_the_overlap_the_old_secret_no_longer_verifies(moto_db, db, issued, receiver, settings):
    settings.SWITCHBOARD_CALLBACK_SECRET_OVERLAP = timedelta(0)
    old = put_callback(issued[1], {"url": receiver.url}).json()["secret"]
    new = put_callback(issued[1], {"url": receiver.url, "rotate": True}).json()["secret"]

    headers, body = deliver_one(moto_db, issued[0], receiver)

    assert Webhook(new).verify(body, headers)["type"] == "call.abandoned"
    with pytest.raises(WebhookVerificationError):
        Webhook(old).verify(body, headers)


def test_a_secret_from_before_keeps_working_until_its_first_rotation(moto_db, db, issued, receiver):
    legacy = "whsec_" + secrets.token_urlsafe(32)  # as Switchboard made them before
    token = issued[0]
    ApiToken.objects.filter(pk=token.pk).update(callback_url=receiver.url, callback_secret=legacy)
    importlib.import_module("queues_app.migrations.0007_apitoken_callback_rotation").mark_legacy(apps, None)

    headers, body = deliver_one(moto_db, token, receiver)

    # The old headers, as receivers written for them check them, and the standard ones with its bytes as the key.
    stamp = headers["Switchboard-Timestamp"]
    expected = hmac.new(legacy.encode(), stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    assert headers["Switchboard-Signature"] == "v1=" + expected
    assert Webhook(legacy.encode()).verify(body, headers)["type"] == "call.abandoned"

    new = put_callback(issued[1], {"url": receiver.url, "rotate": True}).json()["secret"]
    headers, body = deliver_one(moto_db, token, receiver)

    assert Webhook(new).verify(body, headers)["type"] == "call.abandoned"
    assert Webhook(legacy.encode()).verify(body, headers)  # during the overlap, the old one too
    assert "Switchboard-Signature" in headers


def test_the_documented_receiver_accepts_a_delivery_and_refuses_a_changed_one(moto_db, db, issued, receiver):
    """docs/callbacks.md's receiver, run as written, with the secret the API answered."""
    from pathlib import Path

    secret = put_callback(issued[1], {"url": receiver.url}).json()["secret"]
    text = (Path(__file__).resolve().parents[2] / "docs" / "callbacks.md").read_text()
    snippet = text.split("```python\n", 1)[1].split("```", 1)[0].replace('"whsec_..."', repr(secret))
    scope: dict = {}
    exec(snippet, scope)

    headers, body = deliver_one(moto_db, issued[0], receiver)

    assert scope["verified_event"](headers, body)["type"] == "call.abandoned"
    assert scope["verified_event"](headers, body + b" ") is None
