"""The data the page fuzzers show (tests/unit/test_page_fuzz.py on moto,
tests/integration/test_page_fuzz_local.py on DynamoDB Local): some of everything, and
cursors of every list, real and forged."""

from __future__ import annotations

from queues_app.agents.roster import Agents
from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import paging
from queues_app.operations import Operations
from queues_app.shipments.queue import ShipmentQueue
from queues_app.tasks.queue import TaskQueue, TaskStatus


def tampered(cursor: str) -> str:
    i = len(cursor) // 3
    return cursor[:i] + ("A" if cursor[i] != "A" else "B") + cursor[i + 1 :]


def page_world() -> dict:
    """Some of everything, and real cursors of every list (two of each kind at least)."""
    router = CallCenter()
    agents = [
        Agents().create(name, {"language": [lang], "gender": [gender]})
        for name, lang, gender in (("Ana", "Spanish", "F"), ("Bea", "English", "M"), ("Cid", "French", "X"))
    ]
    router.make_available(agents[0].agent_id)
    router.make_available(agents[1].agent_id)
    call, _ = router.create_call({"language": "Spanish", "gender": "any"})
    router.create_call({"language": "English", "gender": "any"})
    waiting, _ = router.create_call({"language": "French", "gender": "M"})
    shipments = ShipmentQueue()
    queued = [shipments.submit({"destination": city}) for city in ("Paris", "Lyon", "Nice")]
    dead = [shipments.submit({"destination": city}) for city in ("Oslo", "Rome")]
    for shipment in dead:
        shipments.send_to_dlq(shipment.shipment_id, "address unknown")
    tasks = TaskQueue()
    for n in range(3):
        tasks.create({"n": n})
    ops = Operations("sam-supervisor", "page")
    ops.make_available(agents[2].agent_id)
    ops.log_off(agents[2].agent_id)
    ops.touch(queued[0].shipment_id)
    trail = AuditTrail()
    cursors = {
        "agents": Agents().list(limit=1).next_cursor,
        "tasks": tasks.list(TaskStatus.PENDING, limit=1).next_cursor,
        "queue": shipments.list_queue(limit=1).next_cursor,
        "dlq": shipments.list_dlq(limit=1).next_cursor,
        "audit": trail.recent(limit=1).next_cursor,
        "audit of cid": trail.for_target(target("agent", agents[2].agent_id), limit=1).next_cursor,
        "calls": router.calls.in_progress(limit=1).next_cursor,
    }
    assert all(cursors.values()), cursors
    forged = [tampered(c) for c in cursors.values() if c]
    forged += [
        paging.encode_state({"day": "not a day", "key": None}, purpose="audit-recent"),
        paging.encode_state({"pk": {"S": "AGENTS"}}, purpose="another purpose"),
    ]
    return {
        "agents": [a.agent_id for a in agents],
        "calls": [call.call_id, waiting.call_id],
        "shipments": [s.shipment_id for s in queued + dead],
        "cursors": cursors,
        "forged": forged,
    }
