import time

from django.core.management.base import BaseCommand, CommandError

from queues_app.agents.router import Router
from queues_app.agents.skills import describe_preferences
from queues_app.ddb import errors


class Command(BaseCommand):
    help = (
        "Relax the preferences of callers who have waited too long (SWITCHBOARD_ESCALATION) and "
        "try to match them again. Once, or every N seconds with --every."
    )

    def add_arguments(self, parser):
        parser.add_argument("--every", type=float, default=None, help="repeat every N seconds until stopped")

    def handle(self, every=None, **options):
        router = Router()
        while True:
            try:
                for call in router.escalate():
                    relaxed = ", ".join(r["dimension"] for r in call.relaxed)
                    state = f"assigned to {call.agent_name}" if call.agent_id else "still waiting"
                    self.stdout.write(
                        f"call {call.call_id}: relaxed {relaxed}; now {describe_preferences(call.preferences)}; {state}"
                    )
            except errors.DynamoError as exc:
                if every is None:
                    raise CommandError(exc.message) from exc
                self.stderr.write(f"escalation pass failed: {exc.message}")
            if every is None:
                return
            try:
                time.sleep(every)
            except KeyboardInterrupt:
                return
