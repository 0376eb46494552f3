"""The call center's invariants, checked on a snapshot of the whole `callcenter` table
(the checks are listed in docs/architecture.md)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from queues_app.agents.records import AgentStatus
from queues_app.agents.skills import SkillCatalog
from queues_app.calls.records import CallStatus
from queues_app.centre import keys
from queues_app.ddb.client import Dynamo
from queues_app.ddb.scan import Violation, scan_all


@dataclass
class CallCenterSnapshot:
    agents: dict[str, dict] = field(default_factory=dict)  # agent_id -> item
    metas: dict[str, dict] = field(default_factory=dict)  # queue name -> depth and version, summed
    # queue name -> items, from every sub-queue (and from the unsplit partition of an earlier version)
    messages: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))
    waiting: list[dict] = field(default_factory=list)
    # (WAIT#... partition, copy) -> the stored count
    waiting_counts: dict[tuple[str, int], int] = field(default_factory=dict)
    calls: dict[str, dict] = field(default_factory=dict)  # call_id -> item
    on_lines: dict[str, int] = field(default_factory=dict)  # line id -> its stored count of waiting callers
    other: int = 0


def read_callcenter(db: Dynamo) -> CallCenterSnapshot:
    """Every item of the callcenter table, grouped by kind."""
    snap = CallCenterSnapshot()
    for item in scan_all(db, "callcenter"):
        _sort_item(snap, item)
    return snap


def _sort_item(snap: CallCenterSnapshot, item: dict) -> None:
    pk, sk = item.get("pk", ""), item.get("sk", "")
    if pk.startswith(keys.AGENTS_PK) and sk.startswith(keys.AGENT_PREFIX):
        snap.agents[keys.agent_id_from_sk(sk)] = item
    elif pk.startswith(keys.QUEUE_META_PREFIX) or pk == keys.QUEUES_PK:
        # A queue's metadata is the sum of its shards (and of an item not yet moved).
        meta = snap.metas.setdefault(sk, {"depth": 0, "version": 0})
        meta["depth"] += int(item.get("depth", 0))
        meta["version"] += int(item.get("version", 0))
    elif pk.startswith(keys.QUEUE_PREFIX):
        snap.messages[keys.queue_of_partition(pk)].append(item)
    elif pk.startswith(keys.WAIT_PREFIX) or pk == keys.OLD_WAITING_PK:
        snap.waiting.append(item)
    elif pk.startswith(keys.WAIT_COUNT_PREFIX):
        snap.waiting_counts[keys.waiting_count_copy(pk)] = int(item.get("waiting", 0))
    elif pk.startswith(keys.CALL_PREFIX) and sk == keys.CALL_SK:
        snap.calls[pk.removeprefix(keys.CALL_PREFIX)] = item
    elif pk.startswith(keys.LINE_WAITING_PREFIX):
        snap.on_lines[pk.removeprefix(keys.LINE_WAITING_PREFIX)] = int(item.get("waiting", 0))
    else:
        snap.other += 1


def check(snap: CallCenterSnapshot, catalog: SkillCatalog) -> list[Violation]:
    """Every invariant violation in one snapshot of the table, check by check."""
    # Keyed by partition, so that a message in the wrong sub-queue is not taken for the right one.
    present = {(item["pk"], item["sk"]): item for items in snap.messages.values() for item in items}
    expected: set[tuple[str, str]] = set()
    return [
        *_depths(snap),
        *_unsplit_queues(snap),
        *_queued_messages(snap, catalog, present, expected),
        *_orphans(snap, present, expected),
        *_status_partitions(snap),
        *_attending(snap, present),
        *_waiting_items(snap),
        *_line_counts(snap),
        *_line_partitions(snap, catalog),
        *_call_states(snap),
        *_on_lines(snap),
        *_holders(snap),
    ]


def _depths(snap: CallCenterSnapshot) -> Iterator[Violation]:
    """Each queue's metadata says how many messages it holds."""
    for name in sorted(set(snap.metas) | set(snap.messages)):
        stored = int(snap.metas.get(name, {}).get("depth", 0))
        actual = len(snap.messages.get(name, []))
        if stored != actual:
            where = "metadata" if name in snap.metas else "no metadata item, so"
            detail = f"{where} depth {stored} but {actual} message item(s) in the queue (off by {stored - actual:+d})"
            yield Violation("depth", name, detail)


def _unsplit_queues(snap: CallCenterSnapshot) -> Iterator[Violation]:
    for name, items in sorted(snap.messages.items()):
        unsplit = sum(1 for item in items if item["pk"] == name)
        if unsplit:
            detail = (
                f"{unsplit} message(s) in the queue's partition from before it was split: run `dynamo_tables create`"
            )
            yield Violation("messages", name, detail)


def _queued_messages(
    snap: CallCenterSnapshot, catalog: SkillCatalog, present: dict, expected: set[tuple[str, str]]
) -> Iterator[Violation]:
    """Every queued agent has its message in each queue it fits, naming it; the keys of the
    messages that should be there go into `expected`."""
    for agent_id, agent in sorted(snap.agents.items()):
        if agent.get("status") != AgentStatus.QUEUED:
            continue
        token = agent.get("queue_token")
        if not token:
            yield Violation("messages", f"agent {agent_id}", "queued without a queue_token")
            continue
        try:
            combos = catalog.combinations(agent.get("skills") or {})
        except KeyError as exc:
            yield Violation("messages", f"agent {agent_id}", f"skills miss the dimension {exc}")
            continue
        for combo in combos:
            name = keys.queue_name(combo)
            message_key = (keys.queue_message(combo, token)["pk"], token)
            if message_key not in present and (name, token) in present:
                message_key = (name, token)  # not moved yet: reported with its queue
            expected.add(message_key)
            message = present.get(message_key)
            if message is None:
                detail = f"queued with token {token} but has no message item there"
                yield Violation("messages", f"agent {agent_id} in {name}", detail)
            elif message.get("agent_id") != agent_id:
                detail = f"belongs to agent {agent_id} but names agent {message.get('agent_id')}"
                yield Violation("messages", f"message {message_key[0]} / {token}", detail)


def _orphans(snap: CallCenterSnapshot, present: dict, expected: set[tuple[str, str]]) -> Iterator[Violation]:
    """No message that no queued agent owns, saying why."""
    for (pk, sk), item in sorted(present.items()):
        if (pk, sk) in expected:
            continue
        owner_id = item.get("agent_id")
        owner = snap.agents.get(owner_id or "")
        combo = tuple(keys.queue_of_partition(pk).removeprefix(keys.QUEUE_PREFIX).split("#"))
        if owner is None:
            why = f"agent {owner_id} does not exist"
        elif owner.get("status") != AgentStatus.QUEUED:
            why = f"agent {owner_id} is {owner.get('status')}, not queued"
        elif owner.get("queue_token") != sk:
            why = f"agent {owner_id} is queued with another token ({owner.get('queue_token')})"
        elif keys.queue_message(combo, sk)["pk"] != pk:
            why = f"in the wrong sub-queue: its token puts it in {keys.queue_message(combo, sk)['pk']}"
        else:
            why = f"agent {owner_id}'s skills do not fit this queue"
        yield Violation("orphan", f"message {pk} / {sk}", f"no queued agent owns it: {why}")


def _status_partitions(snap: CallCenterSnapshot) -> Iterator[Violation]:
    """Each agent's partition of the status index says its status."""
    for agent_id, agent in sorted(snap.agents.items()):
        expected_q = keys.status_partition(agent.get("status", ""), agent_id)
        if agent.get("status_q") != expected_q:
            detail = f"status_q is {agent.get('status_q')}, its status says {expected_q}"
            yield Violation("status_q", f"agent {agent_id}", detail)


def _attending(snap: CallCenterSnapshot, present: dict) -> Iterator[Violation]:
    """An agent on a call (ringing or attending) has no message left and holds a call
    assigned to them; a ringing one's call is still offered."""
    messages_of: dict[str, list[tuple[str, str]]] = defaultdict(list)  # agent_id -> message keys
    for (pk, sk), item in present.items():
        messages_of[item.get("agent_id") or sk.rsplit("#", 1)[-1]].append((pk, sk))
    for agent_id, agent in sorted(snap.agents.items()):
        if agent.get("status") not in AgentStatus.ON_A_CALL:
            continue
        subject = f"agent {agent_id}"
        held = messages_of.get(agent_id, [])
        if held:
            listed = ", ".join(f"{n} / {s}" for n, s in sorted(held))
            yield Violation("attending", subject, f"attending but still has {len(held)} message item(s) ({listed})")
        call_id = agent.get("call_id")
        call = snap.calls.get(call_id or "")
        if not call_id:
            yield Violation("attending", subject, "attending without a call_id")
        elif call is None:
            yield Violation("attending", subject, f"attending call {call_id}, which does not exist")
        elif call.get("status") != CallStatus.ASSIGNED or call.get("agent_id") != agent_id:
            detail = f"attending call {call_id}, which is {call.get('status')} with agent {call.get('agent_id')}"
            yield Violation("attending", subject, detail)
        elif agent.get("status") == AgentStatus.RINGING and not call.get("offer_sk"):
            yield Violation("attending", subject, f"ringing with call {call_id}, which is not offered (answered)")


def _waiting_items(snap: CallCenterSnapshot) -> Iterator[Violation]:
    """Each caller's place in line points at a waiting call that waits there."""
    for item in snap.waiting:
        call_id, subject = item.get("call_id", ""), f"WAITING {item['sk']}"
        call = snap.calls.get(call_id)
        if call is None:
            yield Violation("calls", subject, f"points at call {call_id}, which does not exist")
        elif call.get("status") != CallStatus.WAITING:
            yield Violation("calls", subject, f"points at call {call_id}, which is {call.get('status')}")
        elif call.get("wait_sk") != item["sk"]:
            yield Violation("calls", subject, f"points at call {call_id}, which waits under {call.get('wait_sk')}")


def _line_counts(snap: CallCenterSnapshot) -> Iterator[Violation]:
    """Every copy of a partition's count says how many callers wait in it."""
    in_partition = Counter(item["pk"] for item in snap.waiting)
    for partition in sorted(set(in_partition) | {p for p, _ in snap.waiting_counts}):
        if partition == keys.OLD_WAITING_PK:
            detail = f"{in_partition[partition]} caller(s) in the old line: run `dynamo_tables create`"
            yield Violation("line", partition, detail)
            continue
        for copy in range(keys.WAIT_COUNT_COPIES):
            stored = snap.waiting_counts.get((partition, copy), 0)
            if in_partition[partition] != stored:
                which = f"count copy {copy}" if copy else "count"
                yield Violation(
                    "line", partition, f"{which} says {stored}, {in_partition[partition]} caller(s) wait there"
                )


def _line_partitions(snap: CallCenterSnapshot, catalog: SkillCatalog) -> Iterator[Violation]:
    """A waiting caller waits in the partition of their preferences."""
    for item in snap.waiting:
        call = snap.calls.get(item.get("call_id", ""))
        if call and call.get("status") == CallStatus.WAITING and item["pk"] != keys.OLD_WAITING_PK:
            partition = keys.waiting_caller(keys.wanted(catalog.names, call.get("preferences") or {}), "")["pk"]
            if item["pk"] != partition:
                detail = f"waits in {item['pk']}, its preferences say {partition}"
                yield Violation("line", f"call {item.get('call_id')}", detail)


# Out of line with no agent: ended unanswered, or a callback waiting for its time (scheduled, or to be tried again).
UNANSWERED = (
    CallStatus.ABANDONED,
    CallStatus.OVERFLOWED,
    CallStatus.CALLBACK_RETRY,
    CallStatus.CALLBACK_SCHEDULED,
    CallStatus.CALLBACK_FAILED,
)


def _call_states(snap: CallCenterSnapshot) -> Iterator[Violation]:
    """A waiting call has exactly its place in line and no agent; any other has no place."""
    waiting_for: dict[str, list[dict]] = defaultdict(list)  # call_id -> its places in line
    for item in snap.waiting:
        waiting_for[item.get("call_id", "")].append(item)
    for call_id, call in sorted(snap.calls.items()):
        status, items, subject = call.get("status"), waiting_for.get(call_id, []), f"call {call_id}"
        if status == CallStatus.WAITING:
            if call.get("agent_id"):
                yield Violation("calls", subject, f"waiting but has agent {call['agent_id']}")
            wait_sk = call.get("wait_sk")
            if not any(i["sk"] == wait_sk for i in items) or len(items) != 1:
                listed = f" ({', '.join(sorted(i['sk'] for i in items))})" if items else ""
                yield Violation(
                    "calls", subject, f"waiting under {wait_sk} but has {len(items)} WAITING item(s){listed}"
                )
        elif status in (CallStatus.ASSIGNED, CallStatus.ENDED, *UNANSWERED):
            unanswered = status in UNANSWERED
            if items:
                yield Violation("calls", subject, f"{status} but still has {len(items)} WAITING item(s)")
            if unanswered and call.get("agent_id"):
                yield Violation("calls", subject, f"{status} but has agent {call['agent_id']}")
            elif not unanswered and not call.get("agent_id"):
                yield Violation("calls", subject, f"{status} without an agent_id")
        else:
            yield Violation("calls", subject, f"unknown status {status!r}")


def _on_lines(snap: CallCenterSnapshot) -> Iterator[Violation]:
    """Each line's count says how many callers wait on it (calls placed before lines are on none)."""
    actual: dict[str, int] = defaultdict(int)
    for call in snap.calls.values():
        if call.get("status") == CallStatus.WAITING and call.get("line"):
            actual[call["line"]] += 1
    for line_id in sorted(set(actual) | set(snap.on_lines)):
        if snap.on_lines.get(line_id, 0) != actual.get(line_id, 0):
            detail = f"counts {snap.on_lines.get(line_id, 0)} waiting, {actual.get(line_id, 0)} wait on it"
            yield Violation("lines", f"line {line_id}", detail)


def _holders(snap: CallCenterSnapshot) -> Iterator[Violation]:
    """One assigned call per agent, held by an agent attending exactly it."""
    held_by: dict[str, list[str]] = defaultdict(list)
    for call_id, call in sorted(snap.calls.items()):
        if call.get("status") == CallStatus.ASSIGNED and call.get("agent_id"):
            held_by[call["agent_id"]].append(call_id)
    for agent_id, call_ids in sorted(held_by.items()):
        if len(call_ids) > 1:
            yield Violation(
                "holder", f"agent {agent_id}", f"holds {len(call_ids)} assigned calls: {', '.join(call_ids)}"
            )
        holder = snap.agents.get(agent_id)
        for call_id in call_ids:
            if holder is None:
                yield Violation("holder", f"call {call_id}", f"assigned to agent {agent_id}, who does not exist")
            elif holder.get("status") not in AgentStatus.ON_A_CALL or holder.get("call_id") != call_id:
                state = f"{holder.get('status')} with call_id {holder.get('call_id')}"
                yield Violation("holder", f"call {call_id}", f"assigned to agent {agent_id}, who is {state}")


def counts(snap: CallCenterSnapshot) -> dict[str, int]:
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
