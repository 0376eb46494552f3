import signal
import threading
from collections.abc import Callable
from dataclasses import fields

from django.core.management.base import CommandError

from queues_app.management.arguments import (
    DAY,
    SHIPMENT_QUEUES,
    CheckedCommand,
    float_range,
    int_range,
    positive_int,
    share,
)
from queues_app.management.outcomes import require_tables
from queues_app.monitoring.heartbeats import SHIPMENT_WORKER, Heartbeat
from queues_app.operations.system import RecordedShipmentQueue
from queues_app.shipments.fairness import FairConsumer
from queues_app.shipments.queue import DEFAULT_QUEUE, ShipmentQueue
from queues_app.shipments.worker import Handler, ShipmentWorker, WorkerStats, demo_handler

MAX_VISIBILITY = 12 * 3600  # as SQS: a lease may run twelve hours at most
MAX_CONCURRENCY = 64


class Command(CheckedCommand):
    help = (
        "Consume shipments: peek with a visibility timeout, run the demo handler (failing a "
        "share of them) while heartbeating, then complete or fail. SIGTERM or Ctrl-C finishes "
        "or gives back the shipments in hand."
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
        parser.add_argument(
            "--concurrency",
            type=int_range(1, MAX_CONCURRENCY),
            default=1,
            help="shipments handled at once in this process (one worker thread each, sharing the client)",
        )
        parser.add_argument(
            "--max", type=positive_int, default=None, help="stop after this many shipments (shared by the threads)"
        )
        parser.add_argument("--until-empty", action="store_true", help="stop when nothing is visible")
        parser.add_argument(
            "--fair",
            action="store_true",
            help="the live queue first, the spillover queue when live is caught up; sideline "
            "live work older than SPILLOVER_AFTER_SECONDS",
        )

    def handle(
        self,
        queue,
        visibility,
        fail_share,
        work_seconds,
        grace,
        max,
        until_empty,
        fair=False,
        concurrency=1,
        **options,
    ):
        if fair and queue is not None:
            raise CommandError("--fair takes the live queue and then the spillover queue: leave out --queue.")
        queue = queue or DEFAULT_QUEUE
        shipments = RecordedShipmentQueue()  # dead-lettered shipments go on their history
        where = "live, then spillover" if fair else repr(queue)
        self.consume(
            shipments,
            lambda: demo_handler(fail_share=fail_share, work_seconds=work_seconds),
            queue=queue,
            fair=fair,
            visibility=visibility,
            grace=grace,
            max=max,
            until_empty=until_empty,
            concurrency=concurrency,
            liveness=Heartbeat(SHIPMENT_WORKER, shipments.db),
            title=f"Shipment worker on queue {where}",
        )

    def consume(
        self,
        shipments: ShipmentQueue,
        handler: Callable[[], Handler],
        *,
        queue: str,
        visibility: float,
        grace: float,
        max: int | None,
        until_empty: bool,
        concurrency: int,
        liveness: Heartbeat,
        title: str,
        fair: bool = False,
    ) -> WorkerStats:
        """Run `concurrency` workers with a handler each until stopped (SIGTERM, Ctrl-C,
        --max, --until-empty); one liveness heartbeat for the process."""
        if until_empty:
            require_tables(shipments.db, "shipments")  # a run that should end does not wait for DynamoDB
        # --max is shared: each thread takes its part (no thread when there is none left).
        shares = (
            [None] * concurrency
            if max is None
            else [max // concurrency + (i < max % concurrency) for i in range(concurrency)]
        )
        workers = [
            ShipmentWorker(
                shipments,  # one client per process: boto3 clients are thread-safe
                handler(),
                queue_name=queue,
                visibility_timeout=visibility,
                grace_seconds=grace,
                fair=FairConsumer(shipments) if fair else None,  # the sweep schedule is per process
                liveness=liveness,
            )
            for share_ in shares
            if share_ != 0
        ]

        def stop_all(*_):
            for worker in workers:
                worker.stop()

        previous = {signum: signal.signal(signum, stop_all) for signum in (signal.SIGTERM, signal.SIGINT)}
        threads = f", {len(workers)} at once" if concurrency > 1 else ""
        self.stdout.write(f"{title} (lease {visibility:g}s{threads}); stop with SIGTERM.")
        try:
            if len(workers) == 1:
                stats = workers[0].run(max_shipments=max, stop_when_empty=until_empty)
            else:
                stats = self._run_threads(workers, [s for s in shares if s != 0], until_empty, stop_all)
        finally:
            liveness.stopped()
            for signum, handler_ in previous.items():
                signal.signal(signum, handler_)
        self.stdout.write(
            f"Stopped: {stats.completed} completed, {stats.failed} failed, {stats.released} given back, "
            f"{stats.lost_leases} lost leases, {stats.heartbeats} heartbeats."
        )
        return stats

    @staticmethod
    def _run_threads(workers, shares, until_empty, stop_all) -> WorkerStats:
        """Each worker in its own thread; the main thread waits for them (and receives the
        signals). A thread that fails stops the others, and its error is raised here."""
        failures: list[BaseException] = []

        def run(worker, share_):
            try:
                worker.run(max_shipments=share_, stop_when_empty=until_empty)
            except BaseException as exc:
                failures.append(exc)
                stop_all()

        threads = [
            threading.Thread(target=run, args=(worker, share_), name=f"shipment-worker-{i + 1}")
            for i, (worker, share_) in enumerate(zip(workers, shares, strict=True))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)  # short joins: signals reach the main thread meanwhile
        if failures:
            raise failures[0]
        total = WorkerStats()
        for worker in workers:
            for item in fields(WorkerStats):
                value = getattr(worker.stats, item.name)
                setattr(total, item.name, getattr(total, item.name) + value)
        return total
