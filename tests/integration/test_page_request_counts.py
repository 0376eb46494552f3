"""Every page and panel makes a bounded number of DynamoDB requests: the same with ten
items of each kind as with thousands, and never a Scan.

Measured with the request meter on DynamoDB Local, with the same pages read over a
small and a large data set (agents, waiting callers, shipments in every state, tasks,
audit entries). The large set's items carry a kilobyte of ballast (an attribute no page
reads), so that its 2,000 of a kind fill as many 1 MB result pages as 10,000 plain ones
would: a read that is not bounded shows as more requests, at a fifth of the writes.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from unittest import mock

import pytest
from django.test import Client
from django.urls import reverse

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents, agent_to_item
from queues_app.audit.store import AUDIT_SHARDS, AuditTrail
from queues_app.calls.records import Call, CallStatus
from queues_app.calls.store import call_to_item
from queues_app.centre import keys
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import batch, meter, schema
from queues_app.ddb.client import default, reset_default
from queues_app.ddb.clock import now, to_iso
from queues_app.lines import profiles
from queues_app.lines import store as line_store
from queues_app.routing import line as line_module
from queues_app.shipments import named as named_queues
from queues_app.shipments.queue import (
    Shipment,
    ShipmentQueue,
    ShipmentStatus,
    ready_sort_key,
    shipment_to_item,
    timed_sort_key,
)
from queues_app.tasks.queue import TaskQueue
from queues_app.tasks.records import task_to_item
from queues_app.webhooks import events as agent_events

SMALL, LARGE = 10, 2_000
BALLAST = {"ballast": "x" * 1_000}
LANGUAGES, GENDERS = ("English", "French", "Spanish"), ("F", "M", "X")

# Pages that read on while their page is not full, up to a fixed number of reads: a
# filter over a large table (Agents.list reads at most 4 pages), and the audit trail (one
# Query of the days that have entries, then at most 8 rounds a page, each a Query of each
# of a day's 17 partitions: 16 shards and the unsharded day). Bounded, but not equal.
# The agents page also counts agents per status for its tabs (a capped COUNT query of
# each of a status's 8 partitions: 5 x 8), and a name or skill filter once more for its
# total, and reads the page's agents in one BatchGetItem (the name index leaves out what
# changes with their status); a status filter is a key condition on the status index
# (one Query of each of its 8 partitions), so it does not read on. A filtered
# shipment list reads at most 4 index pages, each with one BatchGetItem, besides the tabs'
# 6 COUNT queries (4 lists of this queue, and the two other queues).
# The calls page's waiting list is the line's non-empty preference sets merged: one
# BatchGetItem of their counts and one Query per non-empty set. It grows with how many
# sets have callers (at most 16 for this catalog: 3 languages or any, 3 genders or any),
# never with the line's length; its calls in progress are one Query of each of the 8
# partitions of the attending agents, its ringing calls one of each of the ringing agents'
# 8 (and one BatchGetItem of those calls, when any rings).
# The agents' counts per status for the tabs: every status's 8 partitions of the status index.
STATUS_COUNTS = len(AgentStatus.ALL) * keys.STATUS_SHARDS
READ_ON_LIMITS = {
    "calls": 21 + 4 + keys.STATUS_SHARDS + 1,
    "agents: skill filter": STATUS_COUNTS + 4 + 1 + 1,
    "agents: name search": STATUS_COUNTS + 4 + 1 + 1,
    "shipments: filtered": 6 + 4 * 2,
    "admin: agents searched": 4 + 1,
    "audit trail": 1 + 8 * (AUDIT_SHARDS + 1),
}


def load(size: int) -> dict:
    """`size` of each kind, written in batches, with ballast when there are many; returns
    ids to visit."""
    db = default()
    ballast = BALLAST if size > SMALL else {}
    moment = now()
    agents = Agents()
    built = []
    for n in range(size):
        agent = agents.build(
            f"Agent {n:05d}", {"language": [LANGUAGES[n % 3], LANGUAGES[(n + 1) % 3]], "gender": [GENDERS[n % 3]]}
        )
        if n % 4 == 1:
            agent.status, agent.call_id = AgentStatus.ATTENDING, f"c{n}"
        built.append(agent)
    batch.load_items(db, agents.table_name, [agent_to_item(a) | ballast for a in built])
    router = CallCenter()
    for agent in built[:3]:
        if agent.status == AgentStatus.OFFLINE:
            router.make_available(agent.agent_id)

    calls = []
    for n in range(size):
        call = Call(
            call_id=f"w{n:05d}{uuid.uuid4().hex[:6]}",
            status=CallStatus.WAITING,
            preferences={"language": LANGUAGES[n % 3], "gender": GENDERS[(n // 3) % 3] if n % 5 else None},
            priority=n % 3,
            arrived_at=to_iso(moment - timedelta(seconds=n)),
        )
        calls.append(call)
    with mock.patch.object(line_module, "call_to_item", lambda call: call_to_item(call) | ballast):
        router.line.load(calls, at_once=4)

    shipments = ShipmentQueue()
    rows = []
    for n in range(size):
        sid = f"s{n:05d}"
        stamp = to_iso(moment - timedelta(seconds=n))
        shipment = Shipment(
            shipment_id=sid,
            data={"n": n},
            status=ShipmentStatus.READY_TO_SHIP,
            priority=n % 10,
            created_at=stamp,
            updated_at=stamp,
        )
        kind = n % 4
        if kind in (0, 1):
            shipment.enqueued_at = shipment.first_enqueued_at = stamp
            shipment.ready_sk = ready_sort_key(shipment.priority, stamp, sid)
        elif kind == 2:
            shipment.status, shipment.dlq_at, shipment.dlq_reason = ShipmentStatus.IN_DLQ, stamp, "bounced"
            shipment.dlq_sk = timed_sort_key(stamp, sid)
        else:
            deadline = to_iso(moment + timedelta(minutes=30))
            shipment.status, shipment.visible_at, shipment.receipt = ShipmentStatus.PROCESSING, deadline, "r"
            shipment.invisible_sk = timed_sort_key(deadline, sid)
        rows.append(shipment_to_item(shipment) | ballast)
    batch.load_items(db, shipments.table_name, rows)

    tasks = TaskQueue()
    built_tasks = [tasks.build({"n": n}, created=moment - timedelta(seconds=n % 100)) for n in range(size)]
    batch.load_items(db, tasks.table_name, [task_to_item(task) | ballast for task in built_tasks])

    trail = AuditTrail()
    batch.load_items(
        db,
        trail.table_name,
        [
            trail.entry_item(
                actor="loader",
                source="command",
                action="agent.update",
                target=f"agent:{built[0].agent_id}",
                summary=f"entry {n}",
                before={"n": n},
                after={"n": n + 1},
            )
            | ballast
            for n in range(size)
        ],
    )
    trail.mark_days([to_iso(moment)[:10]])
    return {"agent": built[0].agent_id, "call": calls[0].call_id, "shipment": "s00000"}


def pages(ids: dict) -> dict[str, str]:
    admin = "/admin/queues_app/"
    return {
        "overview": reverse("home"),
        "panel: calls": reverse("home") + "?panel=calls",
        "panel: shipments": reverse("home") + "?panel=shipments",
        "panel: tasks": reverse("home") + "?panel=tasks",
        "panel: grid": reverse("home") + "?panel=grid",
        "alarms": reverse("alarms"),
        "wallboard": reverse("wallboard"),
        "agents": reverse("agents"),
        "agents: status filter": reverse("agents") + "?status=offline",
        "agents: skill filter": reverse("agents") + "?skill=language:French",
        "agents: name search": reverse("agents") + "?q=00007",
        "agent detail": reverse("agent-detail", args=[ids["agent"]]),
        "calls": reverse("calls"),
        "call detail": reverse("call-detail", args=[ids["call"]]),
        "queues": reverse("queues"),
        "shipments: queue": reverse("shipments"),
        "shipments: in flight": reverse("shipments") + "?view=in_flight",
        "shipments: delayed": reverse("shipments") + "?view=delayed",
        "shipments: dlq": reverse("shipments") + "?view=dlq",
        "shipments: filtered": reverse("shipments") + "?tenant=acme&older_than=1",
        "shipment detail": reverse("shipment-detail", args=[ids["shipment"]]),
        "tasks": reverse("tasks"),
        "tasks: taken": reverse("tasks") + "?view=TAKEN",
        "audit trail": reverse("audit"),
        "audit: one item": reverse("audit") + f"?target=agent:{ids['agent']}",
        "admin: agents": admin + "agententry/",
        "admin: lines": admin + "lineentry/",
        "admin: agents searched": admin + "agententry/?q=00007",
        "admin: queues": admin + "queueentry/",
        "admin: shipments dlq": admin + "shipmententry/?view=dlq",
        "admin: tasks": admin + "taskentry/",
    }


def requests_per_page(client: Client, ids: dict) -> dict[str, dict]:
    counts = {}
    for name, url in pages(ids).items():
        headers = {"HTTP_HX_REQUEST": "true"} if "panel" in url else {}
        with meter.measure() as seen:
            response = client.get(url, **headers)
        assert response.status_code == 200, (name, response.status_code)
        counts[name] = {"requests": seen.calls, "scans": seen.calls_of("Scan"), "by_operation": seen.snapshot()}
    return counts


@pytest.fixture
def measure_at(settings, dynamodb_local, staff, monkeypatch):
    """Load `size` items of each kind into fresh tables and count each page's requests."""
    made = []
    # The settings (lines, routing profiles, shipment queues) are read once every few seconds per process: on
    # a slow run that read would fall on one page at one size and not at the other, a
    # difference in the counts that is none in the pages. Kept for the whole measure, each
    # page counts its reads of the data alone (a settings read is one Query a process makes
    # every few seconds: docs/scale.md).
    settings_reads = (line_store._READ, line_store._PROMISES, line_store._WRAP_UPS, profiles._READ, named_queues._READ)
    for kept in (*settings_reads, agent_events._LISTENING):
        monkeypatch.setattr(kept, "max_age_seconds", 3600.0)

    def run(size: int) -> dict[str, dict]:
        settings.DYNAMODB_ENDPOINT_URL = dynamodb_local.endpoint
        settings.DYNAMODB_TABLE_PREFIX = f"rc{uuid.uuid4().hex[:6]}-"
        reset_default()
        schema.create_tables(default())
        made.append(default())
        ids = load(size)
        client = Client()
        client.force_login(staff)
        return requests_per_page(client, ids)

    yield run
    for db in made:
        schema.delete_tables(db)
    reset_default()


def test_pages_cost_the_same_with_ten_items_as_with_thousands(measure_at):
    small = measure_at(SMALL)
    large = measure_at(LARGE)
    report = "\n".join(f"{name:<26} {small[name]['requests']:>4} {large[name]['requests']:>4}" for name in small)
    print(f"\npage                      {SMALL} items  {LARGE:,} items\n" + report)
    for name in small:
        assert small[name]["scans"] == 0 and large[name]["scans"] == 0, name
        if name in READ_ON_LIMITS:
            assert max(small[name]["requests"], large[name]["requests"]) <= READ_ON_LIMITS[name], (name, report)
        else:
            assert large[name]["requests"] == small[name]["requests"], (name, report)
    # The whole overview (seven panels) is the most: at most 154 requests when first loaded
    # (one Query reads the heartbeats; the waiting line's counts and the four partitions of
    # its by-arrival index for the calls panel and the supply-and-demand grid; the agents per
    # status, 7 statuses x 8 partitions, and the logged-in agents of the grid, 6 x 8; the
    # service level's two reads and the lines' day, each a Query of the figures' 4 shards;
    # 8 more for the names of the agents not ready, when there are any: none here).
    assert max(c["requests"] for c in large.values()) <= 154, report
