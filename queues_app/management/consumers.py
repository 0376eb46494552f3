"""What the commands that consume a shipment queue share (`run_shipment_worker`,
`run_webhook_worker`): a number of workers in threads, a shared --max, signals that
finish or give back what is in hand, one liveness heartbeat."""

import signal
import threading
from collections.abc import Callable
from dataclasses import fields

from queues_app.figures import counters
from queues_app.figures.heartbeats import Heartbeat
from queues_app.management.arguments import DAY, BackgroundCommand, float_range, int_range, positive_int
from queues_app.management.outcomes import require_tables
from queues_app.shipments.fairness import FairConsumer
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.worker import Handler, ShipmentWorker, WorkerStats

MAX_CONCURRENCY = 64


class ConsumerCommand(BackgroundCommand):
    @staticmethod
    def add_consumer_arguments(
        parser, *, visibility: tuple[float, float, str], concurrency: tuple[int, str], items: str, until_empty: str
    ) -> None:
        """The options every consumer takes: its lease (`visibility`: low, high, help), its
        grace on stopping, how many at once (`concurrency`: default, help), --max and
        --until-empty."""
        low, high, about = visibility
        parser.add_argument(
            "--visibility", type=float_range(low, high), default=None, help=f"{about}; the queue's own by default"
        )
        parser.add_argument(
            "--grace", type=float_range(0, DAY), default=10.0, help="seconds to finish after a stop request"
        )
        parser.add_argument(
            "--concurrency", type=int_range(1, MAX_CONCURRENCY), default=concurrency[0], help=concurrency[1]
        )
        parser.add_argument("--max", type=positive_int, default=None, help=f"stop after this many {items}")
        parser.add_argument("--until-empty", action="store_true", help=until_empty)

    def consume(
        self,
        shipments: ShipmentQueue,
        handler: Callable[[], Handler],
        *,
        queue: str,
        liveness: Heartbeat,
        title: str,
        fair: bool = False,
        **options,
    ) -> WorkerStats:
        """Run `concurrency` workers with a handler each until stopped (SIGTERM, Ctrl-C,
        --max, --until-empty: the consumer options among the command's `options`); one
        liveness heartbeat for the process."""
        grace, until_empty = options["grace"], options["until_empty"]
        concurrency, max = options["concurrency"], options["max"]
        if until_empty:
            require_tables(shipments.db, "shipments")  # a run that should end does not wait for DynamoDB
        visibility = options["visibility"] or shipments.visibility_for(queue)
        counters.flush_in_background(shipments.db)  # the last shipment's counts, even when none follows
        shares = _shares(max, concurrency)
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


def _shares(most: int | None, concurrency: int) -> list[int | None]:
    """--max is shared: each thread takes its part (no thread when there is none left)."""
    if most is None:
        return [None] * concurrency
    return [most // concurrency + (i < most % concurrency) for i in range(concurrency)]
