from django.core.management.base import CommandError

from queues_app.ddb import errors
from queues_app.ddb.client import default
from queues_app.management.arguments import CheckedCommand, float_range
from queues_app.management.outcomes import dynamo_failure
from queues_app.monitoring import invariants


class Command(CheckedCommand):
    help = (
        "Check the queue invariants on the call-center table (queue depths, message items of "
        "queued agents, no agent both attending and queued, no call both waiting and assigned, "
        "no agent holding two calls) and on the shipments table (every shipment in exactly one "
        "state: its ready, invisible and DLQ index entries agree with its status, are complete, "
        "in its queue and sorted as the code writes them), and list every violation. Reads both "
        "tables with a Scan; violations are confirmed by re-running the audit unless --once is given."
    )

    def add_arguments(self, parser):
        parser.add_argument("--once", action="store_true", help="one pass only: do not re-run to confirm violations")
        parser.add_argument(
            "--pause",
            type=float_range(0, 60),
            default=invariants.DEFAULT_PAUSE,
            help="seconds to wait between passes",
        )

    def handle(self, once=False, pause=invariants.DEFAULT_PAUSE, **options):
        db = default()
        try:
            report = invariants.check(db, passes=1 if once else invariants.DEFAULT_PASSES, pause=pause)
        except errors.DynamoError as exc:
            raise dynamo_failure(exc, db, "nothing was checked") from exc
        if report.violations:
            for violation in report.violations:
                self.stdout.write(str(violation))
            passes = f" in each of {report.passes} passes" if report.passes > 1 else ""
            raise CommandError(f"{len(report.violations)} violation(s) found{passes}; {report.summary()}.")
        self.stdout.write(self.style.SUCCESS(f"OK: no violations; {report.summary()}."))
