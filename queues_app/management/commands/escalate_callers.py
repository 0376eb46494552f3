import time

from queues_app.agents.presence import presence_seconds
from queues_app.agents.skills import describe_preferences
from queues_app.audit.store import AuditTrail
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.figures import heartbeats
from queues_app.management.arguments import BackgroundCommand, float_range
from queues_app.management.loops import repeat_until_stopped
from queues_app.management.outcomes import dynamo_failure
from queues_app.operations.system import SystemEvents

# A callback due again (or scheduled) enters the line within this many seconds of its time.
CALLBACK_SWEEP_SECONDS = 5.0


class Command(BackgroundCommand):
    help = (
        "Relax the preferences of callers who have waited too long (SWITCHBOARD_ESCALATION) and "
        "try to match them again; put calls not picked up in time (ANSWER_TIMEOUT_SECONDS) back in line; put callbacks "
        "not reached back at their place when their retry is due; make "
        "available the agents whose wrap-up reached its limit (WRAP_UP_SECONDS, a line's wrap_up_seconds); set "
        "not ready the queued or ringing agents whose client sent no heartbeat (AGENT_PRESENCE_SECONDS). "
        "One pass (exits non-zero when it could not be made), or every "
        "N seconds with --every until SIGTERM or Ctrl-C."
    )

    def add_arguments(self, parser):
        when = parser.add_mutually_exclusive_group()
        when.add_argument(
            "--every", type=float_range(0.1, 3600), default=None, help="repeat every N seconds until stopped"
        )
        when.add_argument("--once", action="store_true", help="one pass, then stop (what happens without --every)")

    def handle(self, every=None, once=False, **options):
        center = CallCenter()
        if once or every is None:
            try:
                self._escalate(center)
            except errors.DynamoError as exc:
                raise dynamo_failure(exc, center.db, "the escalation pass did not finish") from exc
            return
        repeat_until_stopped(
            heartbeats.ESCALATOR,
            center.db,
            every,
            lambda: self._escalate(center),
            lambda problem: self.stderr.write(f"escalation pass failed: {problem}"),
        )

    _presence_next = 0.0
    _callbacks_next = 0.0

    def _quiet_agents(self, center: CallCenter):
        """The agents whose client went quiet, looked for every quarter of the limit (it
        reads the queued agents), not on every pass."""
        limit = presence_seconds()
        if limit is None or time.monotonic() < self._presence_next:
            return []
        self._presence_next = time.monotonic() + max(1.0, limit / 4)
        return center.disconnect_absent()

    def _due_callbacks(self, center: CallCenter):
        """The callbacks whose time came, put in line: looked for every CALLBACK_SWEEP_SECONDS
        (a Query of each of their partitions), not on every pass."""
        if time.monotonic() < self._callbacks_next:
            return []
        self._callbacks_next = time.monotonic() + CALLBACK_SWEEP_SECONDS
        return center.enter_due_callbacks()

    def _escalate(self, center: CallCenter) -> None:
        events = SystemEvents(AuditTrail(center.db))
        for call in center.miss_expired_offers():
            events.missed(call)
            state = f"given to {call.agent_name}" if call.agent_id else "waiting at its place"
            self.stdout.write(f"call {call.call_id}: not picked up in time; {state}")
        for call in self._due_callbacks(center):
            state = f"reserved {call.agent_name}" if call.agent_id else "waiting at its place"
            self.stdout.write(f"call {call.call_id}: callback due again; {state}")
        for outcome in center.end_overdue_wrap_ups():
            agent, call = outcome
            events.wrap_up_ended(agent, call)
            self.stdout.write(f"agent {agent.agent_id}: wrap-up reached its limit; {agent.doing}")
        for agent, call in self._quiet_agents(center):
            events.disconnected(agent, call)
            rang = f"; call {call.call_id} back in line" if call else ""
            self.stdout.write(f"agent {agent.agent_id}: no heartbeat; not ready (disconnected){rang}")
        for call in center.escalate():
            # On the call's history (and the agent's, when it found one); an answer is
            # counted by the fact its assignment wrote.
            events.relaxed(call)
            relaxed = ", ".join(r["dimension"] for r in call.relaxed)
            state = f"assigned to {call.agent_name}" if call.agent_id else "still waiting"
            self.stdout.write(
                f"call {call.call_id}: relaxed {relaxed}; now {describe_preferences(call.preferences)}; {state}"
            )
