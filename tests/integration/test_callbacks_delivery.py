"""Assignment callbacks end to end on DynamoDB Local: calls assigned at once, assigned
from the line, relaxed and abandoned, and abandons racing assignments, each tell the
token's callback exactly once, through a receiver that is down for a while, one that
takes some events but answers 500, and a worker that dies holding an event."""

from __future__ import annotations

import json
import threading
import time

import pytest
from standardwebhooks import Webhook

from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.models import ApiToken
from queues_app.operations.system import RecordedShipmentQueue
from queues_app.routing.escalation import EscalationPolicy
from queues_app.shipments.records import RetryPolicy
from queues_app.shipments.worker import ShipmentWorker
from queues_app.webhooks.delivery import Deliverer
from queues_app.webhooks.events import CALLBACK_QUEUE, event_id
from tests.helpers.races import HangUpRaces
from tests.helpers.receiver import Receiver

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

DOWN_SECONDS = 1.5  # the receiver answers 503 to everything at first, from the first request on
TAKEN_BUT_500 = 5  # then it processes this many events but answers 500 to them once
RACES = 20


def expected_events(router: CallCenter, call_ids: list[str]) -> dict[str, str]:
    """Event id -> type for every change the calls went through, from their final state."""
    found = {}
    for call_id in call_ids:
        call = router.get_call(call_id)
        version = call.version
        if call.status in (CallStatus.ASSIGNED, CallStatus.ABANDONED):
            kind = "call.assigned" if call.status == CallStatus.ASSIGNED else "call.abandoned"
            found[event_id(kind, call)] = kind
            version -= 1
        # Each relaxation moved the version on by one, before the assignment or the abandon.
        for _ in call.relaxed:
            found[event_id("call.relaxed", type(call)(**{**call.__dict__, "version": version}))] = "call.relaxed"
            version -= 1
    return found


def test_every_change_is_delivered_exactly_once_through_outages(local_db, settings, django_user_model, capsys):
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # the receiver is on this machine
    settings.SWITCHBOARD_CALLBACK_RETRY = {
        "max_receives": 100,
        "backoff_base_seconds": 0.05,
        "backoff_max_seconds": 0.4,
    }
    up_at: list[float] = []  # set by the first request: however late the worker's first delivery, it is refused
    failed_once: set[str] = set()

    def answer(event: dict) -> int:
        if not up_at:
            up_at.append(time.monotonic() + DOWN_SECONDS)
        if time.monotonic() < up_at[0]:
            return 503
        if len(failed_once) < TAKEN_BUT_500 and event["id"] not in failed_once:
            failed_once.add(event["id"])  # processed, but the answer is lost: a redelivery follows
            return 500
        return 204

    with Receiver(answer) as receiver:
        token = ApiToken.issue(django_user_model.objects.create_user("phones"), "phone system")[0]
        secret = token.set_callback(receiver.url)
        callback = str(token.pk)
        router = CallCenter(local_db, escalation=EscalationPolicy(after_seconds=0.01, order=("gender",)))
        calls: list[str] = []

        # Assigned at once: agents queued first.
        for n in range(12):
            router.make_available(router.agents.create(f"Sol {n}", {"language": ["Spanish"], "gender": ["F"]}).agent_id)
        calls += [
            router.create_call({"language": "Spanish", "gender": "F"}, callback=callback)[0].call_id for _ in range(12)
        ]
        # Waiting, then assigned when agents come.
        calls += [
            router.create_call({"language": "English", "gender": "M"}, callback=callback)[0].call_id for _ in range(12)
        ]
        for n in range(12):
            router.make_available(router.agents.create(f"Eli {n}", {"language": ["English"], "gender": ["M"]}).agent_id)
        # Abandoned while waiting; and relaxed (gender), then abandoned.
        abandoned = [router.create_call({"language": "French", "gender": "X"}, callback=callback)[0] for _ in range(6)]
        relaxed = [router.create_call({"language": "French", "gender": "M"}, callback=callback)[0] for _ in range(4)]
        time.sleep(0.05)
        router.escalate()
        for call in abandoned + relaxed:
            router.abandon(call.call_id)
        calls += [c.call_id for c in abandoned + relaxed]
        # An abandon and an assignment at the same moment: one of them, and its event only;
        # both ends come up over the races.
        races, raced = HangUpRaces(local_db, seed=3), []
        for n in range(RACES):
            call, _ = router.create_call({"language": "French", "gender": "F"}, callback=callback)
            agent = router.agents.create(f"Fay {n}", {"language": ["French"], "gender": ["F"]})
            races.run(call.call_id, agent.agent_id)
            raced.append(call.call_id)
        assert {router.get_call(c).status for c in raced} == {CallStatus.ASSIGNED, CallStatus.ABANDONED}
        calls += raced
        # A call of a token without a callback tells nobody.
        router.create_call({"language": "Spanish", "gender": "M"})

        expected = expected_events(router, calls)
        events = RecordedShipmentQueue(local_db, retry=RetryPolicy.from_settings("SWITCHBOARD_CALLBACK_RETRY"))
        assert {s.shipment_id for s in events.get_many(list(expected))} == set(expected)  # all in the outbox
        assert events.counts(CALLBACK_QUEUE).queued == len(expected)  # and nothing else

        # A worker dies holding an event: its lease runs out and another worker delivers it.
        held = events.receive(CALLBACK_QUEUE, visibility_timeout=1)
        assert held is not None

        worker = ShipmentWorker(
            events, Deliverer(ApiToken.callback_of), queue_name=CALLBACK_QUEUE, visibility_timeout=5, idle_sleep=0.05
        )
        running = threading.Thread(target=worker.run)
        running.start()
        deadline = time.monotonic() + 90
        while len({e["id"] for e in receiver.events(204)}) < len(expected) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)  # anything more would arrive now
        worker.stop()
        running.join(timeout=30)

    delivered = [e["id"] for e in receiver.events(204)]
    received = [e["id"] for e in receiver.events()]
    down = len(receiver.events(503))
    duplicated = {i for i in set(received) if received.count(i) > 1 and i in failed_once}
    lost = set(expected) - set(delivered)
    with capsys.disabled():
        print(
            f"\ncallbacks: {len(expected)} events produced ({sorted_counts(expected)}), {len(set(delivered))} "
            f"delivered, {len(received)} requests ({down} refused while down), {len(failed_once)} taken but "
            f"answered 500 and redelivered, "
            f"{len(lost)} lost"
        )
    assert lost == set()
    assert sorted(delivered) == sorted(expected)  # each exactly once with a 2xx, nothing else
    assert duplicated == failed_once  # a repeat only after a failed answer, with the same id
    for headers, body, _ in receiver.received:
        assert Webhook(secret).verify(body, headers)["id"] == json.loads(body)["id"]  # the library's own check
        assert {name.lower(): value for name, value in headers.items()}["webhook-id"] == json.loads(body)["id"]
    for event in receiver.events(204):
        assert event["type"] == expected[event["id"]]
    assert down > 0  # the receiver was down while the worker ran
    assert events.counts(CALLBACK_QUEUE).dlq == 0


def sorted_counts(expected: dict[str, str]) -> str:
    kinds = sorted(set(expected.values()))
    return ", ".join(f"{list(expected.values()).count(k)} {k}" for k in kinds)
