import signal

from django.core.management.base import BaseCommand

from queues_app.shipments.fairness import FairConsumer
from queues_app.shipments.queue import DEFAULT_QUEUE, ShipmentQueue
from queues_app.shipments.worker import ShipmentWorker, demo_handler


class Command(BaseCommand):
    help = (
        "Consume shipments: peek with a visibility timeout, run the demo handler (failing a "
        "share of them) while heartbeating, then complete or fail. SIGTERM or Ctrl-C finishes "
        "or gives back the shipment in hand."
    )

    def add_arguments(self, parser):
        parser.add_argument("--queue", default=DEFAULT_QUEUE)
        parser.add_argument("--visibility", type=float, default=30.0, help="lease length in seconds")
        parser.add_argument("--fail-share", type=float, default=0.1, help="share of shipments the demo handler fails")
        parser.add_argument("--work-seconds", type=float, default=0.5, help="average time the demo handler takes")
        parser.add_argument("--grace", type=float, default=10.0, help="seconds to finish after a stop request")
        parser.add_argument("--max", type=int, default=None, help="stop after this many shipments")
        parser.add_argument("--until-empty", action="store_true", help="stop when nothing is visible")
        parser.add_argument(
            "--fair",
            action="store_true",
            help="the live queue first, the spillover queue when live is caught up; sideline "
            "live work older than SPILLOVER_AFTER_SECONDS",
        )

    def handle(self, queue, visibility, fail_share, work_seconds, grace, max, until_empty, fair=False, **options):
        shipments = ShipmentQueue()
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
        self.stdout.write(f"Shipment worker on queue {where} (lease {visibility:.0f}s); stop with SIGTERM.")
        try:
            stats = worker.run(max_shipments=max, stop_when_empty=until_empty)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        self.stdout.write(
            f"Stopped: {stats.completed} completed, {stats.failed} failed, {stats.released} given back, "
            f"{stats.lost_leases} lost leases, {stats.heartbeats} heartbeats."
        )
