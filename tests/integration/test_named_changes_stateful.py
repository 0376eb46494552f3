"""A stateful property test, on DynamoDB Local, of requests that name what they were
decided on: two supervisors' tabs (each showing what it read, perhaps long ago) and a
phone system that retries drive agents, calls and shipments through every action, with
stale and repeated requests interleaved. After each step:

- no request changed an item it did not name (or bring about: the call an agent took),
  nor an agent or shipment at a version other than the one it named; a refused or
  repeated request changed nothing at all;
- a request whose item was as it named it went through;
- the invariants `check_invariants` checks hold;
- each call's history in the audit trail reads in order (waiting, assigned, ended, or
  abandoned), each fact once.

`STATEFUL_EXAMPLES` and `STATEFUL_STEPS` make the run longer (the suite runs a short one);
the steps run and the violations found are printed.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass

from django.test import Client
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.audit.store import AuditTrail
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.centre.invariants import read_callcenter
from queues_app.ddb import errors
from queues_app.ddb.client import default
from queues_app.models import ApiToken
from queues_app.monitoring import invariants
from queues_app.operations import Operations
from queues_app.operations.bulk import Seen
from queues_app.shipments.invariants import read_shipments
from queues_app.shipments.queue import ShipmentQueue

EXAMPLES = int(os.environ.get("STATEFUL_EXAMPLES", "5"))
STEPS = int(os.environ.get("STATEFUL_STEPS", "30"))
THEN = ("queue", "wrap_up", "offline")
LANGUAGES = ("Spanish", "French")
TALLY = {"rules": 0, "steps": 0, "violations": 0, "refused": 0, "replayed": 0, "done": 0}


@dataclass(frozen=True)
class Request:
    """A request as a tab or the phone system sent it: enough to send it again."""

    who: str  # "tab 1", "tab 2" (pages) or "phone" (the API)
    action: str
    item: str  # the agent, call or shipment named
    version: int | None = None
    call_id: str | None = None
    extra: tuple = ()


def state():
    db = default()
    snap = read_callcenter(db)
    return snap.agents, snap.calls, {item["id"]: item for item in read_shipments(db)}


def attending(agent: dict, call_id: str | None) -> bool:
    return agent.get("status") == AgentStatus.ATTENDING and agent.get("call_id") == call_id


class NamedChanges(RuleBasedStateMachine):
    api_token = ""

    def __init__(self):
        super().__init__()
        self.client = Client()
        self.agent_ids: list[str] = []
        self.call_ids: list[str] = []
        self.shipment_ids: list[str] = []
        self.views: list[Request] = []  # what the tabs and the phone system last read, oldest first
        self.sent: list[Request] = []
        self.keys: dict[str, str] = {}  # idempotency key -> the language first sent with it
        self.uid = uuid.uuid4().hex[:8]

    @initialize()
    def people_and_work(self):
        for n, language in enumerate(LANGUAGES * 2):
            self.agent_ids.append(Agents().create(f"Agent {n}", {"language": [language], "gender": ["F"]}).agent_id)
        queue = ShipmentQueue()
        for n in range(3):
            self.shipment_ids.append(queue.submit({"n": n}).shipment_id)

    # --- reading: what a tab draws or the phone system GETs --------------------------------

    @rule(data=st.data(), who=st.sampled_from(["tab 1", "tab 2", "phone"]))
    def look_at_an_agent(self, data, who):
        agent = Agents().get(data.draw(st.sampled_from(self.agent_ids)))
        self.views.append(Request(who, "agent", agent.agent_id, agent.version, agent.call_id))

    @rule(data=st.data())
    def look_at_a_shipment(self, data):
        shipment = ShipmentQueue().get(data.draw(st.sampled_from(self.shipment_ids)))
        self.views.append(Request("tab 1", "shipment", shipment.shipment_id, shipment.version))

    def seen(self, data, kind: str) -> Request | None:
        views = [v for v in self.views if v.action == kind]
        return data.draw(st.sampled_from(views)) if views else None

    # --- the changes ----------------------------------------------------------------------

    @rule(data=st.data(), action=st.sampled_from(["available", "offline", "edit"]))
    def change_an_agent(self, data, action):
        view = self.seen(data, "agent")
        if view and not (action == "edit" and view.who == "phone"):  # the API edits no agent
            self.send(Request(view.who, action, view.item, view.version, view.call_id))

    @rule(data=st.data(), then=st.sampled_from(THEN), by_call=st.booleans())
    def end_a_call(self, data, then, by_call):
        view = self.seen(data, "agent")
        if view and view.call_id:
            action = "end" if by_call and view.who == "phone" else "release"
            self.send(Request(view.who, action, view.item, view.version, view.call_id, (then,)))

    @rule(data=st.data(), action=st.sampled_from(["available", "offline", "release"]))
    def bulk(self, data, action):
        views = [v for v in self.views if v.action == "agent" and v.who != "phone"]
        if views:
            chosen = data.draw(st.lists(st.sampled_from(views), min_size=1, max_size=3, unique_by=lambda v: v.item))
            self.send(
                Request("tab 1", f"bulk-{action}", "", extra=tuple((v.item, v.version, v.call_id) for v in chosen))
            )

    @rule(language=st.sampled_from(LANGUAGES), key=st.sampled_from(["", "k1", "k2", "k3"]))
    def a_caller_rings(self, language, key):
        # Keys of this example only: the tables outlive it.
        self.send(Request("phone", "create", f"{self.uid}-{key}" if key else "", extra=(language,)))

    @rule(data=st.data())
    def a_caller_hangs_up(self, data):
        if self.call_ids:
            self.send(Request("phone", "abandon", data.draw(st.sampled_from(self.call_ids))))

    @rule(data=st.data(), action=st.sampled_from(["touch", "priority", "dlq", "restore", "remove"]))
    def change_a_shipment(self, data, action):
        view = self.seen(data, "shipment")
        if view:
            self.send(Request("tab 2", action, view.item, view.version, extra=(data.draw(st.integers(0, 9)),)))

    @rule(data=st.data())
    def retry(self, data):
        if self.sent:
            self.send(data.draw(st.sampled_from(self.sent[-8:])))

    # --- sending, and what it may change ------------------------------------------------------

    def send(self, request: Request) -> None:
        before = state()
        allowed, should_pass = self.allowed(request, before)
        status = self.perform(request)
        after = state()
        TALLY["steps"] += 1
        agents_before, calls_before, shipments_before = before
        agents_after, calls_after, shipments_after = after
        changed = {("agent", k) for k in agents_after if agents_before.get(k) != agents_after[k]}
        changed |= {("call", k) for k in calls_after if calls_before.get(k) != calls_after[k]}
        changed |= {("shipment", k) for k in shipments_after if shipments_before.get(k) != shipments_after[k]}
        new_calls = {k for k in calls_after if k not in calls_before}
        for call_id in new_calls:
            if call_id not in self.call_ids:
                self.call_ids.append(call_id)
        taken = {
            ("call", k)
            for k in calls_after
            if calls_before.get(k, {}).get("status") == CallStatus.WAITING
            and calls_after[k].get("status") == CallStatus.ASSIGNED
        }
        allowed = allowed(after, new_calls, taken)
        outside = changed - allowed
        if outside or (should_pass and status != "done"):
            TALLY["violations"] += 1
        assert not outside, f"{request} changed {sorted(outside)}, allowed only {sorted(allowed)}"
        assert status == "done" or not changed - {("call", k) for k in new_calls}, f"{request} was {status} yet changed"
        if should_pass:
            assert status == "done", f"{request} named the state as it was, yet was {status}"
        TALLY[status] += 1
        self.sent.append(request)

    def allowed(self, request: Request, before):
        """What `request` may change, judged from the state before it (a function of the
        state after, the calls it created and the calls assigned in it), and whether it
        must go through."""
        agents, calls, shipments = before
        nothing = (lambda after, new, taken: set()), False
        action = request.action
        if action in ("available", "offline", "edit"):
            agent = agents.get(request.item, {})
            if int(agent.get("version", 0)) != request.version:
                return nothing
            ok = {
                "available": agent.get("status") in (AgentStatus.OFFLINE, AgentStatus.WRAP_UP),
                "offline": agent.get("status") in (AgentStatus.QUEUED, AgentStatus.WRAP_UP),
                "edit": agent.get("status") in (AgentStatus.OFFLINE, AgentStatus.WRAP_UP),
            }[action]
            if not ok:
                return nothing
            return self.agent_and_taken(request.item), True
        if action in ("release", "end"):
            agent = agents.get(request.item, {})
            if not attending(agent, request.call_id):
                return nothing
            return (
                lambda after, new, taken: (
                    {("agent", request.item), ("call", request.call_id)} | self.taken_by(request.item, after, taken)
                )
            ), True
        if action.startswith("bulk-"):
            kind = action.removeprefix("bulk-")
            parts = []
            for agent_id, version, call_id in request.extra:
                agent = agents.get(agent_id, {})
                if int(agent.get("version", 0)) != version:
                    continue
                if kind == "release" and attending(agent, call_id):
                    parts.append((agent_id, call_id))
                elif kind == "available" and agent.get("status") in (AgentStatus.OFFLINE, AgentStatus.WRAP_UP):
                    parts.append((agent_id, None))
                elif kind == "offline" and agent.get("status") in (AgentStatus.QUEUED, AgentStatus.WRAP_UP):
                    parts.append((agent_id, None))

            def bulk_allowed(after, new, taken):
                found = set()
                for agent_id, call_id in parts:
                    found |= {("agent", agent_id)} | self.taken_by(agent_id, after, taken)
                    if call_id:
                        found.add(("call", call_id))
                return found

            return bulk_allowed, bool(parts)
        if action == "create":
            key = request.item
            if key and key in self.keys:
                return nothing  # a retry (answered as the first) or another body (refused)
            return (
                lambda after, new, taken: (
                    {("call", c) for c in new}
                    | {("agent", after[1][c]["agent_id"]) for c in new if after[1][c].get("agent_id")}
                )
            ), True
        if action == "abandon":
            if calls.get(request.item, {}).get("status") != CallStatus.WAITING:
                return nothing
            return (lambda after, new, taken: {("call", request.item)}), True
        shipment = shipments.get(request.item, {})
        if int(shipment.get("version", 0)) != request.version:
            return nothing
        return (lambda after, new, taken: {("shipment", request.item)}), False

    def agent_and_taken(self, agent_id):
        return lambda after, new, taken: {("agent", agent_id)} | self.taken_by(agent_id, after, taken)

    @staticmethod
    def taken_by(agent_id, after, taken):
        return {t for t in taken if after[1][t[1]].get("agent_id") == agent_id}

    def perform(self, request: Request) -> str:
        """Send the request as its sender does; "done", "replayed" or "refused"."""
        if request.who == "phone":
            return self.by_api(request)
        ops = Operations("sam", "page")
        action = request.action
        try:
            if action == "available":
                outcome = ops.make_available(request.item, expected_version=request.version)
            elif action == "offline":
                outcome = ops.log_off(request.item, expected_version=request.version)
            elif action == "edit":
                outcome = ops.update_agent(
                    request.item,
                    name=f"Renamed {request.version}",
                    skills=Agents().get(request.item).skills,
                    expected_version=request.version or 0,
                )
            elif action == "release":
                outcome = ops.release(request.item, request.extra[0], call_id=request.call_id)
            elif action.startswith("bulk-"):
                seen = [Seen(a, v, c) for a, v, c in request.extra]
                report = ops.on_agents(action.removeprefix("bulk-"), seen)
                return "done" if report.done else "refused"
            else:
                shipment = self.shipment_action(ops, request)
                return "replayed" if shipment.replayed else "done"
        except errors.Conflict:
            return "refused"
        return "replayed" if outcome.replayed else "done"

    @staticmethod
    def shipment_action(ops: Operations, request: Request):
        item, version = request.item, request.version
        if request.action == "touch":
            return ops.touch(item, expected_version=version)
        if request.action == "priority":
            return ops.set_priority(item, request.extra[0], expected_version=version)
        if request.action == "dlq":
            return ops.send_to_dlq(item, "stateful test", expected_version=version)
        if request.action == "restore":
            return ops.restore(item, expected_version=version)
        return ops.remove(item, expected_version=version)

    def by_api(self, request: Request) -> str:
        action, headers = request.action, {}
        if action == "available":
            path, body = f"/api/agents/{request.item}/available", {"version": request.version}
        elif action == "offline":
            path, body = f"/api/agents/{request.item}/offline", {"version": request.version}
        elif action == "edit":
            return "refused"  # the API does not edit agents
        elif action == "release":
            path = f"/api/agents/{request.item}/release"
            body = {"call_id": request.call_id, "then": request.extra[0]}
        elif action == "end":
            path, body = f"/api/calls/{request.call_id}/end", {"then": request.extra[0]}
        elif action == "abandon":
            path, body = f"/api/calls/{request.item}/abandon", None
        else:  # a caller rings
            path, body = "/api/calls", {"preferences": {"language": request.extra[0]}}
            if request.item:
                headers["HTTP_IDEMPOTENCY_KEY"] = request.item
        answer = self.client.post(
            path,
            data="" if body is None else json.dumps(body),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {self.api_token}",
            **headers,
        )
        assert answer.status_code in (200, 201, 409, 422), (request, answer.status_code, answer.content)
        if action == "create" and request.item and answer.status_code == 201:
            self.keys[request.item] = request.extra[0]
        if answer.status_code in (409, 422):
            if answer.status_code == 409:
                assert answer.json().get("current"), answer.content  # says what the items are now
            return "refused"
        replayed = answer.get("Idempotent-Replayed") == "true"
        if action == "create" and request.item and replayed:
            assert request.extra[0] == self.keys[request.item]  # only the same body is answered
        return "replayed" if replayed else "done"

    # --- after every step ------------------------------------------------------------------

    @invariant()
    def the_queues_hold_their_invariants(self):
        TALLY["rules"] += 1
        report = invariants.check_once()
        assert report.ok, [str(v) for v in report.violations]

    @invariant()
    def each_calls_history_reads_in_order(self):
        trail = AuditTrail()
        rank = {CallStatus.WAITING: 0, CallStatus.ASSIGNED: 1, CallStatus.ENDED: 2, CallStatus.ABANDONED: 2}
        for call_id in self.call_ids:
            entries = list(reversed(trail.for_target(f"call:{call_id}", limit=50).entries))
            statuses = [e.after["status"] for e in entries if e.after and "status" in e.after]
            assert [rank[s] for s in statuses] == sorted(rank[s] for s in statuses), (call_id, statuses)
            assert statuses.count(CallStatus.ENDED) <= 1 and statuses.count(CallStatus.ABANDONED) <= 1
            actions = [e.action for e in entries]
            assert actions[:1] == ["call.create"], (call_id, actions)
            stored = CallCenter().get_call(call_id).status
            assert statuses[-1] == stored, (call_id, statuses, stored)

    def teardown(self):
        """Leave no queued agent or waiting caller for the next example to meet."""
        router = CallCenter()
        for agent_id in self.agent_ids:
            agent = Agents().get(agent_id)
            if agent.status == AgentStatus.ATTENDING:
                router.release(agent_id, "offline", call_id=agent.call_id)
            elif agent.status != AgentStatus.OFFLINE:
                router.log_off(agent_id)
        for call_id in self.call_ids:
            if router.get_call(call_id).status == CallStatus.WAITING:
                router.abandon(call_id)


def test_no_stale_or_repeated_request_changes_what_it_did_not_name(local_db, supervisor, capsys):
    NamedChanges.api_token = ApiToken.issue(supervisor, "phone system")[1]
    for name in TALLY:
        TALLY[name] = 0
    run_state_machine_as_test(
        NamedChanges,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            derandomize=os.environ.get("STATEFUL_SEED") is None,
        ),
    )
    with capsys.disabled():
        print(f"\nstateful: {TALLY}")
    assert TALLY["steps"] > 0 and TALLY["violations"] == 0
    assert TALLY["refused"] and TALLY["replayed"] and TALLY["done"]  # every kind of answer was met
