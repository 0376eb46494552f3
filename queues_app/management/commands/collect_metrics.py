"""Sample every queue's figures into the metrics history, every few seconds."""

from queues_app.ddb import errors
from queues_app.figures import heartbeats
from queues_app.management.arguments import BackgroundCommand, float_range
from queues_app.management.loops import repeat_until_stopped
from queues_app.management.outcomes import dynamo_failure
from queues_app.monitoring.sampler import MetricsCollector


class Command(BackgroundCommand):
    help = (
        "Every --every seconds, sample each queue's depth, in flight, DLQ and oldest age into the "
        "current minute of the metrics history (the overview's charts), and write this process's counts. "
        "With --once, one sample; it exits non-zero when the sample could not be taken."
    )

    def add_arguments(self, parser):
        when = parser.add_mutually_exclusive_group()
        when.add_argument("--every", type=float_range(1, 3600), default=15.0, help="seconds between samples")
        when.add_argument("--once", action="store_true", help="take one sample, show it and stop")

    def handle(self, every=15.0, once=False, **options):
        collector = MetricsCollector()
        if once:
            try:
                figures = collector.sample()
            except errors.DynamoError as exc:
                raise dynamo_failure(exc, collector.db, "no sample was taken") from exc
            for queue, values in figures.items():
                shown = ", ".join(f"{k} {v:g}" for k, v in values.items() if v is not None)
                self.stdout.write(f"{queue}: {shown}")
            return
        repeat_until_stopped(
            heartbeats.COLLECTOR,
            collector.db,
            every,
            collector.sample,
            lambda problem: self.stderr.write(f"sample failed: {problem}"),
        )
