"""The per-role IAM policies (`queues_app/ddb/iam.py`) against what each role's code asks for.

Each role's representative workload runs on moto under `meter.record_access()`, which
notes the IAM permission of every DynamoDB (and DynamoDB Streams) request. The role's
policy must allow every one of them, and every grant of the policy must have been used
by the workload: nothing the role never uses. Only the requests of the role's own code
are recorded, not the test's setup.
"""

from __future__ import annotations

import io
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from types import SimpleNamespace

import pytest
from botocore.awsrequest import AWSResponse
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from django.urls import resolve, reverse

from queues_app import urls as queues_app_urls
from queues_app.agents.roster import Agents
from queues_app.api.application import machine_urls
from queues_app.calls.records import Call, CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import iam, meter
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import centre_zone, now, to_iso
from queues_app.ddb.meter import Access
from queues_app.figures import counters
from queues_app.management import loops
from queues_app.models import ApiToken
from queues_app.operations import Operations
from queues_app.operations.system import RecordedTaskQueue
from queues_app.routing import dispatch
from queues_app.shipments.queue import ShipmentQueue
from queues_app.tasks import streams
from queues_app.tasks.downstream import RateLimitedDownstream
from queues_app.tasks.processor import TaskProcessor
from queues_app.tasks.queue import TaskQueue, TaskStatus
from queues_app.tasks.records import ExpiryPolicy
from tests.helpers.old_layouts import (
    PREVIOUS_INDEXES,
    an_unmarked_audit_entry,
    as_before_numbered_steps,
    make_old_style,
    without_status_partition,
)
from tests.helpers.receiver import Receiver
from tests.helpers.threads import wait_for

RECORDED: dict[str, set[Access]] = {}


@pytest.fixture(autouse=True)
def counters_flush_at_once(monkeypatch):
    """Every process writes its counters to the metrics table every few seconds: here at
    once, so that each workload makes those writes too."""
    monkeypatch.setattr(counters.recorder, "period", 0.0)


@pytest.fixture(autouse=True)
def streams_recorded(monkeypatch):
    """The DynamoDB Streams client is not metered (streams.py builds it); record its
    requests too."""
    build = streams.build_streams_client

    def recorded(db):
        client = build(db)
        meter.install_access_recorder(client)
        return client

    monkeypatch.setattr(streams, "build_streams_client", recorded)


# --- the workloads ------------------------------------------------------------------


def web(db, staff, token, settings) -> None:
    """Every page (each view, filter, panel and cursor), the admin's change lists and
    actions, every page action and every API endpoint."""
    router = CallCenter()
    agents = [
        Agents().create(name, {"language": [lang], "gender": [gender]})
        for name, lang, gender in (("Ana", "Spanish", "F"), ("Bea", "English", "M"), ("Cid", "French", "X"))
    ]
    router.make_available(agents[0].agent_id)
    router.make_available(agents[1].agent_id)
    call, _ = router.create_call({"language": "Spanish", "gender": "any"})
    call_two, _ = router.create_call({"language": "English", "gender": "any"})
    waiting, _ = router.create_call({"language": "French", "gender": "M"})
    hangs_up, _ = router.create_call({"language": "French", "gender": "F"})
    hangs_up_too, _ = router.create_call({"language": "French", "gender": "F"})
    tomorrow = now() + timedelta(days=1)
    later_page, _ = router.schedule_callback("main", {}, "+33600000001", tomorrow)
    later_api, _ = router.schedule_callback("main", {}, "+33600000002", tomorrow)
    tomorrow_local = tomorrow.astimezone(centre_zone()).strftime("%Y-%m-%dT%H:%M")
    shipments = ShipmentQueue()
    queued = [shipments.submit({"destination": city}) for city in ("Paris", "Lyon", "Nice", "Bonn")]
    dead = [shipments.submit({"destination": city}) for city in ("Oslo", "Rome", "Kiev")]
    for shipment in dead:
        shipments.send_to_dlq(shipment.shipment_id, "address unknown")
    tasks = TaskQueue()
    for n in range(3):
        tasks.create({"n": n})
    Operations("sam", "page").touch(queued[0].shipment_id)
    cursors = {
        "agents": Agents().list(limit=1).next_cursor,
        "calls": router.calls.in_progress(limit=1).next_cursor,
        "tasks": tasks.list(TaskStatus.PENDING, limit=1).next_cursor,
        "queue": shipments.list_queue(limit=1).next_cursor,
        "dlq": shipments.list_dlq(limit=1).next_cursor,
    }
    a0, a1, a2 = (a.agent_id for a in agents)
    s = [x.shipment_id for x in queued + dead]
    client = Client()
    client.force_login(staff)
    # The live stream reads the panels as `?panel=` does, from a thread of its own that moto
    # would not bear beside these requests: refused here (204), the route is still visited.
    settings.LIVE_STREAMS_PER_PROCESS = 0
    gets: list[tuple[str, dict]] = [
        ("/", {}),
        ("/live/", {}),
        *[("/", {"panel": p}) for p in ("calls", "shipments", "tasks", "grid", "history", "capacity")],
        ("/agents/", {}),
        ("/agents/", {"cursor": cursors["agents"]}),
        ("/agents/", {"q": "an"}),
        *[("/agents/", {"status": st}) for st in ("offline", "queued", "attending", "wrap_up", "available")],
        ("/agents/", {"skill": "language:English"}),
        ("/agents/", {"partial": "table"}),
        ("/agents/new", {}),
        (f"/agents/{a0}/", {}),
        ("/calls/", {}),
        ("/calls/", {"cursor": cursors["calls"]}),
        ("/calls/find", {"call_id": call.call_id}),
        (f"/calls/{call.call_id}/", {}),
        (f"/calls/{waiting.call_id}/", {}),
        ("/queues/", {}),
        ("/lines/", {}),
        ("/callbacks/", {}),
        ("/lines/new", {}),
        ("/lines/profiles/new", {}),
        *[("/shipments/", {"view": v}) for v in ("queue", "in_flight", "delayed", "dlq")],
        ("/shipments/", {"queue": "spillover"}),
        ("/shipments/", {"view": "queue", "cursor": cursors["queue"]}),
        ("/shipments/", {"view": "dlq", "cursor": cursors["dlq"]}),
        (f"/shipments/{s[0]}/", {}),
        *[("/tasks/", {"view": v}) for v in ("PENDING", "TAKEN", "SUCCESS", "FAILURE")],
        ("/tasks/", {"view": "PENDING", "cursor": cursors["tasks"]}),
        ("/audit/", {}),
        ("/audit/", {"target": f"shipment:{s[0]}"}),
        ("/audit/export.csv", {"source": "page"}),
        ("/reports/", {}),
        ("/reports/export.csv", {"interval": "60"}),
        ("/reports/agents/", {}),
        ("/reports/agents/export.csv", {}),
        ("/reports/agents/", {"agent_id": a0}),
        ("/agents/export.csv", {"status": "queued"}),
        ("/calls/export.csv", {"list": "waiting"}),
        ("/calls/export.csv", {"list": "in_progress"}),
        ("/system/", {}),
        ("/wallboard/", {}),
        ("/alarms.json", {}),
        ("/metrics", {}),
        ("/healthz", {}),
        ("/readyz", {}),
        ("/admin/", {}),
        *[
            (reverse(f"admin:queues_app_{m}_changelist"), {})
            for m in ("agententry", "lineentry", "queueentry", "shipmententry", "taskentry")
        ],
        (reverse("admin:queues_app_agententry_changelist"), {"q": "an", "status": "queued"}),
        (reverse("admin:queues_app_shipmententry_changelist"), {"view": "dlq"}),
    ]

    def version(agent_id):
        return str(Agents().get(agent_id).version)

    def shown(agent_id):
        """The agent as a list's checkbox carries them."""
        agent = Agents().get(agent_id)
        return "/".join(filter(None, [agent_id, str(agent.version), agent.call_id]))

    def shipment(shipment_id):
        return str(shipments.get(shipment_id).version)

    # Each action names what the page showed, read just before it is sent (a callable).
    posts: list[tuple[str, dict | Callable[[], dict]]] = [
        ("/agents/new", {"name": "Dee", "skill_language": ["English"], "skill_gender": ["F"]}),
        (f"/agents/{a2}/", {"name": "Cid Two", "skill_language": ["French"], "skill_gender": ["X"], "version": "1"}),
        (f"/agents/{a2}/available", lambda: {"version": version(a2)}),
        (f"/agents/{a2}/offline", lambda: {"version": version(a2)}),
        (f"/agents/{a2}/not-ready", lambda: {"reason": "break", "version": version(a2)}),
        (f"/agents/{a2}/next-status/cancel", lambda: {"version": version(a2)}),  # none to cancel: refused
        (
            f"/calls/{call_two.call_id}/transfer",
            lambda: {
                "to": "preferences",
                "skill_language": "English",
                "skill_gender": "any",
                "then": "queue",
                "from_agent_id": router.get_call(call_two.call_id).agent_id or "x",
            },
        ),
        (f"/agents/{a0}/release", {"then": "queue", "call_id": call.call_id, "confirmed": "1"}),
        ("/agents/bulk", lambda: {"action": "offline", "ids": [shown(a1)], "confirmed": "1"}),
        ("/agents/bulk", lambda: {"action": "available", "ids": [shown(a1), shown(a2)]}),
        ("/calls/", {"skill_language": "English", "skill_gender": "any", "priority": "1"}),
        (f"/calls/{call.call_id}/end", {"then": "wrap_up", "confirmed": "1"}),
        (f"/shipments/{s[0]}/touch", lambda: {"version": shipment(s[0])}),
        (f"/shipments/{s[1]}/priority", lambda: {"priority": "7", "version": shipment(s[1])}),
        (f"/shipments/{s[2]}/dlq", lambda: {"confirmed": "1", "reason": "no", "version": shipment(s[2])}),
        (f"/shipments/{s[4]}/restore", lambda: {"version": shipment(s[4])}),
        (f"/shipments/{s[3]}/remove", lambda: {"confirmed": "1", "version": shipment(s[3])}),
        ("/shipments/bulk", lambda: {"action": "restore", "ids": [f"{s[5]}/{shipment(s[5])}"], "confirmed": "1"}),
        ("/shipments/restore-matching", {"reason": "address", "confirmed": "1"}),
        (
            reverse("admin:queues_app_agententry_changelist"),
            lambda: {"action": "enqueue", "ids": [shown(a2)], "confirmed": "1"},
        ),
        (
            reverse("admin:queues_app_agententry_changelist"),
            lambda: {"action": "offline", "ids": [shown(a2)], "confirmed": "1"},
        ),
        *[
            (
                reverse("admin:queues_app_shipmententry_changelist"),
                lambda action=action: {"action": action, "ids": [f"{s[1]}/{shipment(s[1])}"], "confirmed": "1"},
            )
            for action in ("touch", "dlq", "restore")
        ],
        ("/system/htmx-check/", {}),
        (
            "/lines/new",
            {"line_id": "billing", "name": "Billing", "service_level_seconds": "20", "service_level_target": "80"},
        ),
        (
            "/lines/billing/",
            {
                "line_id": "billing",
                "name": "Bills",
                "service_level_seconds": "20",
                "service_level_target": "80",
                "version": "1",
            },
        ),
        (
            "/lines/profiles/new",
            {"profile_id": "desk", "name": "Desk", "serves_billing": "on", "delay_billing": "9"},
        ),
        (
            "/lines/profiles/desk/",
            {"name": "Front desk", "serves_billing": "on", "priority_billing": "2", "version": "1"},
        ),
        ("/lines/profiles/desk/delete", {"version": "2", "confirmed": "1"}),
        ("/lines/billing/delete", {"version": "2", "confirmed": "1"}),
        (f"/calls/{hangs_up.call_id}/abandon", {"confirmed": "1"}),
        ("/callbacks/new", {"line": "main", "number": "+33600000003", "at": tomorrow_local}),
        (
            f"/callbacks/{later_page.call_id}/move",
            lambda: {"at": tomorrow_local, "version": router.get_call(later_page.call_id).version},
        ),
        (
            f"/callbacks/{later_page.call_id}/cancel",
            # Sent twice (plain, then htmx): the second finds it cancelled.
            lambda: {"confirmed": "1", "version": (router.find_call(later_page.call_id) or later_page).version},
        ),
    ]
    api = Client()
    bearer = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    api_calls: list[tuple[str, str, dict | Callable[[], dict] | None]] = [
        ("post", "/api/calls", {"preferences": {"language": "French", "gender": "any"}}),
        ("get", f"/api/calls/{call.call_id}", None),
        ("post", "/api/shipments", {"data": {"to": "Bern"}, "priority": 3}),
        ("post", "/api/shipments", {"data": {"to": "Graz"}, "tenant": "acme", "delay_seconds": 5}),
        ("get", f"/api/shipments/{s[0]}", None),
        ("post", f"/api/agents/{a1}/available", lambda: {"version": int(version(a1))}),
        ("post", f"/api/agents/{a0}/release", lambda: {"then": "offline", "call_id": Agents().get(a0).call_id or "x"}),
        ("post", f"/api/agents/{a1}/offline", lambda: {"version": int(version(a1))}),
        ("post", f"/api/agents/{a1}/not-ready", lambda: {"version": int(version(a1)), "reason": "lunch"}),
        ("delete", f"/api/agents/{a1}/next-status?version=1", None),  # none to cancel: 409, read only
        ("post", f"/api/calls/{call_two.call_id}/answered", {}),
        (
            "post",
            f"/api/calls/{call_two.call_id}/transfer",
            lambda: {
                "preferences": {"language": "English"},
                "then": "queue",
                "from_agent_id": router.get_call(call_two.call_id).agent_id or "x",
            },
        ),
        ("post", f"/api/calls/{call_two.call_id}/end", {"then": "wrap_up"}),
        ("get", "/api/queues", None),
        ("get", "/api/reports/intervals?interval=60", None),
        ("get", "/api/reports/agents", None),
        ("get", f"/api/reports/agents?agent_id={a0}", None),
        ("get", "/api/agents?status=queued", None),
        ("get", f"/api/agents/{a0}", None),
        ("get", "/api/calls?status=waiting", None),
        ("get", "/api/calls?status=assigned", None),
        ("post", f"/api/calls/{hangs_up_too.call_id}/callback", {"number": "+33612345678"}),
        ("post", f"/api/calls/{hangs_up_too.call_id}/callback-result", {"result": "busy"}),  # none due: 409
        ("post", f"/api/calls/{hangs_up_too.call_id}/abandon", {}),
        ("post", "/api/callbacks", {"line": "main", "number": "+33600000004", "at": tomorrow.isoformat()}),
        ("get", "/api/callbacks", None),
        (
            "put",
            f"/api/callbacks/{later_api.call_id}",
            lambda: {"at": tomorrow.isoformat(), "version": router.get_call(later_api.call_id).version},
        ),
        ("delete", f"/api/callbacks/{later_api.call_id}?version={later_api.version + 1}", None),
        # With a callback, a new call's assignment also writes its event.
        ("put", "/api/callback", {"url": "https://phones.example.com/events", "agents": True}),
        ("post", f"/api/agents/{a0}/heartbeat", None),
        ("get", "/api/callback", None),
        ("post", "/api/calls", {"preferences": {"language": "French", "gender": "any"}}),
        ("delete", "/api/callback", None),
        ("put", "/api/lines/sales", {"name": "Sales", "max_waiting": 5, "overflow": {"end": "busy"}}),
        ("get", "/api/lines", None),
        ("get", "/api/lines/sales", None),
        ("post", "/api/calls", {"preferences": {}, "line": "sales"}),
        ("put", "/api/lines/general", {"name": "General"}),
        ("delete", "/api/lines/general?version=1", None),
        (
            "post",
            "/api/agents",
            {"name": "Ines", "skills": {"language": ["French"], "gender": ["F"]}, "agent_id": "ines"},
        ),
        ("patch", "/api/agents/ines", {"name": "Ines Roy", "version": 1}),
        ("delete", "/api/agents/ines?version=2", None),
        ("put", "/api/profiles/blended", {"name": "Blended", "lines": {"sales": {"priority": 1}}}),
        ("get", "/api/profiles", None),
        ("get", "/api/profiles/blended", None),
        (
            "post",
            "/api/agents",
            {"name": "Blend", "skills": {"language": ["French"], "gender": ["F"]}, "profile": "blended"},
        ),
        (
            "post",
            "/api/agents",
            {"name": "Own", "skills": {"language": ["French"]}, "lines": {"sales": {"delay_seconds": 20}}},
        ),
        ("put", "/api/profiles/spare", {"name": "Spare", "lines": {"sales": {}}}),
        ("delete", "/api/profiles/spare?version=1", None),
        ("put", "/api/shipment-queues/returns", {"visibility_timeout_seconds": 120, "max_receives": 3}),
        ("get", "/api/shipment-queues", None),
        ("get", "/api/shipment-queues/returns", None),
        ("post", "/api/shipments", {"data": {"to": "Lyon"}, "queue": "returns", "tenant": "acme"}),
        ("put", "/api/shipment-queues/outbound", {"name": "Outbound"}),
        ("delete", "/api/shipment-queues/outbound?version=1", None),
    ]
    with meter.record_access(db.prefix) as log:
        for url, params in gets:
            assert client.get(url, params).status_code < 400, url
            assert client.get(url, params, HTTP_HX_REQUEST="true").status_code < 400, url
        for url, data in posts:
            for htmx in (False, True):
                headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
                sent = data() if callable(data) else data
                assert client.post(url, sent, **headers).status_code < 500, url
        for method, url, body in api_calls:
            if body is None:
                response = getattr(api, method)(url, **bearer)
            else:
                sent = body() if callable(body) else body
                response = getattr(api, method)(url, json.dumps(sent), content_type="application/json", **bearer)
            assert response.status_code < 500, (url, response.content)
    RECORDED["web"] = log.accesses
    # Every page and action of the site, and every API operation, was visited.
    visited = {resolve(url.split("?")[0]).url_name for url, _ in gets + posts}
    visited |= {resolve(url.split("?")[0]).url_name for _, url, _ in api_calls}
    routes = {p.name for p in queues_app_urls.urlpatterns} | {p.name for p in machine_urls()}
    assert routes <= visited, f"the web workload misses {sorted(routes - visited)}"


def shipment_worker(db, settings) -> None:
    """The fair consumer (live, then spillover, sidelining) and a plain worker, over
    shipments that complete, and one that fails and goes to the DLQ (on its history)."""
    settings.SWITCHBOARD_SHIPMENT_RETRY = {"max_receives": 1}
    queue = ShipmentQueue()
    for n in range(4):
        queue.submit({"n": n})
    queue.submit({"always_fail": True})
    with meter.record_access(db.prefix) as log:
        for args in (["--fair"], ["--queue", "live"], ["--queue", "spillover"]):
            call_command(
                "run_shipment_worker",
                "--until-empty",
                "--work-seconds",
                "0",
                "--fail-share",
                "0",
                "--max",
                "10",
                *args,
                stdout=io.StringIO(),
            )
    RECORDED["shipment-worker"] = log.accesses


def callback_worker(db, settings, django_user_model) -> None:
    """run_webhook_worker delivering one event to a receiver that answers 204, and one for
    a token revoked since, which fails and goes to the DLQ (on its history)."""
    settings.SWITCHBOARD_CALLBACK_RETRY = {"max_receives": 1}
    settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS = ["127.0.0.0/8"]  # the receiver is on this machine
    with Receiver() as receiver:
        user = django_user_model.objects.create_user("phones")
        kept, revoked = ApiToken.issue(user, "kept")[0], ApiToken.issue(user, "revoked")[0]
        for token in (kept, revoked):
            token.set_callback(receiver.url)
            CallCenter().create_call({"language": "Spanish", "gender": "F"}, callback=str(token.pk))
            CallCenter().abandon(CallCenter().line.waiting_calls()[0][0]["call_id"])
        revoked.revoked = True
        revoked.save()
        with meter.record_access(db.prefix) as log:
            call_command("run_webhook_worker", "--until-empty", "--concurrency", "1", stdout=io.StringIO())
        assert len(receiver.received) == 1
    RECORDED["callback-worker"] = log.accesses


def stream_answers(client, stream_arn: str) -> None:
    """moto does not serve the DynamoDB Streams API to this client (DescribeStream answers
    404 "Not yet implemented"), so the stream's answers are canned: one open shard whose
    records wake the processor. The requests, with the parameters the recorder reads, are
    the ones the waker really makes."""
    iterator = f"{stream_arn}|1|" + "A" * 100
    answers = {
        "DescribeStream": {
            "StreamDescription": {
                "StreamArn": stream_arn,
                "Shards": [
                    {
                        "ShardId": "shardId-00000001700000000000-00000001",
                        "SequenceNumberRange": {"StartingSequenceNumber": "1"},
                    }
                ],
            }
        },
        "GetShardIterator": {"ShardIterator": iterator},
        "GetRecords": {
            "Records": [{"eventName": "INSERT", "dynamodb": {"NewImage": {"task_status": {"S": "PENDING"}}}}],
            "NextShardIterator": iterator,
        },
    }

    def answer(model, **kwargs):
        return AWSResponse(None, 200, {}, None), answers[model.name]

    client.meta.events.register_first("before-call.dynamodb-streams", answer)


def task_processor(db, monkeypatch) -> None:
    """The processor with its lease, stream wake-ups, the sweeper shedding an expired task
    (on the audit trail) and a downstream at capacity (tasks go back to PENDING)."""
    tasks = RecordedTaskQueue()  # as run_task_processor builds it: sheds are recorded
    for n in range(4):
        tasks.create({"n": n})
    TaskQueue(expiry=ExpiryPolicy(pending_seconds=-60)).create({"expired": True})
    stream_arn = db.call("describe_table", TableName=db.table("tasks"))["Table"]["LatestStreamArn"]
    build = streams.build_streams_client

    def canned(db_):
        client = build(db_)
        stream_answers(client, stream_arn)
        return client

    monkeypatch.setattr(streams, "build_streams_client", canned)
    with meter.record_access(db.prefix) as log:
        processor = TaskProcessor(
            tasks,
            RateLimitedDownstream(rate=1000, burst=2),
            holder="iam",
            use_streams=True,
            poll_seconds=0.02,
            sweep_every=0.0,
            capacity_wait=0.01,
        )
        processor.run(10, until_empty=True)
        # The queue is empty: a processor that keeps running waits on the stream (one
        # GetRecords round here, whose record wakes it).
        assert processor.waker is not None and processor.waker.wait(1.0)
    assert processor.streams, processor.waker.reason if processor.waker else "no waker"
    RECORDED["task-processor"] = log.accesses


def collector(db) -> None:
    """A metrics sample, as `collect_metrics --once` takes it, with the facts of a call
    answered and ended by a process that died before counting them."""
    center = CallCenter()
    ana = Agents().create("Ana", {"language": ["Spanish"], "gender": ["F"]})
    center.make_available(ana.agent_id)
    center.create_call({"language": "Spanish", "gender": "F"})
    center.release(ana.agent_id, then="offline")
    counters.recorder.take_facts()  # the process that wrote them is gone
    center.create_call({"language": "Spanish", "gender": "F"})
    ShipmentQueue().submit({"n": 1})
    TaskQueue().create({"n": 1})
    with meter.record_access(db.prefix) as log:
        call_command("collect_metrics", "--once", stdout=io.StringIO())
    RECORDED["collector"] = log.accesses


def matcher(db, monkeypatch) -> None:
    """`run_matcher` as it runs: it takes the lease, beats, and matches a new caller a web
    worker sends it (one with a callback: the event goes in the assignment's transaction);
    SIGTERM stops it and it gives the lease up. The web worker's side sends over TCP only
    (it knows the address here, so it reads no lease)."""
    agent = Agents().create("Ana", {"language": ["Spanish"], "gender": ["F"]})
    CallCenter().make_available(agent.agent_id)
    call = Call(
        call_id="from-a-web-worker",
        status=CallStatus.WAITING,
        preferences={"language": "Spanish", "gender": "F"},
        arrived_at=to_iso(now()),
        callback="1",
    )
    answers = []
    start = dispatch.Dispatcher.start

    def start_then_send(dispatcher) -> None:
        start(dispatcher)

        def web_worker() -> None:
            assert wait_for(lambda: dispatcher.holding, timeout=10)
            client = dispatch.DispatchClient(Dynamo(prefix=db.prefix, region="us-east-1"))
            client._known[0] = (dispatcher.lease.address, time.time() + 60)  # shard 0: the only one
            answers.append(client.request(call))
            os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=web_worker, daemon=True).start()

    monkeypatch.setattr(dispatch.Dispatcher, "start", start_then_send)
    with meter.record_access(db.prefix) as log:
        call_command("run_matcher", "--max-seconds", "60", stdout=io.StringIO())
    assert answers and answers[0].agent_id == agent.agent_id
    RECORDED["matcher"] = log.accesses


def escalator(db, settings, monkeypatch) -> None:
    """The escalation loop (`--every`, stopped by SIGTERM after its second pass): it beats,
    relaxes a caller's preferences and assigns them (the call's callback hears of both)."""
    settings.SWITCHBOARD_ESCALATION = {"after_seconds": 0.01, "order": ["gender"]}
    settings.WRAP_UP_SECONDS = 30
    settings.AGENT_PRESENCE_SECONDS = 30
    # An agent whose wrap-up began a minute ago: the pass makes them available.
    past = CallCenter(clock=lambda: now() - timedelta(seconds=60))
    dana = Agents().create("Dana", {"language": ["English"], "gender": ["X"]})
    past.make_available(dana.agent_id)
    past.release(dana.agent_id, "wrap_up", call_id=past.create_call({"language": "English"})[0].call_id)
    # One queued a minute ago whose client never sent a heartbeat: the pass disconnects them.
    eve = Agents().create("Eve", {"language": ["English"], "gender": ["X"]})
    past.make_available(eve.agent_id)
    router = CallCenter()
    router.create_call({"language": "Spanish", "gender": "F"}, callback="1")
    router.create_call({"language": "French", "gender": "F"})
    carlos = Agents().create("Carlos", {"language": ["Spanish"], "gender": ["M"]})
    router.make_available(carlos.agent_id)
    time.sleep(0.05)
    waits = []

    class SigtermAfterTwoPasses(threading.Event):
        """The loop's stop event: SIGTERM comes in its wait after the second pass, with the
        command's handler in place, rather than after a fixed time that a slow machine may
        spend starting the command or in its first pass."""

        def wait(self, timeout=None):
            waits.append(timeout)
            if len(waits) == 2:
                os.kill(os.getpid(), signal.SIGTERM)
            return super().wait(timeout)

    monkeypatch.setattr(loops, "threading", SimpleNamespace(Event=SigtermAfterTwoPasses))
    with meter.record_access(db.prefix) as log:
        call_command("escalate_callers", "--every", "0.2", stdout=io.StringIO())
    assert len(waits) == 2
    assert Agents().get(dana.agent_id).status == "queued"
    assert (Agents().get(eve.agent_id).status, Agents().get(eve.agent_id).reason) == ("not_ready", "disconnected")
    RECORDED["escalator"] = log.accesses


def admin_setup(db) -> None:
    """`dynamo_tables create` (on a callcenter table with an earlier version's indexes,
    which it replaces; then again, moving a caller written before the line was split into
    their partition and giving an agent written before the status index was spread its
    partition), `describe --exact` and `delete --yes`."""
    import dataclasses
    from unittest import mock

    from queues_app.ddb import tables

    older = dataclasses.replace(
        tables.CALLCENTER, indexes=tuple(tables.Index(*index) for index in PREVIOUS_INDEXES), retired_indexes=()
    )
    with meter.record_access(db.prefix) as first:
        with mock.patch.dict(tables.TABLES, {"callcenter": older}):
            call_command("dynamo_tables", "create", stdout=io.StringIO())
        call_command("dynamo_tables", "create", stdout=io.StringIO())
    router = CallCenter()
    call, _ = router.create_call({"language": "Spanish", "gender": "F"})
    make_old_style(db, router, call)
    without_status_partition(db, Agents().create("Ana", {"language": ["Spanish"], "gender": ["F"]}).agent_id)
    an_unmarked_audit_entry(db)
    as_before_numbered_steps(db)
    with meter.record_access(db.prefix) as log, override_settings(SWITCHBOARD_AUDIT_RETENTION_DAYS=2):
        for args in (["create"], ["describe", "--exact"], ["delete", "--yes"]):
            out = io.StringIO()
            call_command("dynamo_tables", *args, stdout=out)
            if args == ["create"]:
                assert "1 waiting caller(s) moved" in out.getvalue()
                assert "1 agent(s) given their partition of the status index" in out.getvalue()
                assert "1 day(s) of the audit trail marked as having entries" in out.getvalue()
    RECORDED["admin-setup"] = first.accesses | log.accesses


@pytest.fixture
def workloads(settings, django_user_model, monkeypatch) -> dict[str, Callable[[], None]]:
    return {
        "web": lambda db: web(
            db,
            django_user_model.objects.create_user("stella", is_staff=True, is_superuser=True),
            ApiToken.issue(django_user_model.objects.create_superuser("api-user"), "iam")[1],
            settings,
        ),
        "shipment-worker": lambda db: shipment_worker(db, settings),
        "task-processor": lambda db: task_processor(db, monkeypatch),
        "collector": collector,
        "escalator": lambda db: escalator(db, settings, monkeypatch),
        "matcher": lambda db: matcher(db, monkeypatch),
        "callback-worker": lambda db: callback_worker(db, settings, django_user_model),
        "admin-setup": admin_setup,
    }


# --- the checks ---------------------------------------------------------------------


def check(role: str) -> None:
    recorded = RECORDED[role]
    granted = set(iam.grants(role))
    print(f"\n{role}: recorded {len(recorded)} permissions:")
    for access in sorted(recorded, key=lambda a: (a.table or "", a.index or "", a.stream, a.action)):
        print(f"    ({access.action[9:]!r}, {access.table!r}, {'stream' if access.stream else access.index!r}),")
    not_allowed = sorted(recorded - granted, key=str)
    unused = sorted(granted - recorded, key=str)
    assert not not_allowed, f"{role} needs permissions its policy does not grant: {not_allowed}"
    assert not unused, f"{role}'s policy grants what its workload never used: {unused}"


@pytest.mark.parametrize(
    "role",
    [
        # The callback worker's handler threads read the tokens: they must be committed.
        pytest.param(r, marks=pytest.mark.django_db(transaction=r == "callback-worker"))
        for r in iam.ROLES
        if r != "admin-setup"
    ],
)
def test_the_policy_allows_what_the_role_does_and_nothing_else(moto_db, workloads, role):
    workloads[role](moto_db)
    check(role)


def test_the_admin_setup_policy_allows_what_dynamo_tables_does_and_nothing_else(moto_empty):
    admin_setup(moto_empty)
    check("admin-setup")


@pytest.mark.parametrize("role", iam.ROLES)
def test_the_policy_documents_are_well_formed(role, capsys):
    document = iam.policy(role, prefix="prod-", region="eu-west-1", account="123456789012")
    assert document["Version"] == "2012-10-17"
    actions, resources = set(), set()
    for statement in document["Statement"]:
        assert set(statement) == {"Sid", "Effect", "Action", "Resource"}
        assert statement["Effect"] == "Allow"
        assert statement["Action"] == sorted(set(statement["Action"]))
        for action in statement["Action"]:
            assert action in iam.KNOWN_ACTIONS, action
        for resource in statement["Resource"]:
            assert resource == "*" or resource.startswith("arn:aws:dynamodb:eu-west-1:123456789012:table/prod-")
            assert "*" not in resource or resource == "*" or resource.endswith("/stream/*")
        actions.update(statement["Action"])
        resources.update(statement["Resource"])
    assert "dynamodb:*" not in actions
    with capsys.disabled():
        print(f"\n{role}: {len(actions)} actions on {len(resources)} resources")


def test_the_command_prints_the_policy_of_a_role(settings):
    settings.DYNAMODB_TABLE_PREFIX = "prod-"
    out = io.StringIO()
    call_command("dynamo_tables", "iam-policy", "--role", "web", "--region", "eu-west-1", "--account", "1", stdout=out)
    assert json.loads(out.getvalue()) == iam.policy("web", prefix="prod-", region="eu-west-1", account="1")


def test_the_command_refuses_an_unknown_role_and_a_missing_one():
    with pytest.raises(CommandError, match="invalid choice: 'root'"):
        call_command("dynamo_tables", "iam-policy", "--role", "root")
    with pytest.raises(CommandError, match="iam-policy needs --role"):
        call_command("dynamo_tables", "iam-policy")
    with pytest.raises(CommandError, match="mean nothing to template"):
        call_command("dynamo_tables", "template", "--role", "web")


def test_each_operation_maps_to_the_iam_permissions_it_needs():
    """Operations no role's workload makes on moto (or makes only some forms of) are
    mapped by the recorder all the same."""

    def of(operation, **params):
        return sorted((a.action[9:], a.table, a.index, a.stream) for a in meter.accesses_of(operation, params))

    transact = [
        {"Put": {"TableName": "callcenter"}},
        {"Update": {"TableName": "callcenter"}},
        {"Delete": {"TableName": "audit"}},
        {"ConditionCheck": {"TableName": "shipments"}},
    ]
    assert of("TransactWriteItems", TransactItems=transact) == [
        ("ConditionCheckItem", "shipments", None, False),
        ("DeleteItem", "audit", None, False),
        ("PutItem", "callcenter", None, False),
        ("UpdateItem", "callcenter", None, False),
    ]
    assert of("TransactGetItems", TransactItems=[{"Get": {"TableName": "tasks"}}]) == [
        ("GetItem", "tasks", None, False)
    ]
    assert of("BatchWriteItem", RequestItems={"tasks": [], "audit": []}) == [
        ("BatchWriteItem", "audit", None, False),
        ("BatchWriteItem", "tasks", None, False),
    ]
    assert of("BatchGetItem", RequestItems={"tasks": {}}) == [("BatchGetItem", "tasks", None, False)]
    assert of("Query", TableName="shipments", IndexName="ready") == [("Query", "shipments", "ready", False)]
    assert of("Scan", TableName="audit") == [("Scan", "audit", None, False)]
    assert of("ListTables") == [("ListTables", None, None, False)]
    assert of("ListStreams") == [("ListStreams", None, None, False)]
    arn = "arn:aws:dynamodb:us-east-1:1:table/tasks/stream/2026-01-01T00:00:00.000"
    assert of("DescribeStream", StreamArn=arn) == [("DescribeStream", "tasks", None, True)]
    assert of("GetRecords", ShardIterator=f"{arn}|1|AAAA") == [("GetRecords", "tasks", None, True)]


def test_the_recorder_strips_the_prefix_and_sees_only_its_own_block(moto_db):
    with meter.record_access(moto_db.prefix) as log:
        moto_db.call("get_item", TableName=moto_db.table("audit"), Key={"pk": {"S": "a"}, "sk": {"S": "b"}})
    moto_db.call("describe_table", TableName=moto_db.table("audit"))
    assert log.accesses == {Access("dynamodb:GetItem", "audit")}
    assert log.counts[Access("dynamodb:GetItem", "audit")] == 1
