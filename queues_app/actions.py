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
from dataclasses import dataclass, field

from queues_app.admission import Admitted, BackpressureGate, ShipmentAdmission
from queues_app.agents.records import Agent, AgentStatus, Call
from queues_app.agents.roster import Agents
from queues_app.agents.router import Router
from queues_app.audit_trail import AuditTrail, target
from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo, default
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
        after = super().fail(shipment_id, receipt, reason)
        if after.status == ShipmentStatus.IN_DLQ:
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
# action -> (what it does, the states it acts on); the same rules as the service's conditions.
SHIPMENT_EFFECTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "restore": ("restored", (ShipmentState.IN_DLQ,)),
    "touch": ("sent to the back", (ShipmentState.QUEUED,)),
    "dlq": (
        "sent to the DLQ",
        (ShipmentState.QUEUED, ShipmentState.DELAYED, ShipmentState.PROCESSING, ShipmentState.READY),
    ),
}


@dataclass
class Effect:
    """What a bulk action would do to each selected item, read from the items as they are
    now: the ids it would change, and the others grouped by why it would pass them over."""

    did: str  # what happens to the ones it changes: "released"
    acting: list[str] = field(default_factory=list)
    passed: dict[Reason, list[str]] = field(default_factory=dict)

    @property
    def selected(self) -> int:
        return len(self.acting) + sum(len(ids) for ids in self.passed.values())

    def pass_over(self, item_id: str, reason: Reason) -> None:
        self.passed.setdefault(reason, []).append(item_id)

    def reasons(self) -> list[str]:
        return [_count(len(ids), *reason) for reason, ids in self.passed.items()]

    @property
    def question(self) -> str:
        """For the confirmation: "3 selected; 1 will be released, 2 are not on a call"."""
        will = f"{len(self.acting)} will be {self.did}" if self.acting else f"none will be {self.did}"
        return "; ".join([f"{self.selected} selected", ", ".join([will, *self.reasons()])])


@dataclass
class BulkReport:
    """What a bulk action did: the ids it changed, and why it skipped the others (those it
    passed over from the start, grouped in `passed`, and those that failed)."""

    done: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    did: str = "done"
    passed: dict[Reason, list[str]] = field(default_factory=dict)

    @property
    def summary(self) -> str:
        passed = {i for ids in self.passed.values() for i in ids}
        failed = [(i, why) for i, why in self.skipped if i not in passed]
        parts = [f"{len(self.done)} {self.did}", *(_count(len(ids), *r) for r, ids in self.passed.items())]
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

    def update_agent(self, agent_id: str, *, name: str, skills: dict[str, list[str]], expected_version: int) -> Agent:
        before = self.agents.get(agent_id)
        after = self.agents.update(agent_id, name=name, skills=skills, expected_version=expected_version)
        self._record("agent.update", "agent", agent_id, f"edited agent {after.name}", before, after)
        return after

    def make_available(self, agent_id: str) -> tuple[Agent, Call | None]:
        before = self.agents.get(agent_id)
        agent, call = self.router.make_available(agent_id)
        if call:
            summary = f"{agent.name} took waiting call {call.call_id} (the caller waited {_waited(call)})"
            self._record("agent.available", "agent", agent_id, summary, before, agent, self.system.call_assigned(call))
            answered(self.db, call)
        else:
            self._record("agent.available", "agent", agent_id, f"{agent.name} queued", before, agent)
        return agent, call

    def release(self, agent_id: str, then: str = "queue") -> tuple[Agent, Call | None]:
        before = self.agents.get(agent_id)
        agent, call = self.router.release(agent_id, then=then)
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
        return agent, call

    def log_off(self, agent_id: str) -> Agent:
        before = self.agents.get(agent_id)
        agent = self.router.log_off(agent_id)
        self._record("agent.offline", "agent", agent_id, f"logged {agent.name} off", before, agent)
        return agent

    def agents_effect(self, action: str, agent_ids: Iterable[str]) -> Effect:
        """What `on_agents` would do to each agent, from their records now (one BatchGetItem)."""
        if action not in AGENT_REASONS:
            raise errors.InvalidRequest(f"Unknown agent action {action!r}.")
        ids = list(dict.fromkeys(agent_ids))
        found = {a.agent_id: a for a in self.agents.get_many(ids)}
        effect = Effect(AGENT_EFFECTS[action])
        for agent_id in ids:
            agent = found.get(agent_id)
            reason = GONE if agent is None else AGENT_REASONS[action].get(agent.status)
            if reason:
                effect.pass_over(agent_id, reason)
            else:
                effect.acting.append(agent_id)
        return effect

    def on_agents(self, action: str, agent_ids: Iterable[str]) -> BulkReport:
        """The same agent action on a selection: on those it applies to as they are now,
        the others passed over with the reason; one agent's conflict does not stop the rest."""
        do: dict[str, Callable[[str], object]] = {
            "available": self.make_available,
            "release": self.release,
            "offline": self.log_off,
        }
        return self._apply(self.agents_effect(action, agent_ids), do[action])

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

    def abandon_call(self, call_id: str) -> Call:
        """The caller hung up while waiting (the phone system, or a supervisor ending a
        waiting call as abandoned): out of line, counted in the service level."""
        call = self.router.abandon(call_id)
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
        return call

    # --- shipments ------------------------------------------------------------------

    def submit_shipment(
        self,
        data: dict,
        *,
        tenant: str | None = None,
        priority: int = 0,
        delay_seconds: float = 0,
        shipment_id: str | None = None,
    ) -> Admitted:
        admitted = ShipmentAdmission(self.db).submit(
            data,
            tenant=tenant,
            priority=priority,
            delay_seconds=delay_seconds,
            shipment_id=shipment_id,
            trace_id=self.trace_id,
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
        change: Callable[[], Shipment],
        before: Shipment | None = None,
    ) -> Shipment:
        before = before or self.shipments.get(shipment_id)
        after = change()
        self._record(action, "shipment", shipment_id, summary(after), before, after)
        return after

    def touch(self, shipment_id: str, *, expected_version: int | None = None) -> Shipment:
        return self._shipment_change(
            "shipment.touch",
            shipment_id,
            lambda s: "sent to the back of its priority",
            lambda: self.shipments.touch(shipment_id, expected_version=expected_version),
        )

    def set_priority(self, shipment_id: str, priority: int, *, expected_version: int | None = None) -> Shipment:
        return self._shipment_change(
            "shipment.priority",
            shipment_id,
            lambda s: f"priority set to {s.priority}",
            lambda: self.shipments.set_priority(shipment_id, priority, expected_version=expected_version),
        )

    def send_to_dlq(self, shipment_id: str, reason: str, *, expected_version: int | None = None) -> Shipment:
        return self._shipment_change(
            "shipment.dlq",
            shipment_id,
            lambda s: f"sent to the DLQ: {reason}",
            lambda: self.shipments.send_to_dlq(shipment_id, reason, expected_version=expected_version),
        )

    def restore(
        self, shipment_id: str, *, expected_version: int | None = None, before: Shipment | None = None
    ) -> Shipment:
        return self._shipment_change(
            "shipment.restore",
            shipment_id,
            lambda s: "restored from the DLQ",
            lambda: self.shipments.restore(shipment_id, expected_version=expected_version),
            before,
        )

    def remove(self, shipment_id: str, *, expected_version: int | None = None) -> Shipment:
        return self._shipment_change(
            "shipment.remove",
            shipment_id,
            lambda s: "removed from the queue",
            lambda: self.shipments.remove(shipment_id, expected_version=expected_version),
        )

    def shipments_effect(self, action: str, shipment_ids: Iterable[str]) -> Effect:
        """What a bulk shipment action would do to each shipment, from the shipments now
        (one BatchGetItem per 100)."""
        if action not in SHIPMENT_EFFECTS:
            raise errors.InvalidRequest(f"Unknown shipment action {action!r}.")
        did, acts_on = SHIPMENT_EFFECTS[action]
        ids = list(dict.fromkeys(shipment_ids))
        found = {s.shipment_id: s for s in self.shipments.get_many(ids)}
        effect = Effect(did)
        for shipment_id in ids:
            shipment = found.get(shipment_id)
            if shipment is None:
                effect.pass_over(shipment_id, GONE)
            elif shipment.state in acts_on:
                effect.acting.append(shipment_id)
            else:
                effect.pass_over(shipment_id, SHIPMENT_STATES[shipment.state])
        return effect

    def on_shipments(self, action: str, shipment_ids: Iterable[str], reason: str = "") -> BulkReport:
        """Restore, touch or send to the DLQ a selection: the shipments it applies to as
        they are now, the others passed over with the reason."""
        do: dict[str, Callable[[str], object]] = {
            "restore": self.restore,
            "touch": self.touch,
            "dlq": lambda shipment_id: self.send_to_dlq(shipment_id, reason or "Sent to the DLQ by a supervisor"),
        }
        return self._apply(self.shipments_effect(action, shipment_ids), do[action])

    def restore_many(self, shipment_ids: Iterable[str]) -> BulkReport:
        return self.on_shipments("restore", shipment_ids)

    def send_many_to_dlq(self, shipment_ids: Iterable[str], reason: str) -> BulkReport:
        return self.on_shipments("dlq", shipment_ids, reason)

    def touch_many(self, shipment_ids: Iterable[str]) -> BulkReport:
        return self.on_shipments("touch", shipment_ids)

    def _apply(self, effect: Effect, action: Callable[[str], object]) -> BulkReport:
        report = self._each(effect.acting, action)
        report.did, report.passed = effect.did, effect.passed
        report.skipped += [(i, reason[0]) for reason, ids in effect.passed.items() for i in ids]
        return report

    @staticmethod
    def _each(ids: Iterable[str], action: Callable[[str], object]) -> BulkReport:
        report = BulkReport()
        for item_id in dict.fromkeys(ids):
            try:
                action(item_id)
                report.done.append(item_id)
            except (errors.Unavailable, errors.Throttled, errors.TableMissing):
                raise  # an outage stops the batch; what was done is in `report` and the trail
            except errors.DynamoError as exc:
                report.skipped.append((item_id, exc.message))
        return report
