import signal
import threading

from queues_app.agents.router import Router
from queues_app.agents.skills import describe_preferences
from queues_app.ddb import errors
from queues_app.management.arguments import CheckedCommand, float_range
from queues_app.management.outcomes import dynamo_failure
from queues_app.monitoring import heartbeats


class Command(CheckedCommand):
    help = (
        "Relax the preferences of callers who have waited too long (SWITCHBOARD_ESCALATION) and "
        "try to match them again. One pass (exits non-zero when it could not be made), or every "
        "N seconds with --every until SIGTERM or Ctrl-C."
    )

    def add_arguments(self, parser):
        when = parser.add_mutually_exclusive_group()
        when.add_argument(
            "--every", type=float_range(0.1, 3600), default=None, help="repeat every N seconds until stopped"
        )
        when.add_argument("--once", action="store_true", help="one pass, then stop (what happens without --every)")

    def handle(self, every=None, once=False, **options):
        router = Router()
        if every is None:
            try:
                self._escalate(router)
            except errors.DynamoError as exc:
                raise dynamo_failure(exc, router.db, "the escalation pass did not finish") from exc
            return
        stop = threading.Event()
        previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
        liveness = heartbeats.Heartbeat(heartbeats.ESCALATOR, router.db, every=max(heartbeats.BEAT_SECONDS, every))
        try:
            while not stop.is_set():
                liveness.beat(handled=liveness.handled + 1)  # passes made
                try:
                    self._escalate(router)
                except errors.DynamoError as exc:
                    self.stderr.write(f"escalation pass failed: {exc.message}")
                stop.wait(every)
        finally:
            liveness.stopped()
            for s, handler in previous.items():
                signal.signal(s, handler)

    def _escalate(self, router: Router) -> None:
        for call in router.escalate():
            relaxed = ", ".join(r["dimension"] for r in call.relaxed)
            state = f"assigned to {call.agent_name}" if call.agent_id else "still waiting"
            self.stdout.write(
                f"call {call.call_id}: relaxed {relaxed}; now {describe_preferences(call.preferences)}; {state}"
            )
