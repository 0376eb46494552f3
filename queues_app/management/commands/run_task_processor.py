import signal

from django.core.management.base import BaseCommand

from queues_app.tasks.downstream import RateLimitedDownstream
from queues_app.tasks.processor import TaskProcessor, default_holder
from queues_app.tasks.queue import TaskQueue


class Command(BaseCommand):
    help = (
        "Process the LIFO task queue, newest first, against a rate-limited demo downstream. At most "
        "one processor is active across all hosts (a lease in DynamoDB); the others wait for it. "
        "Works in time boxes until SIGTERM or Ctrl-C; woken by the table's stream where the "
        "endpoint offers one, polling otherwise."
    )

    def add_arguments(self, parser):
        parser.add_argument("--rate", type=float, default=5.0, help="downstream calls per second")
        parser.add_argument(
            "--burst", type=float, default=None, help="downstream burst (default: the rate, at least 1)"
        )
        parser.add_argument("--fail-share", type=float, default=0.1, help="share of tasks the demo downstream fails")
        parser.add_argument(
            "--time-box", type=float, default=60.0, help="seconds per time box (the lease is released after each)"
        )
        parser.add_argument(
            "--poll", type=float, default=5.0, help="seconds between looks at an idle queue without a stream"
        )
        parser.add_argument("--sweep-every", type=float, default=5.0, help="seconds between sweeps of expired tasks")
        parser.add_argument("--lease", type=float, default=15.0, help="lease length in seconds (renewed every third)")
        parser.add_argument("--holder", default=None, help="this processor's name in the lease (default: hostname:pid)")
        parser.add_argument("--no-streams", action="store_true", help="poll even where the endpoint offers streams")
        parser.add_argument("--max-seconds", type=float, default=None, help="stop after this long (tests, demos)")
        parser.add_argument(
            "--until-empty", action="store_true", help="stop once nothing is pending (one time box at most)"
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
        processor = TaskProcessor(
            TaskQueue(),
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
