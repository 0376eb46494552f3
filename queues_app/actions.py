"""Every change a supervisor, a staff member or the phone system makes to the queues.

Pages, admin actions and the JSON API all go through `Operations`, so each change is
made by the same service call and written to the audit trail the same way: who, from
where, what, the item before and after, and the trace id of the request.
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
from queues_app.monitoring import counters
from queues_app.shipments.queue import Shipment, ShipmentQueue, ShipmentState


def snapshot(record) -> dict | None:
    return dataclasses.asdict(record) if record is not None else None


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

    @classmethod
    def for_request(cls, request, source: str = "page") -> Operations:
        """Changes made by the request's user, recorded with its trace id."""
        return cls(request.user.get_username(), source, trace_id=getattr(request, "trace_id", None))

    def _record(self, action: str, kind: str, item_id: str, summary: str, before, after) -> None:
        self.trail.record(
            actor=self.actor,
            source=self.source,
            action=action,
            target=target(kind, item_id),
            summary=summary,
            before=snapshot(before),
            after=snapshot(after),
            trace_id=self.trace_id,
        )

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
        summary = f"{agent.name} took call {call.call_id}" if call else f"{agent.name} queued"
        self._record("agent.available", "agent", agent_id, summary, before, agent)
        return agent, call

    def release(self, agent_id: str, then: str = "queue") -> tuple[Agent, Call | None]:
        before = self.agents.get(agent_id)
        agent, call = self.router.release(agent_id, then=then)
        summary = f"released {agent.name} from call {before.call_id}, then {then.replace('_', '-')}"
        self._record("agent.release", "agent", agent_id, summary, before, agent)
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
        self, preferences: dict, *, priority: int = 0, order: str | None = None, idempotency_key: str | None = None
    ) -> tuple[Call, bool]:
        BackpressureGate(self.db).check(counters.CALLS)
        call, created = self.router.create_call(
            preferences, priority=priority, order=order, idempotency_key=idempotency_key
        )
        if created:
            outcome = f"assigned to {call.agent_name}" if call.agent_id else "waiting"
            self._record("call.create", "call", call.call_id, f"new call, {outcome}", None, call)
        return call, created

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
