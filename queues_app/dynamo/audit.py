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
            f"{c.get('calls_ended', 0)} ended), {c.get('waiting_items', 0)} WAITING items"
        )


@dataclass
class _Snapshot:
    agents: dict[str, dict] = field(default_factory=dict)  # agent_id -> item
    metas: dict[str, dict] = field(default_factory=dict)  # queue name -> item
    messages: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))  # queue name -> items
    waiting: list[dict] = field(default_factory=list)
    calls: dict[str, dict] = field(default_factory=dict)  # call_id -> item
    other: int = 0


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
    return found


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
    }


def audit_once(db: Dynamo | None = None, catalog: SkillCatalog | None = None) -> AuditReport:
    """One pass: scan, check, count."""
    db = db or default()
    catalog = catalog or SkillCatalog.from_settings()
    snap = scan_table(db)
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
