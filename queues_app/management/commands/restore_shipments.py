from django.core.management.base import CommandError

from queues_app.ddb import errors
from queues_app.management.arguments import (
    SHIPMENT_QUEUES,
    CheckedCommand,
    age,
    float_range,
    int_range,
    text,
)
from queues_app.management.outcomes import dynamo_failure
from queues_app.shipments.queue import DEFAULT_QUEUE, ShipmentQueue, ShipmentStatus
from queues_app.webhooks.events import CALLBACK_QUEUE

SHOWN = 5  # ids named in the one-line error; the rest are counted


def listed(pairs: list[tuple[str, str]]) -> str:
    shown = ", ".join(f"{sid} ({why.rstrip('.')})" for sid, why in pairs[:SHOWN])
    return shown + (f" and {len(pairs) - SHOWN} more" if len(pairs) > SHOWN else "")


class Command(CheckedCommand):
    help = (
        "Restore shipments from the DLQ: the ones named, or those matching a filter, at a limited rate. "
        "Each keeps its history (first enqueue, receive count, failure reasons). Exits non-zero when a "
        "shipment named or matched could not be restored (not in the DLQ, unknown, changed meanwhile)."
    )

    def add_arguments(self, parser):
        parser.add_argument("ids", nargs="*", type=text(200), help="shipment ids to restore")
        parser.add_argument(
            "--queue",
            choices=(*SHIPMENT_QUEUES, CALLBACK_QUEUE),
            default=DEFAULT_QUEUE,
            help="the DLQ of this queue (callbacks: the call events no callback took)",
        )
        parser.add_argument("--reason", type=text(500), help="only those whose DLQ reason contains this text")
        parser.add_argument("--older-than", type=age, help="only those in the DLQ for at least this many seconds")
        parser.add_argument("--newer-than", type=age, help="only those in the DLQ for at most this many seconds")
        parser.add_argument("--limit", type=int_range(1, 100_000), default=1000, help="at most this many")
        parser.add_argument("--rate", type=float_range(above=0, high=1000), default=10.0, help="restores per second")
        parser.add_argument("--dry-run", action="store_true", help="list what would be restored, change nothing")

    def handle(self, ids, queue, reason, older_than, newer_than, limit, rate, dry_run, **options):
        filtered = reason is not None or older_than is not None or newer_than is not None
        if ids and filtered:
            raise CommandError("Name shipments or give a filter, not both.")
        if not ids and not filtered:
            raise CommandError(
                "Name the shipments to restore, or give a filter (--reason, --older-than, --newer-than)."
            )
        if older_than is not None and newer_than is not None and newer_than < older_than:
            raise CommandError(
                f"--newer-than {newer_than:g} is less than --older-than {older_than:g}: nothing could match."
            )
        ids = list(dict.fromkeys(ids))  # each once, in the order given
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
                if not ids:
                    self.stdout.write(f"No shipment in the {queue!r} DLQ matches; nothing to restore.")
                    return
            if dry_run:
                self._dry_run(shipments, ids)
                return
            report = shipments.restore_many(ids, rate_per_second=rate)
        except errors.DynamoError as exc:
            raise dynamo_failure(exc, shipments.db, "nothing more was restored") from exc
        for shipment_id, why in report.skipped:
            self.stdout.write(f"skipped {shipment_id}: {why}")
        summary = f"Restored {len(report.restored)} of {len(ids)} shipment(s)"
        if report.skipped:
            raise CommandError(f"{summary}; not restored: {listed(report.skipped)}.")
        self.stdout.write(self.style.SUCCESS(f"{summary}."))

    def _dry_run(self, shipments: ShipmentQueue, ids: list[str]) -> None:
        """What a restore would do: the ids in the DLQ, and why each other one would be skipped."""
        found = {s.shipment_id: s for s in shipments.get_many(ids)}
        restorable, skipped = [], []
        for sid in ids:
            shipment = found.get(sid)
            if shipment is None:
                skipped.append((sid, f"no shipment with id {sid!r}"))
            elif shipment.status != ShipmentStatus.IN_DLQ:
                skipped.append((sid, f"not in the DLQ ({shipment.state.replace('_', ' ')})"))
            else:
                restorable.append(sid)
        self.stdout.write(f"Would restore {len(restorable)} shipment(s): {', '.join(restorable) or '-'}")
        for sid, why in skipped:
            self.stdout.write(f"would skip {sid}: {why}")
        if skipped:
            raise CommandError(f"{len(skipped)} of {len(ids)} could not be restored: {listed(skipped)}.")
