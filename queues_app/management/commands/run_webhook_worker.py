"""`manage.py run_webhook_worker`: deliver call events to the API tokens' callbacks."""

from queues_app.callbacks.delivery import Deliverer
from queues_app.callbacks.events import CALLBACK_QUEUE
from queues_app.management.arguments import DAY, float_range, int_range, positive_int
from queues_app.management.consumers import MAX_CONCURRENCY, ConsumerCommand
from queues_app.monitoring.heartbeats import CALLBACK_WORKER, Heartbeat
from queues_app.operations.system import RecordedShipmentQueue
from queues_app.shipments.records import RetryPolicy


class Command(ConsumerCommand):
    help = (
        f"Deliver call events (the {CALLBACK_QUEUE!r} shipment queue) to the API tokens' callback URLs, "
        "signed; a failed delivery is retried with backoff and dead-lettered after "
        "SWITCHBOARD_CALLBACK_RETRY's attempts. SIGTERM or Ctrl-C finishes the deliveries in hand."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--concurrency",
            type=int_range(1, MAX_CONCURRENCY),
            default=4,
            help="deliveries at once in this process (one thread and HTTP client each)",
        )
        parser.add_argument(
            "--visibility",
            type=float_range(10, 3600),
            default=30.0,
            help="seconds an event is leased for (more than the 5 s delivery timeout)",
        )
        parser.add_argument(
            "--grace", type=float_range(0, DAY), default=10.0, help="seconds to finish after a stop request"
        )
        parser.add_argument("--max", type=positive_int, default=None, help="stop after this many events")
        parser.add_argument("--until-empty", action="store_true", help="stop when no event is due")

    def handle(self, *, concurrency, visibility, grace, max, until_empty, **options):
        # Dead-lettered events go on their history, as shipments' do; the callbacks' own attempts.
        events = RecordedShipmentQueue(retry=RetryPolicy.from_settings("SWITCHBOARD_CALLBACK_RETRY"))
        self.consume(
            events,
            Deliverer,
            queue=CALLBACK_QUEUE,
            visibility=visibility,
            grace=grace,
            max=max,
            until_empty=until_empty,
            concurrency=concurrency,
            liveness=Heartbeat(CALLBACK_WORKER, events.db),
            title="Callback worker",
        )
