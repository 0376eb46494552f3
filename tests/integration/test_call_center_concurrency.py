"""Routing under real concurrency, on DynamoDB Local (moto is not thread-safe for
transactions, so none of this runs on moto).

1. Many threads create callers while others queue and release agents, all started
   together; afterwards no agent was given to two callers at once, every call was
   assigned at most once (or still waits), and the audit finds nothing. A drain
   phase then serves every caller some agent can take and audits again.
2. The article's claim that optimistic locking "ensures all race conditions are
   addressed": its enqueue step, which writes without a condition on the agent's
   status, queues an agent twice when two enqueuers interleave, and its matcher then
   gives that agent to two callers. `CallCenter.make_available` refuses the second
   enqueue under the same interleaving.
"""

from __future__ import annotations

import copy
import itertools
import random
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.agents.skills import fits
from queues_app.calls.records import Call, CallStatus
from queues_app.calls.store import call_from_item, call_to_item
from queues_app.centre import keys
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.monitoring import invariants
from queues_app.routing.queues import queue_heads

SEED = 20240613
N_AGENTS = 60
CALLER_THREADS = 8
CALLS_PER_CALLER_THREAD = 25  # 200 calls in all
# Each caller thread makes this many calls however long they take (56 in all, the 50 the
# test asserts and a few more): the time limit only cuts the rest short on a slow machine.
MIN_CALLS_PER_CALLER_THREAD = 7
AGENT_THREADS = 4
OPS_PER_AGENT_THREAD = 400
TIME_LIMIT = 10.0  # seconds for the concurrent phase, whatever the op counts
LANGUAGES = ["English", "French", "Spanish"]
GENDERS = ["F", "M", "X"]


@dataclass
class Journal:
    """What the threads saw, appended from many threads (list.append is atomic)."""

    call_ids: list[str] = field(default_factory=list)
    assignments: list[tuple[str, str, str, str]] = field(default_factory=list)  # call, agent, at, by whom
    agent_side: list[tuple[str, str, str]] = field(default_factory=list)  # op's agent, call, call's agent
    conflicts: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)

    def assigned(self, call, by: str) -> None:
        if call is not None and call.status == CallStatus.ASSIGNED:
            self.assignments.append((call.call_id, call.agent_id, call.assigned_at, by))


def make_agents(db, rng) -> dict[str, dict]:
    directory = Agents(db)
    made = {}
    for n in range(N_AGENTS):
        skills = {"language": sorted(rng.sample(LANGUAGES, rng.randint(1, 3))), "gender": [rng.choice(GENDERS)]}
        agent = directory.create(f"Agent {n:02d}", skills)
        made[agent.agent_id] = agent.skills
    return made


def caller_thread(router: CallCenter, index: int, start: threading.Barrier, deadline: float, journal: Journal):
    rng = random.Random(SEED * 100 + index)
    start.wait()
    for made in range(CALLS_PER_CALLER_THREAD):
        if made >= MIN_CALLS_PER_CALLER_THREAD and time.monotonic() > deadline:
            return
        prefs = {"language": rng.choice(LANGUAGES + ["any"]), "gender": rng.choice(GENDERS + ["any"])}
        try:
            call, created = router.create_call(prefs)
        except Exception as exc:  # noqa: BLE001 - every unexpected error is a finding
            journal.unexpected.append(f"create_call({prefs}): {exc!r}")
            continue
        if not created:
            journal.unexpected.append(f"create_call({prefs}) returned an existing call {call.call_id}")
        journal.call_ids.append(call.call_id)
        journal.assigned(call, "caller")
        journal.ops.append("create_call")
        time.sleep(rng.uniform(0, 0.004))


def agent_thread(
    router: CallCenter,
    index: int,
    agent_ids: list[str],
    start: threading.Barrier,
    deadline: float,
    callers_done: threading.Event,
    journal: Journal,
):
    rng = random.Random(SEED * 1000 + index)
    start.wait()
    for _ in range(OPS_PER_AGENT_THREAD):
        if time.monotonic() > deadline or callers_done.is_set():
            return
        # Half the operations go to a few "hot" agents, so that threads often race for the same agent.
        agent_id = rng.choice(agent_ids[:12] if rng.random() < 0.5 else agent_ids)
        try:
            status = router.agents.get(agent_id).status
            if status == AgentStatus.ATTENDING:
                time.sleep(rng.uniform(0, 0.01))  # the call lasts a little
                then = rng.choice(["queue", "queue", AgentStatus.WRAP_UP, AgentStatus.OFFLINE])
                _agent, call = router.release(agent_id, then=then)
                journal.ops.append(f"release:{then}")
            else:
                _agent, call = router.make_available(agent_id)
                journal.ops.append("make_available")
            if call is not None:
                journal.agent_side.append((agent_id, call.call_id, call.agent_id))
                journal.assigned(call, "agent")
        except errors.Conflict as exc:  # already queued or attending, or changed meanwhile: normal
            journal.conflicts.append(str(exc))
        except Exception as exc:  # noqa: BLE001
            journal.unexpected.append(f"agent op on {agent_id}: {exc!r}")


def read_calls(router: CallCenter, call_ids) -> dict[str, Call]:
    """Every call item, read back by id (strongly consistent BatchGetItem, 100 at a time)."""
    calls, ids = {}, sorted(set(call_ids))
    for first in range(0, len(ids), 100):
        pending = {
            router.table.name: {
                "Keys": [marshal(keys.call(i)) for i in ids[first : first + 100]],
                "ConsistentRead": True,
            }
        }
        while pending:
            response = router.db.call("batch_get_item", RequestItems=pending)
            for raw in response["Responses"].get(router.table.name, []):
                call = call_from_item(unmarshal(raw))
                calls[call.call_id] = call
            pending = response.get("UnprocessedKeys") or {}
    missing = set(ids) - set(calls)
    assert not missing, f"calls created but not stored: {sorted(missing)[:5]}"
    return calls


def check_calls(calls: dict[str, Call]) -> list[str]:
    """Every call is waiting (no agent) or was assigned once (agent, time; ended ones have ended_at)."""
    problems = []
    for call in calls.values():
        if call.status not in (CallStatus.WAITING, CallStatus.ASSIGNED, CallStatus.ENDED):
            problems.append(f"call {call.call_id}: status {call.status}")
        elif call.status == CallStatus.WAITING:
            if call.agent_id or call.assigned_at:
                problems.append(f"call {call.call_id}: waiting but has agent {call.agent_id}")
        else:
            if not call.agent_id or not call.assigned_at:
                problems.append(f"call {call.call_id}: {call.status} without agent or assigned_at")
            if call.status == CallStatus.ENDED and not call.ended_at:
                problems.append(f"call {call.call_id}: ended without ended_at")
    return problems


def check_one_call_per_agent(calls: dict[str, Call]) -> list[str]:
    """Per agent, the intervals [assigned_at, ended_at) never overlap and at most one is open."""
    problems = []
    by_agent = defaultdict(list)
    for call in calls.values():
        if call.status in (CallStatus.ASSIGNED, CallStatus.ENDED):
            by_agent[call.agent_id].append(call)
    for agent_id, held in by_agent.items():
        held.sort(key=lambda c: c.assigned_at)
        open_calls = [c.call_id for c in held if c.status == CallStatus.ASSIGNED]
        if len(open_calls) > 1:
            problems.append(f"agent {agent_id} holds {len(open_calls)} calls: {open_calls}")
        for earlier, later in itertools.pairwise(held):
            if earlier.ended_at is None or earlier.ended_at > later.assigned_at:
                problems.append(
                    f"agent {agent_id}: call {earlier.call_id} [{earlier.assigned_at}, {earlier.ended_at}) "
                    f"overlaps call {later.call_id} from {later.assigned_at}"
                )
    return problems


def check_journal_matches(journal: Journal, calls: dict[str, Call]) -> list[str]:
    """What the operations returned agrees with the stored calls: one assignment per call."""
    problems = []
    seen = defaultdict(set)
    for call_id, agent_id, assigned_at, _by in journal.assignments:
        seen[call_id].add((agent_id, assigned_at))
    for call_id, assignments in seen.items():
        stored = calls.get(call_id)
        if len(assignments) > 1:
            problems.append(f"call {call_id} was returned as assigned {len(assignments)} ways: {assignments}")
        if stored is None:
            problems.append(f"call {call_id} returned as assigned but never stored")
        elif {(stored.agent_id, stored.assigned_at)} != assignments:
            problems.append(f"call {call_id}: returned {assignments}, stored {stored.agent_id} {stored.assigned_at}")
    return problems


def check_agent_side_returns(journal: Journal) -> list[str]:
    """A call returned by make_available/release(then=queue) is one the agent took."""
    return [
        f"operation on agent {agent_id} returned call {call_id}, which went to agent {holder}"
        for agent_id, call_id, holder in journal.agent_side
        if holder != agent_id
    ]


def missed_wakeups(router: CallCenter, calls: dict[str, Call]) -> list[str]:
    """At rest, no caller waits while a queued agent who fits them sits in a queue."""
    queued = [a for a in Agents(router.db, router.catalog).list(limit=1000).items if a.status == AgentStatus.QUEUED]
    problems = []
    for call in calls.values():
        if call.status != CallStatus.WAITING:
            continue
        for agent in queued:
            if fits(agent.skills, call.preferences):
                problems.append(
                    f"call {call.call_id} {call.preferences} waits while {agent.agent_id} {agent.skills} is queued"
                )
    return problems


def all_call_ids(db) -> set[str]:
    ids, start = set(), None
    while True:
        params = {
            "TableName": db.table("callcenter"),
            "ConsistentRead": True,
            "FilterExpression": "begins_with(pk, :call)",
            "ExpressionAttributeValues": {":call": {"S": "CALL#"}},
        }
        if start:
            params["ExclusiveStartKey"] = start
        response = db.call("scan", **params)
        ids |= {unmarshal(i)["call_id"] for i in response.get("Items", [])}
        start = response.get("LastEvaluatedKey")
        if not start:
            return ids


def assert_consistent(router: CallCenter, journal: Journal, capsys, context: str) -> dict[str, Call]:
    stored_ids = all_call_ids(router.db)
    assert stored_ids == set(journal.call_ids), f"calls stored and calls created differ ({context})"
    calls = read_calls(router, journal.call_ids)
    problems = (
        check_calls(calls)
        + check_one_call_per_agent(calls)
        + check_journal_matches(journal, calls)
        + check_agent_side_returns(journal)
    )
    assert problems == [], context
    assert [str(v) for v in invariants.find_violations(router.db, router.catalog)] == [], context
    capsys.readouterr()
    call_command("check_invariants")
    assert capsys.readouterr().out.startswith("OK: no violations")
    return calls


def waiting_preferences(router: CallCenter) -> list[dict]:
    """The preferences of every waiting caller, from the WAITING items (one Query a page)."""
    found, cursor = [], None
    while True:
        page, cursor = router.line.waiting_calls(limit=500, cursor=cursor)
        found += [{name: (item.get("preferences") or {}).get(name) for name in router.catalog.names} for item in page]
        if not cursor:
            return found


def drain(router: CallCenter, journal: Journal) -> int:
    """Bring back every agent who fits a waiting caller (release attending ones to the
    queue, make offline and wrap-up ones available) until no waiting caller fits any
    agent. Returns the number of rounds."""
    for rounds in range(1, 100):
        agents = Agents(router.db, router.catalog).list(limit=1000).items
        servable = [p for p in waiting_preferences(router) if any(fits(a.skills, p) for a in agents)]
        if not servable:
            return rounds
        progress = False
        for agent in agents:
            if agent.status == AgentStatus.QUEUED or not any(fits(agent.skills, p) for p in servable):
                continue
            if agent.status == AgentStatus.ATTENDING:
                _agent, call = router.release(agent.agent_id, then="queue")
            else:
                _agent, call = router.make_available(agent.agent_id)
            if call is not None:
                progress = True
                journal.agent_side.append((agent.agent_id, call.call_id, call.agent_id))
                journal.assigned(call, "drain")
        assert progress, f"a drain round served nobody while {len(servable)} servable callers wait"
    raise AssertionError("the drain did not end")


def test_concurrent_callers_and_agents_keep_every_invariant(local_db, capsys):
    rng = random.Random(SEED)
    agent_skills = make_agents(local_db, rng)
    agent_ids = sorted(agent_skills)
    journal = Journal()
    start = threading.Barrier(CALLER_THREADS + AGENT_THREADS, timeout=30)
    callers_done = threading.Event()
    began = time.monotonic()
    deadline = began + TIME_LIMIT
    callers = [
        threading.Thread(target=caller_thread, args=(CallCenter(local_db), i, start, deadline, journal))
        for i in range(CALLER_THREADS)
    ]
    agents = [
        threading.Thread(
            target=agent_thread, args=(CallCenter(local_db), i, agent_ids, start, deadline, callers_done, journal)
        )
        for i in range(AGENT_THREADS)
    ]
    for thread in callers + agents:
        thread.start()
    for thread in callers:
        thread.join(TIME_LIMIT + 15)
    callers_done.set()
    for thread in agents:
        thread.join(15)
    assert not any(t.is_alive() for t in callers + agents), "a thread did not finish"
    elapsed = time.monotonic() - began

    assigned_during_run = len({a[0] for a in journal.assignments})
    run = (
        f"{len(journal.call_ids)} calls, {len(journal.ops)} operations, {len(journal.conflicts)} conflicts, "
        f"{assigned_during_run} calls assigned, in {elapsed:.1f}s"
    )
    assert journal.unexpected == [], run
    assert len(journal.call_ids) >= 50, run
    assert assigned_during_run > 0, run
    assert any(by == "agent" for *_rest, by in journal.assignments), f"no agent took a waiting caller; {run}"

    calls = assert_consistent(CallCenter(local_db), journal, capsys, run)
    assert missed_wakeups(CallCenter(local_db), calls) == [], run

    router = CallCenter(local_db)
    waiting_before = sum(c.status == CallStatus.WAITING for c in calls.values())
    rounds = drain(router, journal)
    drained = f"{run}; drain: {waiting_before} were waiting, {rounds} rounds"
    calls = assert_consistent(router, journal, capsys, drained)
    still = [c for c in calls.values() if c.status == CallStatus.WAITING]
    assert all(not any(fits(s, c.preferences) for s in agent_skills.values()) for c in still), drained


# --- the article's enqueue: no condition on the agent's status ---------------------------------


def article_enqueue_read(db, agent_id: str) -> dict | None:
    """addAvailAgentsToQueue, step 1: find the agent with status available."""
    item = unmarshal(
        db.call(
            "get_item", TableName=db.table("callcenter"), Key=marshal(keys.agent(agent_id)), ConsistentRead=True
        ).get("Item")
    )
    return item if item.get("status") == AgentStatus.AVAILABLE else None


def article_enqueue_write(db, catalog, agent: dict, stamp: str) -> str:
    """Step 2: one TransactWriteItems putting the messages, counting them in the metadata
    and setting the agent queued, with no condition on the agent's status."""
    table, token = db.table("callcenter"), keys.queue_token(stamp, agent["agent_id"])
    actions = [
        {
            "Update": {
                "TableName": table,
                "Key": marshal(keys.agent(agent["agent_id"])),
                "UpdateExpression": "SET #s = :queued, status_q = :q, queue_token = :token, queued_at = :at",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": marshal(
                    {
                        ":queued": AgentStatus.QUEUED,
                        ":q": keys.status_partition(AgentStatus.QUEUED, agent["agent_id"]),
                        ":token": token,
                        ":at": stamp,
                    }
                ),
            }
        }
    ]
    for combo in catalog.combinations(agent["skills"]):
        actions.append(
            {
                "Put": {
                    "TableName": table,
                    "Item": marshal(
                        {
                            **keys.queue_message(combo, token),
                            "type": "message",
                            "agent_id": agent["agent_id"],
                            "name": agent["name"],
                            "skills": agent["skills"],
                        }
                    ),
                }
            }
        )
        actions.append(
            {
                "Update": {
                    "TableName": table,
                    "Key": marshal(keys.queue_meta(combo)),
                    "UpdateExpression": "ADD #d :one, version :one",
                    "ExpressionAttributeNames": {"#d": "depth"},
                    "ExpressionAttributeValues": marshal({":one": 1}),
                }
            }
        )
    db.call("transact_write_items", TransactItems=actions)
    return token


def article_match(db, catalog, combo: tuple[str, ...], call_id: str) -> str | None:
    """The article's matcher: snapshot the metadata versions, take the head of the queue,
    and write conditioned on those versions (not on the agent)."""
    table = db.table("callcenter")
    (head,) = queue_heads(db, table, [combo], 1)  # the oldest of the sub-queues' heads
    if not head:
        return None
    message = head[0]
    combos = catalog.combinations(message["skills"])
    snapshot = db.call(
        "transact_get_items",
        TransactItems=[{"Get": {"TableName": table, "Key": marshal(keys.queue_meta(c))}} for c in combos],
    )["Responses"]
    stamp = to_iso(now())
    actions = [
        {
            "Update": {
                "TableName": table,
                "Key": marshal(keys.agent(message["agent_id"])),
                "UpdateExpression": "SET #s = :attending, status_q = :q, call_id = :call REMOVE queue_token",
                "ExpressionAttributeNames": {"#s": "status"},
                "ExpressionAttributeValues": marshal(
                    {
                        ":attending": AgentStatus.ATTENDING,
                        ":q": keys.status_partition(AgentStatus.ATTENDING, message["agent_id"]),
                        ":call": call_id,
                    }
                ),
            }
        }
    ]
    for c, meta in zip(combos, snapshot, strict=True):
        actions.append({"Delete": {"TableName": table, "Key": marshal(keys.queue_message(c, message["sk"]))}})
        actions.append(
            {
                "Update": {
                    "TableName": table,
                    "Key": marshal(keys.queue_meta(c)),
                    "UpdateExpression": "ADD #d :minus, version :one",
                    "ConditionExpression": "version = :seen",
                    "ExpressionAttributeNames": {"#d": "depth"},
                    "ExpressionAttributeValues": marshal(
                        {":minus": -1, ":one": 1, ":seen": unmarshal(meta["Item"])["version"]}
                    ),
                }
            }
        )
    call = Call(
        call_id=call_id,
        status=CallStatus.ASSIGNED,
        preferences={"language": combo[0], "gender": combo[1]},
        arrived_at=stamp,
        agent_id=message["agent_id"],
        agent_name=message["name"],
        assigned_at=stamp,
    )
    actions.append({"Put": {"TableName": table, "Item": marshal(call_to_item(call))}})
    db.call("transact_write_items", TransactItems=actions)
    return message["agent_id"]


def queue_messages(db, combo: tuple[str, ...]) -> list[dict]:
    """Every message of a queue, from each of its sub-queues."""
    table = db.table("callcenter")
    return [m for pk in keys.queue_partitions(combo) for m in db.partition_items(table, pk, ConsistentRead=True)]


def make_available_agent(db, name="Ana"):
    agent = Agents(db).create(name, {"language": ["English", "Spanish"], "gender": ["F"]})
    db.call(
        "update_item",
        TableName=db.table("callcenter"),
        Key=marshal(keys.agent(agent.agent_id)),
        UpdateExpression="SET #s = :available, status_q = :q",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues=marshal(
            {":available": AgentStatus.AVAILABLE, ":q": keys.status_partition(AgentStatus.AVAILABLE, agent.agent_id)}
        ),
    )
    return agent


def test_the_articles_enqueue_queues_an_agent_twice_and_gives_them_to_two_callers(local_db):
    router = CallCenter(local_db)
    ana = make_available_agent(local_db)
    # Two enqueuers interleaved by hand: both read Ana as available, then both write.
    seen_by_first = article_enqueue_read(local_db, ana.agent_id)
    seen_by_second = article_enqueue_read(local_db, ana.agent_id)
    assert seen_by_first and seen_by_second
    first_token = article_enqueue_write(local_db, router.catalog, seen_by_first, to_iso(now()))
    time.sleep(0.001)
    second_token = article_enqueue_write(local_db, router.catalog, seen_by_second, to_iso(now()))
    assert first_token != second_token
    messages = queue_messages(local_db, ("English", "F"))
    assert sorted(m["sk"] for m in messages) == [first_token, second_token]  # queued twice
    assert {q.name: q.depth for q in router.queues()}["Q#English#F"] == 2

    # The article's matcher, run for two callers one after the other, gives Ana to both:
    # its version conditions are on a fresh snapshot each time, and nothing checks Ana.
    assert article_match(local_db, router.catalog, ("English", "F"), "c1") == ana.agent_id
    assert article_match(local_db, router.catalog, ("Spanish", "F"), "c2") == ana.agent_id
    assert {router.get_call("c1").agent_id, router.get_call("c2").agent_id} == {ana.agent_id}

    found = [str(v) for v in invariants.find_violations(local_db, router.catalog, passes=1)]
    assert f"[holder] agent {ana.agent_id}: holds 2 assigned calls: c1, c2" in found
    with pytest.raises(CommandError):
        call_command("check_invariants", "--once")


def test_router_refuses_the_second_enqueue_under_the_same_interleaving(local_db, monkeypatch):
    first_router, second_router = CallCenter(local_db), CallCenter(local_db)
    ana = make_available_agent(local_db)
    # Both read Ana as available before either writes.
    stale_first = first_router.agents.get(ana.agent_id)
    stale_second = second_router.agents.get(ana.agent_id)
    assert stale_first.status == stale_second.status == AgentStatus.AVAILABLE

    queued = first_router.enqueue(stale_first)
    assert queued.status == AgentStatus.QUEUED
    with pytest.raises(errors.Conflict, match="changed meanwhile"):
        second_router.enqueue(stale_second)

    # The same through make_available, with the second router's read of Ana stale.
    monkeypatch.setattr(second_router.agents, "get", lambda agent_id: copy.deepcopy(stale_second))
    with pytest.raises(errors.Conflict, match="changed meanwhile"):
        second_router.make_available(ana.agent_id)

    messages = queue_messages(local_db, ("English", "F"))
    assert [m["sk"] for m in messages] == [queued.queue_token]  # one set of messages only
    assert invariants.find_violations(local_db, first_router.catalog, passes=1) == []

    # Two callers: Ana takes one, the other waits.
    one, _ = first_router.create_call({"language": "English", "gender": "F"})
    two, _ = second_router.create_call({"language": "Spanish", "gender": "F"})
    assert one.status == CallStatus.ASSIGNED and one.agent_id == ana.agent_id
    assert two.status == CallStatus.WAITING
    assert invariants.find_violations(local_db, first_router.catalog, passes=1) == []


# --- what make_available reports ------------------------------------------------------------


def test_make_available_never_reports_a_call_another_agent_took(local_db, monkeypatch):
    """Found by the concurrent test: Ana queues, looks once more at the waiting callers and
    reads Cy's call as waiting; Bo takes Cy's call before Ana's assignment transaction; that
    transaction fails on the call, the matcher's try returns the call as it is now (assigned to
    Bo), and `make_available(Ana)` returned it as the call Ana took."""
    ana_router, bo_router = CallCenter(local_db), CallCenter(local_db)
    directory = Agents(local_db)
    ana = directory.create("Ana", {"language": ["English"], "gender": ["F"]})
    bo = directory.create("Bo", {"language": ["English"], "gender": ["M"]})
    cy, _ = bo_router.create_call({"language": "English", "gender": "any"})
    assert cy.status == CallStatus.WAITING

    real_heads_for, real_find_call = ana_router.line.heads_for, ana_router.calls.find
    looks = []

    def heads_for(skills, **options):  # Ana's first look comes before Cy starts waiting
        looks.append(skills)
        return [] if len(looks) == 1 else real_heads_for(skills, **options)

    def find_call(call_id):  # Ana reads Cy's call as waiting; then Bo takes Cy
        call = real_find_call(call_id)
        if call_id == cy.call_id and call.status == CallStatus.WAITING:
            _bo, taken = bo_router.make_available(bo.agent_id)
            assert taken.call_id == cy.call_id and taken.agent_id == bo.agent_id
        return call

    monkeypatch.setattr(ana_router.line, "heads_for", heads_for)
    monkeypatch.setattr(ana_router.calls, "find", find_call)
    agent, call = ana_router.make_available(ana.agent_id)

    assert agent.status == AgentStatus.QUEUED  # Ana took nobody and waits in her queue
    assert call is None or call.agent_id == ana.agent_id, (
        f"make_available(Ana) returned call {call.call_id}, which went to {call.agent_name}"
    )
    assert invariants.find_violations(local_db, ana_router.catalog, passes=1) == []
