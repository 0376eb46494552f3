"""What the queues do on their own, recorded from what the domain returns: a caller given
an agent by the matcher (on the call's history and the agent's), escalation, the shipment
worker's dead-lettering and the task sweeper's shedding. The domains themselves never
record anything (docs/architecture.md, "The audit trail")."""

from __future__ import annotations

from queues_app import event_names as named
from queues_app.agents.records import Agent
from queues_app.audit.store import AuditTrail
from queues_app.calls.records import Call
from queues_app.ddb import errors
from queues_app.operations.entries import Author, snapshot
from queues_app.operations.wording import took, waited
from queues_app.shipments.queue import Shipment, ShipmentQueue, ShipmentStatus
from queues_app.tasks.queue import TaskQueue
from queues_app.tasks.records import ShedReport

# Who acted, for what the queues do on their own (source "system").
MATCHER, ESCALATION, SHIPMENT_WORKER, TASK_PROCESSOR = "matcher", "escalation", "shipment worker", "task processor"
ANSWER_TIMEOUT = "answer timeout"  # an offered call not picked up in time (ANSWER_TIMEOUT_SECONDS)
WRAP_UP_TIMEOUT = "wrap-up timeout"  # a wrap-up past its limit (WRAP_UP_SECONDS, a line's wrap_up_seconds)
PRESENCE = "presence"  # an agent's client quiet past AGENT_PRESENCE_SECONDS
SYSTEM = "system"


class SystemEvents:
    """Entries for what the queues did on their own, on the items concerned: source
    `system`, the actor naming the part that acted. Each call writes its entries in one
    request (one PutItem, or one BatchWriteItem for two or more)."""

    def __init__(self, trail: AuditTrail, *, trace_id: str | None = None):
        self.trail = trail
        self.trace_id = trace_id

    def entry(
        self, actor: str, action: str, kind: str, item_id: str, summary: str, before, after, source: str = SYSTEM
    ) -> dict:
        return Author(actor, source, self.trace_id).entry(action, kind, item_id, summary, before, after)

    def call_assigned(self, call: Call, by: str = MATCHER, source: str = SYSTEM) -> dict:
        """The call's side of an assignment, by the matcher on its own, or by whoever's
        change brought it about (`by` from `source`: one event, one actor)."""
        return self.entry(
            by,
            named.CALL_ASSIGNED,
            "call",
            call.call_id,
            f"{'offered' if call.offer_sk else 'assigned'} to {call.agent_name} after waiting {waited(call)}",
            {"status": "waiting"},
            {
                "status": call.state,
                "agent_name": call.agent_name,
                "agent_id": call.agent_id,
                "assigned_at": call.assigned_at,
            },
            source,
        )

    def agent_assigned(self, call: Call, by: str = MATCHER, source: str = SYSTEM) -> dict:
        """The agent's side of an assignment: they took the call, or it rings for them."""
        status = "ringing" if call.offer_sk else "attending"
        return self.entry(
            by,
            named.AGENT_ASSIGNED,
            "agent",
            call.agent_id or "",
            f"{call.agent_name} {took(call)}",
            {"status": "queued"},
            {"status": status, "call_id": call.call_id},
            source,
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
                named.CALL_RELAXED,
                "call",
                call.call_id,
                summary,
                {"preferences": before},
                {"preferences": call.preferences},
            )
        ]
        if call.agent_id:
            entries += [self.call_assigned(call, ESCALATION), self.agent_assigned(call, ESCALATION)]
        self.write(*entries)

    def missed(self, call: Call) -> None:
        """An offered call was not picked up in time: back in line (and perhaps given to
        the next agent at once), its agent set not ready (`missed`)."""
        part: dict = next((leg for leg in reversed(call.legs) if leg.get("how") == "missed"), {})
        name, agent_id = part.get("agent_name") or "the agent", part.get("agent_id") or ""
        state = f"then given to {call.agent_name}" if call.agent_id else "back at its place in line"
        entries = [
            self.entry(
                ANSWER_TIMEOUT,
                named.CALL_MISSED,
                "call",
                call.call_id,
                f"not picked up in time by {name}: {state}",
                {"status": "assigned", "agent_name": name},
                {"status": call.status, "agent_name": call.agent_name},
            ),
            self.entry(
                ANSWER_TIMEOUT,
                named.AGENT_NOT_READY,
                "agent",
                agent_id,
                f"{name} not ready: missed call {call.call_id}",
                {"status": "ringing", "call_id": call.call_id},
                {"status": "not_ready", "reason": "missed"},
            ),
        ]
        if call.agent_id:
            entries += [self.call_assigned(call, ANSWER_TIMEOUT), self.agent_assigned(call, ANSWER_TIMEOUT)]
        self.write(*entries)

    def disconnected(self, agent: Agent, call: Call | None) -> None:
        """An agent's client went quiet: not ready (`disconnected`), out of every queue; the
        call that rang for them back in line (or given to the next agent)."""
        was = {"status": "ringing", "call_id": call.call_id} if call else {"status": "queued"}
        entries = [
            self.entry(
                PRESENCE,
                named.AGENT_DISCONNECTED,
                "agent",
                agent.agent_id,
                f"{agent.name} not ready: no heartbeat from their client",
                was,
                {"status": "not_ready", "reason": "disconnected"},
            )
        ]
        if call:
            state = f"then given to {call.agent_name}" if call.agent_id else "back at its place in line"
            entries.append(
                self.entry(
                    PRESENCE,
                    named.CALL_MISSED,
                    "call",
                    call.call_id,
                    f"{agent.name}'s phone is gone: {state}",
                    {"status": "assigned", "agent_name": agent.name},
                    {"status": call.status, "agent_name": call.agent_name},
                )
            )
        if call and call.agent_id:
            entries += [self.call_assigned(call, PRESENCE), self.agent_assigned(call, PRESENCE)]
        self.write(*entries)

    def wrap_up_ended(self, agent: Agent, call: Call | None) -> None:
        """A wrap-up past its limit ended: the agent made available, queued or given a caller."""
        state = f"took waiting call {call.call_id}" if call else "queued"
        entries = [
            self.entry(
                WRAP_UP_TIMEOUT,
                named.AGENT_AVAILABLE,
                "agent",
                agent.agent_id,
                f"{agent.name}'s wrap-up reached its limit: {state}",
                {"status": "wrap_up"},
                {"status": agent.status, "call_id": agent.call_id},
            )
        ]
        if call:
            entries.append(self.call_assigned(call, WRAP_UP_TIMEOUT))
        self.write(*entries)

    def dead_lettered(self, before: Shipment | None, after: Shipment) -> None:
        """The shipment worker sent a shipment to the DLQ after its last allowed attempt."""
        self.write(
            self.entry(
                SHIPMENT_WORKER,
                named.SHIPMENT_DEAD_LETTERED,
                "shipment",
                after.shipment_id,
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
                named.TASKS_SHED,
                "queue",
                "tasks",
                f"shed {report.shed} expired task{'s' if report.shed != 1 else ''}"
                + (f", the oldest {oldest:.0f} s old" if oldest is not None else ""),
                None,
                {"shed": report.shed, "oldest_age_seconds": round(oldest, 1) if oldest is not None else None},
            )
        )


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
