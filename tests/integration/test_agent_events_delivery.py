"""Agent events end to end on DynamoDB Local: a token's callback that asked for them hears
of an agent's day (made available by the phone system, given a caller by the matcher,
released to wrap-up, made available by a supervisor, not ready, logged off) through the
callback worker, each change exactly once, signed, and in the agent's order by version,
through a receiver that answers 500 to its first two events once."""

from __future__ import annotations

import json
import threading
import time

import pytest
from standardwebhooks import Webhook

from queues_app.centre.call_center import CallCenter
from queues_app.models import ApiToken
from queues_app.operations import Operations
from queues_app.operations.system import RecordedShipmentQueue
from queues_app.shipments.records import RetryPolicy
from queues_app.shipments.worker import ShipmentWorker
from queues_app.webhooks.delivery import Deliverer
from queues_app.webhooks.events import CALLBACK_QUEUE, listen
from tests.helpers.receiver import Receiver

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_an_agents_changes_reach_the_callback_once_each_in_order(local_db, settings, django_user_model):
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    settings.SWITCHBOARD_CALLBACK_RETRY = {"max_receives": 20, "backoff_base_seconds": 0.05, "backoff_max_seconds": 0.2}
    refused: set[str] = set()

    def answer(event: dict) -> int:
        if len(refused) < 2 and event["id"] not in refused:
            refused.add(event["id"])
            return 500
        return 204

    with Receiver(answer) as receiver:
        token = ApiToken.issue(django_user_model.objects.create_user("wfm"), "workforce tool")[0]
        secret = token.set_callback(receiver.url, agents=True)
        listen(local_db, token.pk, True)
        centre = CallCenter(local_db)
        ana = centre.agents.create("Ana", {"language": ["French"], "gender": ["F"]})
        centre.make_available(ana.agent_id)
        call, _ = centre.create_call({"language": "French"})
        centre.release(ana.agent_id, "wrap_up", call_id=call.call_id)
        Operations("sam", "web", db=local_db).make_available(ana.agent_id)
        centre.set_not_ready(ana.agent_id, "lunch")
        centre.log_off(ana.agent_id)
        final = centre.agents.get(ana.agent_id)

        events = RecordedShipmentQueue(local_db, retry=RetryPolicy.from_settings("SWITCHBOARD_CALLBACK_RETRY"))
        worker = ShipmentWorker(
            events, Deliverer(ApiToken.callback_of), queue_name=CALLBACK_QUEUE, visibility_timeout=5, idle_sleep=0.05
        )
        running = threading.Thread(target=worker.run)
        running.start()
        deadline = time.monotonic() + 60
        while len({e["id"] for e in receiver.events(204)}) < final.version - 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        worker.stop()
        running.join(timeout=30)

    delivered = receiver.events(204)
    assert len(delivered) == len({e["id"] for e in delivered}) == final.version - 1 == 6  # once each
    told = sorted(delivered, key=lambda e: e["version"])
    assert [(e["from"], e["to"]) for e in told] == [
        ("offline", "queued"),
        ("queued", "attending"),
        ("attending", "wrap_up"),
        ("wrap_up", "queued"),
        ("queued", "not_ready"),
        ("not_ready", "offline"),
    ]
    assert refused <= {e["id"] for e in delivered}  # the two refused came again, with the same id
    for headers, body, _ in receiver.received:
        assert Webhook(secret).verify(body, headers)["id"] == json.loads(body)["id"]
    assert events.counts(CALLBACK_QUEUE).dlq == 0
