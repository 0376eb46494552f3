import signal

from django.core.management.base import CommandError

from queues_app.ddb import errors
from queues_app.figures import counters
from queues_app.management.arguments import (
    DAY,
    BackgroundCommand,
    float_range,
    interval,
    share,
    text,
)
from queues_app.management.outcomes import dynamo_failure, require_tables
from queues_app.operations.system import RecordedTaskQueue
from queues_app.tasks.downstream import RateLimitedDownstream
from queues_app.tasks.processor import TaskProcessor, default_holder


class Command(BackgroundCommand):
    help = (
        "Process the LIFO task queue, newest first, against a rate-limited demo downstream. At most "
        "one processor is active across all hosts (a lease in DynamoDB); the others wait for it. "
        "Works in time boxes until SIGTERM or Ctrl-C; woken by the table's stream where the "
        "endpoint offers one, polling otherwise."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--rate", type=float_range(above=0, high=10_000), default=5.0, help="downstream calls per second"
        )
        parser.add_argument(
            "--burst",
            type=float_range(1, 100_000),
            default=None,
            help="downstream calls that may be made at once after a pause; without it, the rate (at least 1)",
        )
        parser.add_argument("--fail-share", type=share, default=0.1, help="share of tasks the demo downstream fails")
        parser.add_argument(
            "--time-box",
            type=float_range(1, DAY),
            default=60.0,
            help="seconds per time box (the lease is released after each)",
        )
        parser.add_argument(
            "--poll",
            type=float_range(0.01, 3600),
            default=5.0,
            help="seconds between looks at an idle queue without a stream",
        )
        parser.add_argument("--sweep-every", type=interval, default=5.0, help="seconds between sweeps of expired tasks")
        parser.add_argument(
            "--lease", type=float_range(1, 3600), default=15.0, help="lease length in seconds (renewed every third)"
        )
        parser.add_argument(
            "--holder",
            type=text(200),
            default=None,
            help="this processor's name in the lease; without it, hostname:pid",
        )
        parser.add_argument("--no-streams", action="store_true", help="poll even where the endpoint offers streams")
        parser.add_argument(
            "--max-seconds",
            type=float_range(above=0, high=365 * DAY),
            default=None,
            help="stop after this long (tests, demos)",
        )
        parser.add_argument(
            "--until-empty",
            action="store_true",
            help="stop once nothing is pending (one time box at most); exits non-zero if the lease was never held",
        )

    def handle(
        self,
        rate,
        burst,
        fail_share,
        time_box,
        poll,
        sweep_every,
        lease,
        holder,
        no_streams,
        max_seconds,
        until_empty=False,
        **options,
    ):
        tasks = RecordedTaskQueue()  # each sweep that sheds tasks goes on the trail
        if until_empty:
            require_tables(tasks.db, "tasks")  # a run that should end does not wait for DynamoDB
        counters.flush_in_background(tasks.db)
        processor = TaskProcessor(
            tasks,
            RateLimitedDownstream(rate, burst, fail_share=fail_share),
            holder=holder or default_holder(),
            lease_seconds=lease,
            poll_seconds=poll,
            sweep_every=sweep_every,
            use_streams=not no_streams,
        )
        previous = {
            signum: signal.signal(signum, lambda *_: processor.stop()) for signum in (signal.SIGTERM, signal.SIGINT)
        }
        self.stdout.write(
            f"Task processor {processor.holder} (downstream {rate:g}/s, lease {lease:g}s, time box {time_box:g}s); "
            "stop with SIGTERM."
        )
        try:
            if until_empty:
                stats = processor.run(min(time_box, max_seconds or time_box), until_empty=True)
            else:
                stats = processor.run_forever(time_box, max_seconds=max_seconds)
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        wake = "stream" if processor.streams else f"polling every {poll:g}s"
        self.stdout.write(
            f"Stopped ({wake}): {stats.processed} processed, {stats.failed} failed, "
            f"{stats.released_at_capacity} back to pending at capacity, {stats.shed} shed, "
            f"{stats.recovered} recovered, {stats.lease_lost} leases lost, "
            f"{stats.leases_acquired} leases held."
        )
        if until_empty and not stats.leases_acquired and not processor.stop_requested.is_set():
            self._never_held(processor)

    @staticmethod
    def _never_held(processor: TaskProcessor) -> None:
        """--until-empty ended without ever holding the lease: say why, and exit non-zero."""
        try:
            current = processor.lease.current()
        except errors.DynamoError as exc:
            raise dynamo_failure(exc, processor.tasks.db, "no task was processed") from exc
        holder = f"{current.holder} holds it" if current else "it was busy"
        raise CommandError(f"The processor lease was never held ({holder}); no task was processed.")
