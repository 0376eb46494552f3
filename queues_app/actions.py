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
from queues_app.agents.records import Agent, Call
from queues_app.agents.roster import Agents
from queues_app.agents.router import Router
from queues_app.audit_trail import AuditTrail, target
from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo, default
from queues_app.monitoring import counters
from queues_app.shipments.queue import Shipment, ShipmentQueue, ShipmentStatus


def snapshot(record) -> dict | None:
    return dataclasses.asdict(record) if record is not None else None


@dataclass
class BulkReport:
    """What a bulk action did: the ids it changed, and why it skipped the others."""

    done: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def summary(self) -> str:
        text = f"{len(self.done)} done"
        if self.skipped:
            text += f", {len(self.skipped)} skipped ({'; '.join(f'{i}: {why}' for i, why in self.skipped[:3])}"
            text += ", ..." if len(self.skipped) > 3 else ""
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

    def on_agents(self, action: str, agent_ids: Iterable[str]) -> BulkReport:
        """The same agent action on a selection; one agent's conflict does not stop the rest."""
        do: dict[str, Callable[[str], object]] = {
            "available": self.make_available,
            "release": self.release,
            "offline": self.log_off,
        }
        if action not in do:
            raise errors.InvalidRequest(f"Unknown agent action {action!r}.")
        return self._each(agent_ids, do[action])

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

    def restore_many(self, shipment_ids: Iterable[str]) -> BulkReport:
        def restore_one(shipment_id: str) -> Shipment:
            current = self.shipments.get(shipment_id)
            if current.status != ShipmentStatus.IN_DLQ:
                raise errors.Conflict(f"not in the DLQ ({current.state.replace('_', ' ')})")
            return self.restore(shipment_id, expected_version=current.version, before=current)

        return self._each(shipment_ids, restore_one)

    def send_many_to_dlq(self, shipment_ids: Iterable[str], reason: str) -> BulkReport:
        return self._each(shipment_ids, lambda shipment_id: self.send_to_dlq(shipment_id, reason))

    def touch_many(self, shipment_ids: Iterable[str]) -> BulkReport:
        return self._each(shipment_ids, self.touch)

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
