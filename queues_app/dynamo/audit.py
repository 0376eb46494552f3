"""Check the invariants of the call-center table and list every violation.

The audit reads the whole `callcenter` table with a paginated, strongly consistent
Scan. That costs one read of every item, which is acceptable for an operator command
run now and then (and for tests), never for a request path. Items are grouped by
kind from their key prefixes (see `keys.py`), then checked:

- depth: each queue's metadata item (pk=QUEUES) counts exactly the message items in
  that combination's partition;
- messages: a queued agent has one message item per combination their skills fit,
  each with sk == the agent's queue token, and every message item belongs to a
  queued agent with that token (no orphans);
- attending: an attending agent has no message items and holds a call (call_id);
- calls: a waiting call has exactly one WAITING item (sk == its wait_sk) and no
  agent; an assigned or ended call has no WAITING item; every WAITING item points
  at a waiting call;
- holder: no agent holds two calls (agent_id is unique among assigned calls), and
  the agent of an assigned call is attending with call_id == that call.

It reads the `shipments` table the same way (paginated, strongly consistent Scan) and
checks every shipment on its own (see `check_shipment`): the status is a known one, the
sparse index attributes agree with it (exactly one state: under construction and
completed are in no index; ready to ship is in no index, or in `ready` (queued), or
in `invisible` (delayed), never two; processing is in `invisible` with a receipt and
a deadline; in DLQ is in `dlq` with dlq_at and a reason, nothing else), each index
pair is complete, its partition key is the shipment's queue, and its sort key is the
one the code writes. Those checks are reported as `shipments.status`,
`shipments.index`, `shipments.sort_key` and `shipments.lease`.

A Scan is not a snapshot: on a table in use, an item written between two pages can
look inconsistent with one read earlier. So when a pass finds violations, `audit`
runs the whole pass again (up to twice more, after a short pause) and reports only
the violations seen in every pass, compared by `Violation.key` (which check and
which item, not the detail text, which may hold counts that move).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from . import keys
from .client import Dynamo, default
from .records import AgentStatus, CallStatus, unmarshal
from .shipments import (
    DEFAULT_QUEUE,
    ShipmentState,
    ShipmentStatus,
    ready_sort_key,
    shipment_from_item,
    timed_sort_key,
)
from .skills import SkillCatalog

DEFAULT_PASSES = 3
DEFAULT_PAUSE = 0.5


@dataclass(frozen=True)
class Violation:
    """One broken invariant: which check, about what (a queue, agent, call or item key),
    and what was found."""

    check: str
    subject: str
    detail: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.check, self.subject)

    def __str__(self) -> str:
        return f"[{self.check}] {self.subject}: {self.detail}"


@dataclass
class AuditReport:
    violations: list[Violation] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    passes: int = 1

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> str:
        c = self.counts
        return (
            f"{c.get('agents', 0)} agents ({c.get('agents_queued', 0)} queued, "
            f"{c.get('agents_attending', 0)} attending), {c.get('queues', 0)} queue metadata items, "
            f"{c.get('messages', 0)} message items, {c.get('calls', 0)} calls "
            f"({c.get('calls_waiting', 0)} waiting, {c.get('calls_assigned', 0)} assigned, "
            f"{c.get('calls_ended', 0)} ended), {c.get('waiting_items', 0)} WAITING items, "
            f"{shipments_summary(c)}"
        )


SHIPMENT_STATES = (
    ShipmentState.UNDER_CONSTRUCTION, ShipmentState.READY, ShipmentState.QUEUED, ShipmentState.DELAYED,
    ShipmentState.PROCESSING, ShipmentState.COMPLETED, ShipmentState.IN_DLQ,
)


def shipments_summary(c: dict[str, int]) -> str:
    """"N shipments (a under construction, b ready, ...)": every state, zeros included."""
    total = c.get("shipments", 0)
    if not total:
        return "0 shipments"
    parts = [f"{c.get(f'shipments_{state}', 0)} {state.replace('_', ' ').replace('dlq', 'DLQ')}"
             for state in SHIPMENT_STATES]
    unknown = c.get("shipments_unknown", 0)
    if unknown:
        parts.append(f"{unknown} with an unknown status")
    return f"{total} shipments ({', '.join(parts)})"


@dataclass
class _Snapshot:
    agents: dict[str, dict] = field(default_factory=dict)  # agent_id -> item
    metas: dict[str, dict] = field(default_factory=dict)  # queue name -> item
    messages: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))  # queue name -> items
    waiting: list[dict] = field(default_factory=list)
    calls: dict[str, dict] = field(default_factory=dict)  # call_id -> item
    other: int = 0
    shipments: list[dict] = field(default_factory=list)  # every item of the shipments table


def scan_table(db: Dynamo) -> _Snapshot:
    """Every item of the callcenter table, grouped by kind (paginated consistent Scan)."""
    snap = _Snapshot()
    start = None
    while True:
        params = {"TableName": db.table("callcenter"), "ConsistentRead": True}
        if start:
            params["ExclusiveStartKey"] = start
        response = db.call("scan", **params)
        for raw in response.get("Items", []):
            _sort_item(snap, unmarshal(raw))
        start = response.get("LastEvaluatedKey")
        if not start:
            return snap


def scan_shipments(db: Dynamo) -> list[dict]:
    """Every item of the shipments table (paginated consistent Scan)."""
    items: list[dict] = []
    start = None
    while True:
        params = {"TableName": db.table("shipments"), "ConsistentRead": True}
        if start:
            params["ExclusiveStartKey"] = start
        response = db.call("scan", **params)
        items.extend(unmarshal(raw) for raw in response.get("Items", []))
        start = response.get("LastEvaluatedKey")
        if not start:
            return items


def _sort_item(snap: _Snapshot, item: dict) -> None:
    pk, sk = item.get("pk", ""), item.get("sk", "")
    if pk == keys.AGENTS_PK and sk.startswith(keys.AGENT_PREFIX):
        snap.agents[keys.agent_id_from_sk(sk)] = item
    elif pk == keys.QUEUES_PK:
        snap.metas[sk] = item
    elif pk.startswith(keys.QUEUE_PREFIX):
        snap.messages[pk].append(item)
    elif pk == keys.WAITING_PK:
        snap.waiting.append(item)
    elif pk.startswith(keys.CALL_PREFIX) and sk == keys.CALL_SK:
        snap.calls[pk.removeprefix(keys.CALL_PREFIX)] = item
    else:
        snap.other += 1


def check(snap: _Snapshot, catalog: SkillCatalog) -> list[Violation]:
    """Every invariant violation in one snapshot of the table."""
    found: list[Violation] = []

    def add(check_name: str, subject: str, detail: str) -> None:
        found.append(Violation(check_name, subject, detail))

    # depth ------------------------------------------------------------------------
    for name in sorted(set(snap.metas) | set(snap.messages)):
        stored = int(snap.metas.get(name, {}).get("depth", 0))
        actual = len(snap.messages.get(name, []))
        if stored != actual:
            where = "metadata" if name in snap.metas else "no metadata item, so"
            add("depth", name, f"{where} depth {stored} but {actual} message item(s) in the partition "
                f"(off by {stored - actual:+d})")

    # messages and orphans -------------------------------------------------------------
    present = {(name, item["sk"]): item for name, items in snap.messages.items() for item in items}
    expected: set[tuple[str, str]] = set()
    messages_of: dict[str, list[tuple[str, str]]] = defaultdict(list)  # agent_id -> message keys
    for (name, sk), item in present.items():
        owner = item.get("agent_id") or sk.rsplit("#", 1)[-1]
        messages_of[owner].append((name, sk))
    for agent_id, agent in sorted(snap.agents.items()):
        if agent.get("status") != AgentStatus.QUEUED:
            continue
        token = agent.get("queue_token")
        if not token:
            add("messages", f"agent {agent_id}", "queued without a queue_token")
            continue
        try:
            combos = catalog.combinations(agent.get("skills") or {})
        except KeyError as exc:
            add("messages", f"agent {agent_id}", f"skills miss the dimension {exc}")
            continue
        for combo in combos:
            message_key = (keys.queue_name(combo), token)
            expected.add(message_key)
            item = present.get(message_key)
            if item is None:
                add("messages", f"agent {agent_id} in {message_key[0]}",
                    f"queued with token {token} but has no message item there")
            elif item.get("agent_id") != agent_id:
                add("messages", f"message {message_key[0]} / {token}",
                    f"belongs to agent {agent_id} but names agent {item.get('agent_id')}")
    for (name, sk), item in sorted(present.items()):
        if (name, sk) in expected:
            continue
        owner_id = item.get("agent_id")
        owner = snap.agents.get(owner_id or "")
        if owner is None:
            why = f"agent {owner_id} does not exist"
        elif owner.get("status") != AgentStatus.QUEUED:
            why = f"agent {owner_id} is {owner.get('status')}, not queued"
        elif owner.get("queue_token") != sk:
            why = f"agent {owner_id} is queued with another token ({owner.get('queue_token')})"
        else:
            why = f"agent {owner_id}'s skills do not fit this queue"
        add("orphan", f"message {name} / {sk}", f"no queued agent owns it: {why}")

    # attending agents -------------------------------------------------------------------
    for agent_id, agent in sorted(snap.agents.items()):
        if agent.get("status") != AgentStatus.ATTENDING:
            continue
        held = messages_of.get(agent_id, [])
        if held:
            add("attending", f"agent {agent_id}",
                f"attending but still has {len(held)} message item(s) "
                f"({', '.join(f'{n} / {s}' for n, s in sorted(held))})")
        call_id = agent.get("call_id")
        if not call_id:
            add("attending", f"agent {agent_id}", "attending without a call_id")
            continue
        call = snap.calls.get(call_id)
        if call is None:
            add("attending", f"agent {agent_id}", f"attending call {call_id}, which does not exist")
        elif call.get("status") != CallStatus.ASSIGNED or call.get("agent_id") != agent_id:
            add("attending", f"agent {agent_id}",
                f"attending call {call_id}, which is {call.get('status')} with agent {call.get('agent_id')}")

    # calls and waiting callers ------------------------------------------------------------
    waiting_for: dict[str, list[dict]] = defaultdict(list)  # call_id -> WAITING items
    for item in snap.waiting:
        waiting_for[item.get("call_id", "")].append(item)
        call = snap.calls.get(item.get("call_id", ""))
        if call is None:
            add("calls", f"WAITING {item['sk']}", f"points at call {item.get('call_id')}, which does not exist")
        elif call.get("status") != CallStatus.WAITING:
            add("calls", f"WAITING {item['sk']}", f"points at call {item.get('call_id')}, which is "
                f"{call.get('status')}")
        elif call.get("wait_sk") != item["sk"]:
            add("calls", f"WAITING {item['sk']}",
                f"points at call {item.get('call_id')}, which waits under {call.get('wait_sk')}")
    for call_id, call in sorted(snap.calls.items()):
        status, items = call.get("status"), waiting_for.get(call_id, [])
        if status == CallStatus.WAITING:
            if call.get("agent_id"):
                add("calls", f"call {call_id}", f"waiting but has agent {call['agent_id']}")
            wait_sk = call.get("wait_sk")
            if not any(i["sk"] == wait_sk for i in items) or len(items) != 1:
                add("calls", f"call {call_id}",
                    f"waiting under {wait_sk} but has {len(items)} WAITING item(s)"
                    + (f" ({', '.join(sorted(i['sk'] for i in items))})" if items else ""))
        elif status in (CallStatus.ASSIGNED, CallStatus.ENDED):
            if items:
                add("calls", f"call {call_id}", f"{status} but still has {len(items)} WAITING item(s)")
            if not call.get("agent_id"):
                add("calls", f"call {call_id}", f"{status} without an agent_id")
        else:
            add("calls", f"call {call_id}", f"unknown status {status!r}")

    # one call per agent ---------------------------------------------------------------------
    held_by: dict[str, list[str]] = defaultdict(list)
    for call_id, call in sorted(snap.calls.items()):
        if call.get("status") == CallStatus.ASSIGNED and call.get("agent_id"):
            held_by[call["agent_id"]].append(call_id)
    for agent_id, call_ids in sorted(held_by.items()):
        if len(call_ids) > 1:
            add("holder", f"agent {agent_id}", f"holds {len(call_ids)} assigned calls: {', '.join(call_ids)}")
        agent = snap.agents.get(agent_id)
        for call_id in call_ids:
            if agent is None:
                add("holder", f"call {call_id}", f"assigned to agent {agent_id}, who does not exist")
            elif agent.get("status") != AgentStatus.ATTENDING or agent.get("call_id") != call_id:
                add("holder", f"call {call_id}",
                    f"assigned to agent {agent_id}, who is {agent.get('status')} "
                    f"with call_id {agent.get('call_id')}")

    # shipments ----------------------------------------------------------------------------
    found.extend(check_shipments(snap.shipments))
    return found


# --- shipments ---------------------------------------------------------------------------

_PAIRS = {  # index -> (partition key attribute, sort key attribute)
    "ready": ("ready_q", "ready_sk"),
    "invisible": ("invisible_q", "invisible_sk"),
    "dlq": ("dlq_q", "dlq_sk"),
}

# Which indexes each status allows. A READY_TO_SHIP shipment is in at most one of its
# two (ready: queued; invisible: delayed); the other statuses are in exactly the listed
# ones (required) or in none.
_INDEXES_REQUIRED = {
    ShipmentStatus.UNDER_CONSTRUCTION: set(),
    ShipmentStatus.READY_TO_SHIP: set(),
    ShipmentStatus.PROCESSING: {"invisible"},
    ShipmentStatus.COMPLETED: set(),
    ShipmentStatus.IN_DLQ: {"dlq"},
}
_INDEXES_ALLOWED = {
    ShipmentStatus.UNDER_CONSTRUCTION: set(),
    ShipmentStatus.READY_TO_SHIP: {"ready", "invisible"},
    ShipmentStatus.PROCESSING: {"invisible"},
    ShipmentStatus.COMPLETED: set(),
    ShipmentStatus.IN_DLQ: {"dlq"},
}


def check_shipments(items: list[dict]) -> list[Violation]:
    """Every violation among the items of the shipments table, in id order."""
    found: list[Violation] = []
    for item in sorted(items, key=lambda i: str(i.get("id", ""))):
        found.extend(check_shipment(item))
    return found


def check_shipment(item: dict) -> list[Violation]:
    """The invariants of one shipment item: a known status, index attributes that agree
    with it (one state only), complete index pairs in the shipment's queue, sort keys as
    the code writes them, and a receipt and deadline exactly when they belong."""
    sid = str(item.get("id", "?"))
    subject = f"shipment {sid}"
    status = item.get("status")
    queue = item.get("queue", DEFAULT_QUEUE)
    found: list[Violation] = []

    def add(check_name: str, detail: str) -> None:
        found.append(Violation(f"shipments.{check_name}", subject, detail))

    def has(attr: str) -> bool:
        return item.get(attr) is not None

    known = status in ShipmentStatus.ALL
    if not known:
        add("status", f"unknown status {status!r} (expected one of {', '.join(ShipmentStatus.ALL)})")

    # each index pair: complete, in the shipment's queue, with the sort key the code writes
    present = set()
    for index, (q_attr, sk_attr) in _PAIRS.items():
        if not (has(q_attr) or has(sk_attr)):
            continue
        present.add(index)
        if not has(sk_attr):
            add("index", f"{q_attr} without {sk_attr} (an incomplete {index} index entry)")
        elif not has(q_attr):
            add("index", f"{sk_attr} without {q_attr} (an incomplete {index} index entry)")
        if has(q_attr) and item[q_attr] != queue:
            add("index", f"{q_attr} is {item[q_attr]!r} but the shipment's queue is {queue!r}")
        if has(sk_attr):
            expected, why = _expected_sort_key(index, item, sid)
            if expected is None:
                add("sort_key", f"{sk_attr} is {item[sk_attr]!r} but {why}")
            elif item[sk_attr] != expected:
                add("sort_key", f"{sk_attr} is {item[sk_attr]!r}, expected {expected!r} ({why})")

    # the indexes agree with the status (exactly one state)
    if known:
        label = ShipmentStatus.LABELS[status][0].lower() + ShipmentStatus.LABELS[status][1:]  # "in DLQ"
        extra = sorted(present - _INDEXES_ALLOWED[status])
        for index in extra:
            add("index", f"{label} but in the {index} index ({', '.join(a for a in _PAIRS[index] if has(a))})")
        for index in sorted(_INDEXES_REQUIRED[status] - present):
            add("index", f"{label} but not in the {index} index (no {' or '.join(_PAIRS[index])})")
        if status == ShipmentStatus.READY_TO_SHIP and {"ready", "invisible"} <= present:
            add("index", "ready to ship but both queued and delayed: in the ready and the invisible index")

        # lease attributes: a receipt only while processing; a deadline exactly while in `invisible`
        if status == ShipmentStatus.PROCESSING:
            if not has("receipt"):
                add("lease", "processing without a receipt")
            if not has("visible_at"):
                add("lease", "processing without a deadline (visible_at)")
        elif has("receipt"):
            add("lease", f"{label} but holds a receipt ({item['receipt']})")
        if has("visible_at") and "invisible" not in present and status != ShipmentStatus.PROCESSING:
            add("lease", f"{label} with visible_at {item['visible_at']} but not in the invisible index")
        if status == ShipmentStatus.IN_DLQ:
            for attr in ("dlq_at", "dlq_reason"):
                if not has(attr):
                    add("index", f"in DLQ without {attr}")
    return found


def _expected_sort_key(index: str, item: dict, sid: str) -> tuple[str | None, str]:
    """The sort key the code writes for this index, and what it is made of (or why it
    cannot be known)."""
    if index == "ready":
        enqueued_at = item.get("enqueued_at")
        if not enqueued_at:
            return None, "the shipment has no enqueued_at"
        try:
            priority = int(item.get("priority", 0))
        except (TypeError, ValueError):
            return None, f"the priority {item.get('priority')!r} is not a number"
        return ready_sort_key(priority, enqueued_at, sid), f"priority {priority}, enqueued at {enqueued_at}"
    moment_attr = "visible_at" if index == "invisible" else "dlq_at"
    moment = item.get(moment_attr)
    if not moment:
        return None, f"the shipment has no {moment_attr}"
    return timed_sort_key(moment, sid), f"{moment_attr} {moment}"


def shipment_counts(items: list[dict]) -> dict[str, int]:
    """How many shipments, and how many in each state (`shipments_<state>`)."""
    result = {"shipments": len(items), "shipments_unknown": 0}
    result.update({f"shipments_{state}": 0 for state in SHIPMENT_STATES})
    for item in items:
        if item.get("status") not in ShipmentStatus.ALL or "id" not in item:
            result["shipments_unknown"] += 1
            continue
        result[f"shipments_{shipment_from_item(item).state}"] += 1
    return result


def counts(snap: _Snapshot) -> dict[str, int]:
    agent_status = Counter(a.get("status") for a in snap.agents.values())
    call_status = Counter(c.get("status") for c in snap.calls.values())
    return {
        "agents": len(snap.agents),
        "agents_queued": agent_status[AgentStatus.QUEUED],
        "agents_attending": agent_status[AgentStatus.ATTENDING],
        "queues": len(snap.metas),
        "messages": sum(len(items) for items in snap.messages.values()),
        "calls": len(snap.calls),
        "calls_waiting": call_status[CallStatus.WAITING],
        "calls_assigned": call_status[CallStatus.ASSIGNED],
        "calls_ended": call_status[CallStatus.ENDED],
        "waiting_items": len(snap.waiting),
        "other_items": snap.other,
        **shipment_counts(snap.shipments),
    }


def audit_once(db: Dynamo | None = None, catalog: SkillCatalog | None = None) -> AuditReport:
    """One pass: scan both tables, check, count."""
    db = db or default()
    catalog = catalog or SkillCatalog.from_settings()
    snap = scan_table(db)
    snap.shipments = scan_shipments(db)
    return AuditReport(violations=check(snap, catalog), counts=counts(snap))


def audit(
    db: Dynamo | None = None,
    catalog: SkillCatalog | None = None,
    *,
    passes: int = DEFAULT_PASSES,
    pause: float = DEFAULT_PAUSE,
    sleep: Callable[[float], None] = time.sleep,
) -> AuditReport:
    """Audit the table; while violations are found, re-run up to `passes` passes in all
    and keep only the violations found in every pass (as the last pass words them)."""
    db = db or default()
    catalog = catalog or SkillCatalog.from_settings()
    report = audit_once(db, catalog)
    persistent = {v.key for v in report.violations}
    done = 1
    while persistent and done < passes:
        sleep(pause)
        report = audit_once(db, catalog)
        done += 1
        persistent &= {v.key for v in report.violations}
    report.violations = [v for v in report.violations if v.key in persistent]
    report.passes = done
    return report


def find_violations(db: Dynamo | None = None, catalog: SkillCatalog | None = None, **options) -> list[Violation]:
    """The persistent violations only (see `audit`)."""
    return audit(db, catalog, **options).violations
