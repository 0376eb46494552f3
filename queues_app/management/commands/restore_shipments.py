from django.core.management.base import BaseCommand, CommandError

from queues_app.ddb import errors
from queues_app.shipments.queue import DEFAULT_QUEUE, ShipmentQueue


class Command(BaseCommand):
    help = (
        "Restore shipments from the DLQ: the ones named, or those matching a filter, at a limited rate. "
        "Each keeps its history (first enqueue, receive count, failure reasons)."
    )

    def add_arguments(self, parser):
        parser.add_argument("ids", nargs="*", help="shipment ids to restore")
        parser.add_argument("--queue", default=DEFAULT_QUEUE)
        parser.add_argument("--reason", help="only those whose DLQ reason contains this text")
        parser.add_argument("--older-than", type=float, help="only those in the DLQ for at least this many seconds")
        parser.add_argument("--newer-than", type=float, help="only those in the DLQ for at most this many seconds")
        parser.add_argument("--limit", type=int, default=1000, help="at most this many (default 1000)")
        parser.add_argument("--rate", type=float, default=10.0, help="restores per second (default 10)")
        parser.add_argument("--dry-run", action="store_true", help="list what would be restored")

    def handle(self, ids, queue, reason, older_than, newer_than, limit, rate, dry_run, **options):
        if rate <= 0:
            raise CommandError("--rate must be above zero")
        filtered = reason is not None or older_than is not None or newer_than is not None
        if ids and filtered:
            raise CommandError("Name shipments or give a filter, not both.")
        if not ids and not filtered:
            raise CommandError(
                "Name the shipments to restore, or give a filter (--reason, --older-than, --newer-than)."
            )
        shipments = ShipmentQueue()
        try:
            if not ids:
                matching = shipments.dlq_matching(
                    queue,
                    reason_contains=reason,
                    older_than_seconds=older_than,
                    newer_than_seconds=newer_than,
                    limit=limit,
                )
                ids = [s.shipment_id for s in matching]
            if dry_run:
                self.stdout.write(f"Would restore {len(ids)} shipment(s): {', '.join(ids) or '-'}")
                return
            report = shipments.restore_many(ids, rate_per_second=rate)
        except errors.DynamoError as exc:
            raise CommandError(exc.message) from exc
        for shipment_id, why in report.skipped:
            self.stdout.write(f"skipped {shipment_id}: {why}")
        self.stdout.write(self.style.SUCCESS(f"Restored {len(report.restored)} of {len(ids)} shipment(s)."))
