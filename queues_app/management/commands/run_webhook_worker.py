"""`manage.py run_webhook_worker`: deliver call events to the API tokens' callbacks."""

from queues_app.figures.heartbeats import CALLBACK_WORKER, Heartbeat
from queues_app.management.consumers import ConsumerCommand
from queues_app.models import ApiToken
from queues_app.operations.system import RecordedShipmentQueue
from queues_app.shipments.records import RetryPolicy
from queues_app.webhooks.delivery import Deliverer
from queues_app.webhooks.events import CALLBACK_QUEUE


class Command(ConsumerCommand):
    help = (
        f"Deliver call events (the {CALLBACK_QUEUE!r} shipment queue) to the API tokens' callback URLs, "
        "signed; a failed delivery is retried with backoff and dead-lettered after "
        "SWITCHBOARD_CALLBACK_RETRY's attempts. SIGTERM or Ctrl-C finishes the deliveries in hand."
    )

    def add_arguments(self, parser):
        self.add_consumer_arguments(
            parser,
            visibility=(10, 3600, "seconds an event is leased for (more than the 5 s delivery timeout)"),
            concurrency=(4, "deliveries at once in this process (one thread and HTTP client each)"),
            items="events",
            until_empty="stop when no event is due",
        )

    def handle(self, **options):
        # Dead-lettered events go on their history, as shipments' do; the callbacks' own attempts.
        events = RecordedShipmentQueue(retry=RetryPolicy.from_settings("SWITCHBOARD_CALLBACK_RETRY"))
        self.consume(
            events,
            lambda: Deliverer(ApiToken.callback_of),
            queue=CALLBACK_QUEUE,
            liveness=Heartbeat(CALLBACK_WORKER, events.db),
            title="Callback worker",
            **options,
        )
