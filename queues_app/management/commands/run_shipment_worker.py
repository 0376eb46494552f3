import signal

from django.core.management.base import CommandError

from queues_app.management.arguments import (
    DAY,
    SHIPMENT_QUEUES,
    CheckedCommand,
    float_range,
    positive_int,
    share,
)
from queues_app.management.outcomes import require_tables
from queues_app.shipments.fairness import FairConsumer
from queues_app.shipments.queue import DEFAULT_QUEUE, ShipmentQueue
from queues_app.shipments.worker import ShipmentWorker, demo_handler

MAX_VISIBILITY = 12 * 3600  # as SQS: a lease may run twelve hours at most


class Command(CheckedCommand):
    help = (
        "Consume shipments: peek with a visibility timeout, run the demo handler (failing a "
        "share of them) while heartbeating, then complete or fail. SIGTERM or Ctrl-C finishes "
        "or gives back the shipment in hand."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--queue",
            choices=SHIPMENT_QUEUES,
            default=None,
            help=f"the queue to consume; without it, {DEFAULT_QUEUE} (not with --fair)",
        )
        parser.add_argument(
            "--visibility",
            type=float_range(1, MAX_VISIBILITY),
            default=30.0,
            help="lease length in seconds (heartbeats renew it every third)",
        )
        parser.add_argument("--fail-share", type=share, default=0.1, help="share of shipments the demo handler fails")
        parser.add_argument(
            "--work-seconds", type=float_range(0, 3600), default=0.5, help="average time the demo handler takes"
        )
        parser.add_argument(
            "--grace", type=float_range(0, DAY), default=10.0, help="seconds to finish after a stop request"
        )
        parser.add_argument("--max", type=positive_int, default=None, help="stop after this many shipments")
        parser.add_argument("--until-empty", action="store_true", help="stop when nothing is visible")
        parser.add_argument(
            "--fair",
            action="store_true",
            help="the live queue first, the spillover queue when live is caught up; sideline "
            "live work older than SPILLOVER_AFTER_SECONDS",
        )

    def handle(self, queue, visibility, fail_share, work_seconds, grace, max, until_empty, fair=False, **options):
        if fair and queue is not None:
            raise CommandError("--fair takes the live queue and then the spillover queue: leave out --queue.")
        queue = queue or DEFAULT_QUEUE
        shipments = ShipmentQueue()
        if until_empty:
            require_tables(shipments.db, "shipments")  # a run that should end does not wait for DynamoDB
        worker = ShipmentWorker(
            shipments,
            demo_handler(fail_share=fail_share, work_seconds=work_seconds),
            queue_name=queue,
            visibility_timeout=visibility,
            grace_seconds=grace,
            fair=FairConsumer(shipments) if fair else None,
        )
        previous = {
            signum: signal.signal(signum, lambda *_: worker.stop()) for signum in (signal.SIGTERM, signal.SIGINT)
        }
        where = "live, then spillover" if fair else repr(queue)
        self.stdout.write(f"Shipment worker on queue {where} (lease {visibility:g}s); stop with SIGTERM.")
        try:
            stats = worker.run(max_shipments=max, stop_when_empty=until_empty)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        self.stdout.write(
            f"Stopped: {stats.completed} completed, {stats.failed} failed, {stats.released} given back, "
            f"{stats.lost_leases} lost leases, {stats.heartbeats} heartbeats."
        )
