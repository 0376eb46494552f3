"""Every change a supervisor, a staff member or the phone system makes to the queues.

Pages, admin actions and the JSON API all go through `Operations`, so each change is
made by the same service call and written to the audit trail the same way: who, from
where, what, the item before and after, and the trace id of the request.

What the queues do on their own is recorded here too, from what the domain returns
(`SystemEvents`): a caller given an agent by the matcher is written on the call's
history and on the agent's, with the answered call's wait for the service level;
escalation, the shipment worker's dead-lettering and the task sweeper's shedding are
recorded by the commands that run them, through the same class. The domains themselves
never record anything (see docs/architecture.md, "The audit trail").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field

from queues_app.admission import Admitted, BackpressureGate, ShipmentAdmission
from queues_app.agents.records import Agent, AgentStatus, Call, CallStatus, Outcome
from queues_app.agents.roster import Agents
from queues_app.agents.router import Router
from queues_app.audit_trail import AuditTrail, target
from queues_app.ddb import errors, replay
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now
from queues_app.ddb.replay import Done
from queues_app.monitoring import counters, service_level
from queues_app.shipments.queue import Shipment, ShipmentQueue, ShipmentState, ShipmentStatus
from queues_app.tasks.queue import TaskQueue
from queues_app.tasks.records import ShedReport

# Who acted, for what the queues do on their own (source "system").
MATCHER, ESCALATION, SHIPMENT_WORKER, TASK_PROCESSOR = "matcher", "escalation", "shipment worker", "task processor"
TASKS_TARGET = target("queue", "tasks")


def snapshot(record) -> dict | None:
    return dataclasses.asdict(record) if record is not None else None


def asked_for(call: Call) -> dict:
    """The preferences the caller arrived with (before any was relaxed)."""
    original = dict(call.preferences)
    for relaxed in reversed(call.relaxed):
        original[relaxed["dimension"]] = relaxed.get("from")
    return original


def _ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _waited(call: Call) -> str:
    seconds = call.waited_seconds
    return f"{seconds:.0f} s" if seconds is not None else "an unknown time"


class SystemEvents:
    """Entries for what the queues did on their own, on the items concerned: source
    `system`, the actor naming the part that acted. Each call writes its entries in one
    request (one PutItem, or one BatchWriteItem for two or more)."""

    def __init__(self, trail: AuditTrail, *, trace_id: str | None = None):
        self.trail = trail
        self.trace_id = trace_id

    def entry(self, actor: str, action: str, item_target: str, summary: str, before, after) -> dict:
        return {
            "actor": actor,
            "source": "system",
            "action": action,
            "target": item_target,
            "summary": summary,
            "before": before,
            "after": after,
            "trace_id": self.trace_id,
        }

    def call_assigned(self, call: Call, by: str = MATCHER) -> dict:
        """The call's side of an assignment."""
        return self.entry(
            by,
            "call.assigned",
            target("call", call.call_id),
            f"assigned to {call.agent_name} after waiting {_waited(call)}",
            {"status": "waiting"},
            {
                "status": call.status,
                "agent_name": call.agent_name,
                "agent_id": call.agent_id,
                "assigned_at": call.assigned_at,
            },
        )

    def agent_assigned(self, call: Call, by: str = MATCHER) -> dict:
        """The agent's side of an assignment: they took the call."""
        return self.entry(
            by,
            "agent.assigned",
            target("agent", call.agent_id or ""),
            f"{call.agent_name} took call {call.call_id} (the caller waited {_waited(call)})",
            {"status": "queued"},
            {"status": "attending", "call_id": call.call_id},
        )

    def write(self, *entries: dict) -> None:
        self.trail.record_many(list(entries))

    def relaxed(self, call: Call) -> None:
        """Escalation relaxed a waiting caller's preferences, and perhaps found an agent."""
        latest = max((r["at"] for r in call.relaxed), default=None)
        now_relaxed = [r for r in call.relaxed if r["at"] == latest]
        before = dict(call.preferences)
        for r in now_relaxed:
            before[r["dimension"]] = r.get("from")
        summary = "relaxed " + ", ".join(f"{r['dimension']} (was {r.get('from') or 'any'})" for r in now_relaxed)
        entries = [
            self.entry(
                ESCALATION,
                "call.relaxed",
                target("call", call.call_id),
                summary,
                {"preferences": before},
                {"preferences": call.preferences},
            )
        ]
        if call.agent_id:
            entries += [self.call_assigned(call, ESCALATION), self.agent_assigned(call, ESCALATION)]
        self.write(*entries)

    def dead_lettered(self, before: Shipment | None, after: Shipment) -> None:
        """The shipment worker sent a shipment to the DLQ after its last allowed attempt."""
        self.write(
            self.entry(
                SHIPMENT_WORKER,
                "shipment.dlq",
                target("shipment", after.shipment_id),
                f"sent to the DLQ after {after.attempts} attempts: {after.dlq_reason or 'failed'}",
                snapshot(before),
                snapshot(after),
            )
        )

    def shed(self, report: ShedReport) -> None:
        """The task sweeper shed expired tasks (a total per sweep, not one entry per task)."""
        oldest = report.oldest_age
        self.write(
            self.entry(
                TASK_PROCESSOR,
                "tasks.shed",
                TASKS_TARGET,
                f"shed {report.shed} expired task{'s' if report.shed != 1 else ''}"
                + (f", the oldest {oldest:.0f} s old" if oldest is not None else ""),
                None,
                {"shed": report.shed, "oldest_age_seconds": round(oldest, 1) if oldest is not None else None},
            )
        )


def answered(db: Dynamo, call: Call | None) -> None:
    """Count an answered call for the service level (no request: counters are batched)."""
    if call is not None and call.agent_id and call.waited_seconds is not None:
        service_level.answered(db, call.waited_seconds, asked_for(call))


class RecordedShipmentQueue(ShipmentQueue):
    """The shipment queue of a worker process: a failure that sends a shipment to the
    DLQ is recorded on the shipment's history (the domain returns it; we write it)."""

    def __init__(self, *args, events: SystemEvents | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.events = events or SystemEvents(AuditTrail(self.db))

    def fail(self, shipment_id: str, receipt: str, reason: str) -> Shipment:
        done = self.fail_once(shipment_id, receipt, reason)
        after = done.item
        if after.status == ShipmentStatus.IN_DLQ and not done.replayed:
            try:
                self.events.dead_lettered(None, after)
            except errors.DynamoError:
                pass  # the move is done; the worker carries on (it logs every DLQ move)
        return after


class RecordedTaskQueue(TaskQueue):
    """The task queue of the processor: each sweep that shed tasks is recorded once."""

    def __init__(self, *args, events: SystemEvents | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.events = events or SystemEvents(AuditTrail(self.db))

    def sweep_expired(self, *, limit: int = 1000) -> ShedReport:
        report = super().sweep_expired(limit=limit)
        if report.shed:
            try:
                self.events.shed(report)
            except errors.DynamoError:
                pass  # counted in the shed statistics all the same
        return report


def _count(n: int, singular: str, plural: str) -> str:
    return f"{n} {singular if n == 1 else plural}"


CHANGED_LISTED = 10  # items changed since they were shown, named in a bulk action's message


def _reason(n: int, reason: Reason, changed: list[tuple[str, str]]) -> str:
    """ "2 are on a call"; those changed since they were shown are named with what they are now."""
    text = _count(n, *reason)
    if reason == CHANGED_SINCE and changed:
        named = "; ".join(f"{name}: {now}" for name, now in changed[:CHANGED_LISTED])
        text += f" ({named}{'; ...' if len(changed) > CHANGED_LISTED else ''})"
    return text


# Why a bulk action passes over an item: (said of one, said of several).
Reason = tuple[str, str]
GONE: Reason = ("no longer exists", "no longer exist")
AGENT_REASONS: dict[str, dict[str, Reason]] = {
    "available": {
        AgentStatus.QUEUED: ("is already queued", "are already queued"),
        AgentStatus.ATTENDING: ("is on a call", "are on a call"),
    },
    "release": {
        status: ("is not on a call", "are not on a call") for status in AgentStatus.ALL if status != "attending"
    },
    "offline": {
        AgentStatus.OFFLINE: ("is already offline", "are already offline"),
        AgentStatus.ATTENDING: ("is on a call (release it first)", "are on a call (release them first)"),
    },
}
AGENT_EFFECTS = {"available": "made available", "release": "released", "offline": "logged off"}
SHIPMENT_STATES: dict[str, Reason] = {
    ShipmentState.UNDER_CONSTRUCTION: ("is under construction", "are under construction"),
    ShipmentState.READY: ("is in no queue", "are in no queue"),
    ShipmentState.QUEUED: ("is queued", "are queued"),
    ShipmentState.DELAYED: ("is delayed", "are delayed"),
    ShipmentState.PROCESSING: ("is in flight", "are in flight"),
    ShipmentState.COMPLETED: ("is completed", "are completed"),
    ShipmentState.IN_DLQ: ("is in the DLQ already", "are in the DLQ already"),
}


# What each bulk action leaves on an agent it changed, from the version (or call) shown.
def _agent_change(action: str, seen: Seen) -> str:
    if action == "release":
        return replay.change_id("end", seen.call_id or "", "queue")
    return replay.change_id(action, seen.version)


# action -> the change a shipment is left with, from the version shown (shipments/supervising.py).
SHIPMENT_CHANGES: dict[str, Callable[[int], str]] = {
    "restore": lambda version: replay.change_id("restore", version),
    "touch": lambda version: replay.change_id("touch", version),
    "dlq": lambda version: replay.change_id("send-to-the-DLQ", version),
}
# action -> (what it does, the states it acts on); the same rules as the service's conditions.
SHIPMENT_EFFECTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "restore": ("restored", (ShipmentState.IN_DLQ,)),
    "touch": ("sent to the back", (ShipmentState.QUEUED,)),
    "dlq": (
        "sent to the DLQ",
        (ShipmentState.QUEUED, ShipmentState.DELAYED, ShipmentState.PROCESSING, ShipmentState.READY),
    ),
}


CHANGED_SINCE: Reason = ("changed since you looked", "changed since you looked")
DONE_ALREADY: Reason = ("was done already (by this same request)", "were done already (by this same request)")


@dataclass(frozen=True)
class Seen:
    """An item as a list showed it to the person acting on it: its id, the version shown,
    and, for an agent on a call, that call. A bulk action acts on each item only as seen."""

    item_id: str
    version: int
    call_id: str | None = None

    @classmethod
    def parse(cls, token: str) -> Seen:
        """`<id>/<version>[/<call id>]`, as a list's checkbox carries it (ids never hold a
        slash). InvalidRequest for anything else: the page is older than this version."""
        parts = token.split("/")
        if len(parts) not in (2, 3) or not parts[0] or not parts[1].isdigit():
            raise errors.InvalidRequest(
                "The selection does not say which version of each item you saw; reload the page and select again."
            )
        return cls(parts[0], int(parts[1]), (parts[2] or None) if len(parts) == 3 else None)

    @property
    def token(self) -> str:
        return "/".join([self.item_id, str(self.version), *([self.call_id] if self.call_id else [])])


@dataclass
class Effect:
    """What a bulk action would do to each selected item, read from the items as they are
    now: the ids it would change, the others grouped by why it would pass them over, and
    those changed since they were shown, by name with what they are now."""

    did: str  # what happens to the ones it changes: "released"
    acting: list[Seen] = field(default_factory=list)
    passed: dict[Reason, list[str]] = field(default_factory=dict)
    changed: list[tuple[str, str]] = field(default_factory=list)  # (name, what it is now)

    @property
    def selected(self) -> int:
        return len(self.acting) + sum(len(ids) for ids in self.passed.values())

    def pass_over(self, item_id: str, reason: Reason) -> None:
        self.passed.setdefault(reason, []).append(item_id)

    def changed_since(self, item_id: str, name: str, now: str) -> None:
        self.pass_over(item_id, CHANGED_SINCE)
        self.changed.append((name, now))

    def reasons(self) -> list[str]:
        return [_reason(len(ids), reason, self.changed) for reason, ids in self.passed.items()]

    @property
    def question(self) -> str:
        """For the confirmation: "3 selected; 1 will be released, 2 are not on a call"."""
        will = f"{len(self.acting)} will be {self.did}" if self.acting else f"none will be {self.did}"
        return "; ".join([f"{self.selected} selected", ", ".join([will, *self.reasons()])])


@dataclass
class BulkReport:
    """What a bulk action did: the ids it changed, and why it skipped the others (those it
    passed over from the start, grouped in `passed`, those changed since they were shown,
    by name, and those that failed)."""

    done: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    did: str = "done"
    passed: dict[Reason, list[str]] = field(default_factory=dict)
    changed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def summary(self) -> str:
        passed = {i for ids in self.passed.values() for i in ids}
        failed = [(i, why) for i, why in self.skipped if i not in passed]
        parts = [
            f"{len(self.done)} {self.did}",
            *(_reason(len(ids), r, self.changed) for r, ids in self.passed.items()),
        ]
        text = ", ".join(parts)
        if failed:
            text += f", {len(failed)} failed ({'; '.join(f'{i}: {why}' for i, why in failed[:3])}"
            text += ", ..." if len(failed) > 3 else ""
            text += ")"
        return text


class Operations:
    def __init__(self, actor: str, source: str, *, trace_id: str | None = None, db: Dynamo | None = None):
        self.actor = actor
        self.source = source
        self.trace_id = trace_id
        self.db = db or default()
        self.router = Router(self.db)
        self.agents: Agents = self.router.agents
        self.shipments = ShipmentQueue(self.db)
        self.trail = AuditTrail(self.db)
        self.system = SystemEvents(self.trail, trace_id=trace_id)

    @classmethod
    def for_request(cls, request, source: str = "page") -> Operations:
        """Changes made by the request's user, recorded with its trace id."""
        return cls(request.user.get_username(), source, trace_id=getattr(request, "trace_id", None))

    def _entry(self, action: str, kind: str, item_id: str, summary: str, before, after) -> dict:
        return {
            "actor": self.actor,
            "source": self.source,
            "action": action,
            "target": target(kind, item_id),
            "summary": summary,
            "before": before if isinstance(before, dict) or before is None else snapshot(before),
            "after": after if isinstance(after, dict) or after is None else snapshot(after),
            "trace_id": self.trace_id,
        }

    def _record(self, action: str, kind: str, item_id: str, summary: str, before, after, *also: dict) -> None:
        """One entry, and the entries it brought about (one request for all of them)."""
        self.trail.record_many([self._entry(action, kind, item_id, summary, before, after), *also])

    def _ended(self, agent: Agent, call_id: str | None) -> list[dict]:
        """The call's side of a release: it ended."""
        if not call_id:
            return []
        return [
            self._entry(
                "call.end",
                "call",
                call_id,
                f"ended: {agent.name} released",
                {"status": "assigned"},
                {"status": "ended"},
            )
        ]

    # --- agents ---------------------------------------------------------------------

    def create_agent(self, name: str, skills: dict[str, list[str]]) -> Agent:
        agent = self.agents.create(name, skills)
        self._record("agent.create", "agent", agent.agent_id, f"created agent {agent.name}", None, agent)
        return agent

    def update_agent(self, agent_id: str, *, name: str, skills: dict[str, list[str]], expected_version: int) -> Outcome:
        before = self.agents.get(agent_id)
        with self._telling_what_changed("agent", agent_id):
            outcome = self.agents.edit(agent_id, name=name, skills=skills, expected_version=expected_version)
        if not outcome.replayed and outcome.agent:
            after = outcome.agent
            self._record("agent.update", "agent", agent_id, f"edited agent {after.name}", before, after)
        return outcome

    def make_available(self, agent_id: str, *, expected_version: int | None = None) -> Outcome:
        before = self.agents.get(agent_id)
        with self._telling_what_changed("agent", agent_id):
            outcome = self.router.make_available(agent_id, expected_version=expected_version)
        agent, call = outcome
        if outcome.replayed or agent is None:
            return outcome
        if call:
            summary = f"{agent.name} took waiting call {call.call_id} (the caller waited {_waited(call)})"
            self._record("agent.available", "agent", agent_id, summary, before, agent, self.system.call_assigned(call))
            answered(self.db, call)
        else:
            self._record("agent.available", "agent", agent_id, f"{agent.name} queued", before, agent)
        return outcome

    def release(self, agent_id: str, then: str = "queue", *, call_id: str | None = None) -> Outcome:
        """End the agent's call (the one named, when `call_id` is given), then `then`."""
        before = self.agents.get(agent_id)
        with self._telling_what_changed("call", call_id) if call_id else self._telling_what_changed("agent", agent_id):
            outcome = self.router.release(agent_id, then=then, call_id=call_id)
        agent, call = outcome
        if outcome.replayed or agent is None:
            return outcome
        summary = f"released {agent.name} from call {before.call_id}, then "
        if call:
            summary += f"took waiting call {call.call_id} (the caller waited {_waited(call)})"
            assigned = [self.system.call_assigned(call)]
            answered(self.db, call)
        else:
            summary += {"queue": "queued", "wrap_up": "wrap-up", "offline": "offline"}.get(then, then)
            assigned = []
        self._record(
            "agent.release", "agent", agent_id, summary, before, agent, *self._ended(agent, before.call_id), *assigned
        )
        return outcome

    def end_call(self, call_id: str, then: str = "queue") -> Outcome:
        """End a call in progress by naming it; its agent then goes `then`."""
        call = self.router.get_call(call_id)
        if call.status not in (CallStatus.ASSIGNED, CallStatus.ENDED) or not call.agent_id:
            with self._telling_what_changed("call", call_id):
                return self.router.end_call(call_id, then)  # refused: says why
        return self.release(call.agent_id, then, call_id=call_id)

    def log_off(self, agent_id: str, *, expected_version: int | None = None) -> Outcome:
        before = self.agents.get(agent_id)
        with self._telling_what_changed("agent", agent_id):
            outcome = self.router.log_off(agent_id, expected_version=expected_version)
        agent = outcome.agent
        if not outcome.replayed and agent is not None and agent.version != before.version:
            self._record("agent.offline", "agent", agent_id, f"logged {agent.name} off", before, agent)
        return outcome

    def agents_effect(self, action: str, selection: Iterable[Seen]) -> Effect:
        """What `on_agents` would do to each agent, from their records now (one BatchGetItem):
        agents changed since they were shown are passed over, named with what they are now."""
        if action not in AGENT_REASONS:
            raise errors.InvalidRequest(f"Unknown agent action {action!r}.")
        seen = {s.item_id: s for s in selection}
        found = {a.agent_id: a for a in self.agents.get_many(list(seen))}
        effect = Effect(AGENT_EFFECTS[action])
        for agent_id, shown in seen.items():
            agent = found.get(agent_id)
            if agent is not None and agent.version != shown.version:
                if agent.change == _agent_change(action, shown):
                    effect.pass_over(agent_id, DONE_ALREADY)
                else:
                    effect.changed_since(agent_id, agent.name, agent.doing)
                continue
            reason = GONE if agent is None else AGENT_REASONS[action].get(agent.status)
            if reason:
                effect.pass_over(agent_id, reason)
            else:
                effect.acting.append(Seen(agent_id, shown.version, agent.call_id if agent else None))
        return effect

    def on_agents(self, action: str, selection: Iterable[Seen]) -> BulkReport:
        """The same agent action on a selection, each agent only as it was shown: those it
        applies to as they are now, the others passed over with the reason; one agent's
        conflict does not stop the rest."""
        do: dict[str, Callable[[Seen], object]] = {
            "available": lambda seen: self.make_available(seen.item_id, expected_version=seen.version),
            "release": lambda seen: self.release(seen.item_id, call_id=seen.call_id),
            "offline": lambda seen: self.log_off(seen.item_id, expected_version=seen.version),
        }
        return self._apply(self.agents_effect(action, selection), do[action])

    # --- calls ----------------------------------------------------------------------

    def create_call(
        self,
        preferences: dict,
        *,
        priority: int = 0,
        order: str | None = None,
        idempotency_key: str | None = None,
        callback: str | None = None,
    ) -> tuple[Call, bool]:
        if idempotency_key:
            # A retry is answered before the backlog gate: its call exists already, so a
            # refusal would only make the client retry something that has been done.
            retried = self.router.find_retry(
                preferences, priority=priority, order=order, idempotency_key=idempotency_key
            )
            if retried:
                return retried, False
        BackpressureGate(self.db).check(counters.CALLS)
        call, created = self.router.create_call(
            preferences, priority=priority, order=order, idempotency_key=idempotency_key, callback=callback
        )
        if created and call.agent_id:
            summary = f"new call, assigned to {call.agent_name} after waiting {_waited(call)}"
            self._record("call.create", "call", call.call_id, summary, None, call, self.system.agent_assigned(call))
            answered(self.db, call)
        elif created:
            self._record("call.create", "call", call.call_id, "new call, waiting", None, call)
        return call, created

    def abandon_call(self, call_id: str) -> Outcome:
        """The caller hung up while waiting (the phone system, or a supervisor ending a
        waiting call as abandoned): out of line, counted in the service level. Sent again,
        answered as done."""
        with self._telling_what_changed("call", call_id):
            outcome = self.router.abandon(call_id)
        call = outcome.call
        if outcome.replayed or call is None:
            return outcome
        waited = call.waited_seconds
        self._record(
            "call.abandon",
            "call",
            call_id,
            f"abandoned after waiting {_waited(call)}",
            {"status": "waiting"},
            {"status": "abandoned"},
        )
        if waited is not None:
            service_level.abandoned(self.db, waited, asked_for(call))
        return outcome

    # --- shipments ------------------------------------------------------------------

    def submit_shipment(
        self,
        data: dict,
        *,
        tenant: str | None = None,
        priority: int = 0,
        delay_seconds: float = 0,
        shipment_id: str | None = None,
        request_digest: str | None = None,
    ) -> Admitted:
        admitted = ShipmentAdmission(self.db).submit(
            data,
            tenant=tenant,
            priority=priority,
            delay_seconds=delay_seconds,
            shipment_id=shipment_id,
            trace_id=self.trace_id,
            request_digest=request_digest,
        )
        where = "the spillover queue (tenant over its rate)" if admitted.sidelined else "the live queue"
        delay = f", visible in {delay_seconds:g} s" if delay_seconds else ""
        self._record(
            "shipment.enqueue",
            "shipment",
            admitted.shipment.shipment_id,
            f"enqueued in {where}{delay}",
            None,
            admitted.shipment,
        )
        return admitted

    def _shipment_change(
        self,
        action: str,
        shipment_id: str,
        summary: Callable[[Shipment], str],
        change: Callable[[], Done[Shipment]],
        before: Shipment | None = None,
    ) -> Done[Shipment]:
        before = before or self.shipments.get(shipment_id)
        with self._telling_what_changed("shipment", shipment_id):
            done = change()
        if not done.replayed:
            self._record(action, "shipment", shipment_id, summary(done.item), before, done.item)
        return done

    def touch(self, shipment_id: str, *, expected_version: int | None = None) -> Done[Shipment]:
        return self._shipment_change(
            "shipment.touch",
            shipment_id,
            lambda s: "sent to the back of its priority",
            lambda: self.shipments.touch(shipment_id, expected_version=expected_version),
        )

    def set_priority(self, shipment_id: str, priority: int, *, expected_version: int | None = None) -> Done[Shipment]:
        return self._shipment_change(
            "shipment.priority",
            shipment_id,
            lambda s: f"priority set to {s.priority}",
            lambda: self.shipments.set_priority(shipment_id, priority, expected_version=expected_version),
        )

    def send_to_dlq(self, shipment_id: str, reason: str, *, expected_version: int | None = None) -> Done[Shipment]:
        return self._shipment_change(
            "shipment.dlq",
            shipment_id,
            lambda s: f"sent to the DLQ: {reason}",
            lambda: self.shipments.send_to_dlq(shipment_id, reason, expected_version=expected_version),
        )

    def restore(
        self, shipment_id: str, *, expected_version: int | None = None, before: Shipment | None = None
    ) -> Done[Shipment]:
        return self._shipment_change(
            "shipment.restore",
            shipment_id,
            lambda s: "restored from the DLQ",
            lambda: self.shipments.restore(shipment_id, expected_version=expected_version),
            before,
        )

    def remove(self, shipment_id: str, *, expected_version: int | None = None) -> Done[Shipment]:
        return self._shipment_change(
            "shipment.remove",
            shipment_id,
            lambda s: "removed from the queue",
            lambda: self.shipments.remove(shipment_id, expected_version=expected_version),
        )

    def shipments_effect(self, action: str, selection: Iterable[Seen]) -> Effect:
        """What a bulk shipment action would do to each shipment, from the shipments now
        (one BatchGetItem per 100): those changed since they were shown are passed over."""
        if action not in SHIPMENT_EFFECTS:
            raise errors.InvalidRequest(f"Unknown shipment action {action!r}.")
        did, acts_on = SHIPMENT_EFFECTS[action]
        seen = {s.item_id: s for s in selection}
        found = {s.shipment_id: s for s in self.shipments.get_many(list(seen))}
        effect = Effect(did)
        for shipment_id, shown in seen.items():
            shipment = found.get(shipment_id)
            if shipment is None:
                effect.pass_over(shipment_id, GONE)
            elif shipment.version != shown.version:
                if shipment.change == SHIPMENT_CHANGES[action](shown.version):
                    effect.pass_over(shipment_id, DONE_ALREADY)
                else:
                    effect.changed_since(shipment_id, shipment_id, shipment.state.replace("_", " "))
            elif shipment.state in acts_on:
                effect.acting.append(shown)
            else:
                effect.pass_over(shipment_id, SHIPMENT_STATES[shipment.state])
        return effect

    def on_shipments(self, action: str, selection: Iterable[Seen], reason: str = "") -> BulkReport:
        """Restore, touch or send to the DLQ a selection, each shipment only as it was shown:
        the shipments it applies to as they are now, the others passed over with the reason."""
        do: dict[str, Callable[[Seen], object]] = {
            "restore": lambda seen: self.restore(seen.item_id, expected_version=seen.version),
            "touch": lambda seen: self.touch(seen.item_id, expected_version=seen.version),
            "dlq": lambda seen: self.send_to_dlq(
                seen.item_id, reason or "Sent to the DLQ by a supervisor", expected_version=seen.version
            ),
        }
        return self._apply(self.shipments_effect(action, selection), do[action])

    def restore_many(self, selection: Iterable[Seen]) -> BulkReport:
        return self.on_shipments("restore", selection)

    def send_many_to_dlq(self, selection: Iterable[Seen], reason: str) -> BulkReport:
        return self.on_shipments("dlq", selection, reason)

    def touch_many(self, selection: Iterable[Seen]) -> BulkReport:
        return self.on_shipments("touch", selection)

    # --- what changed ---------------------------------------------------------------

    @contextmanager
    def _telling_what_changed(self, kind: str, item_id: str):
        """A refusal because the item changed is told with its last recorded change: what,
        by whom, from where and how long ago (one Query of the item's history, only then)."""
        try:
            yield
        except errors.Conflict as exc:
            try:
                last = self.trail.for_target(target(kind, item_id), limit=1).entries
            except errors.DynamoError:
                last = []
            if last:
                entry = last[0]
                moment = entry.moment
                ago = f", {_ago((now() - moment).total_seconds())} ago" if moment else ""
                exc.message = f"{exc.message} Last change: {entry.summary} ({entry.actor}, {entry.source}{ago})."
                exc.args = (exc.message,)
            raise

    def _apply(self, effect: Effect, action: Callable[[Seen], object]) -> BulkReport:
        report = self._each(effect.acting, action)
        report.did, report.passed, report.changed = effect.did, effect.passed, effect.changed
        report.skipped += [(i, reason[0]) for reason, ids in effect.passed.items() for i in ids]
        return report

    @staticmethod
    def _each(selection: Iterable[Seen], action: Callable[[Seen], object]) -> BulkReport:
        report = BulkReport()
        for seen in {s.item_id: s for s in selection}.values():
            try:
                action(seen)
                report.done.append(seen.item_id)
            except (errors.Unavailable, errors.Throttled, errors.TableMissing):
                raise  # an outage stops the batch; what was done is in `report` and the trail
            except errors.DynamoError as exc:
                report.skipped.append((seen.item_id, exc.message))
        return report
