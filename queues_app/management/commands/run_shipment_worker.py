from django.core.management.base import CommandError

from queues_app.ddb.errors import DynamoError
from queues_app.figures.heartbeats import SHIPMENT_WORKER, Heartbeat
from queues_app.management.arguments import (
    SHIPMENT_QUEUES,
    float_range,
    queue_name,
    share,
)
from queues_app.management.consumers import ConsumerCommand
from queues_app.management.outcomes import dynamo_failure
from queues_app.operations.system import RecordedShipmentQueue
from queues_app.shipments.named import NamedQueues
from queues_app.shipments.queue import DEFAULT_QUEUE
from queues_app.shipments.worker import demo_handler

MAX_VISIBILITY = 12 * 3600  # as SQS: a lease may run twelve hours at most


class Command(ConsumerCommand):
    help = (
        "Consume shipments: peek with a visibility timeout, run the demo handler (failing a "
        "share of them) while heartbeating, then complete or fail. SIGTERM or Ctrl-C finishes "
        "or gives back the shipments in hand."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--queue",
            type=queue_name,
            default=None,
            help=f"the queue to consume: {', '.join(SHIPMENT_QUEUES)} or a named queue "
            f"(GET /api/shipment-queues); without it, {DEFAULT_QUEUE} (not with --fair)",
        )
        parser.add_argument("--fail-share", type=share, default=0.1, help="share of shipments the demo handler fails")
        parser.add_argument(
            "--work-seconds", type=float_range(0, 3600), default=0.5, help="average time the demo handler takes"
        )
        self.add_consumer_arguments(
            parser,
            visibility=(1, MAX_VISIBILITY, "lease length in seconds (heartbeats renew it every third)"),
            concurrency=(1, "shipments handled at once in this process (one worker thread each, sharing the client)"),
            items="shipments (shared by the threads)",
            until_empty="stop when nothing is visible",
        )
        parser.add_argument(
            "--fair",
            action="store_true",
            help="the live queue first, the spillover queue when live is caught up; sideline "
            "live work older than SPILLOVER_AFTER_SECONDS",
        )

    def handle(self, queue, fail_share, work_seconds, fair=False, **options):
        if fair and queue is not None:
            raise CommandError("--fair takes the live queue and then the spillover queue: leave out --queue.")
        queue = queue or DEFAULT_QUEUE
        shipments = RecordedShipmentQueue()  # dead-lettered shipments go on their history
        if queue not in SHIPMENT_QUEUES:
            try:
                named = [each.queue_id for each in NamedQueues(shipments.db).all()]
            except DynamoError as exc:
                raise dynamo_failure(exc, shipments.db) from exc
            if queue not in named:
                raise CommandError(
                    f"No shipment queue {queue!r}: the queues are {', '.join(sorted({*SHIPMENT_QUEUES, *named}))}."
                )
        where = "live, then spillover" if fair else repr(queue)
        self.consume(
            shipments,
            lambda: demo_handler(fail_share=fail_share, work_seconds=work_seconds),
            queue=queue,
            fair=fair,
            liveness=Heartbeat(SHIPMENT_WORKER, shipments.db),
            title=f"Shipment worker on queue {where}",
            **options,
        )
