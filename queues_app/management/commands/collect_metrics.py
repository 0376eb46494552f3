"""Sample every queue's figures into the metrics history, every few seconds."""

import signal
import threading

from django.core.management.base import BaseCommand

from queues_app.ddb import errors
from queues_app.monitoring.sampler import MetricsCollector


class Command(BaseCommand):
    help = (
        "Every --every seconds, sample each queue's depth, in flight, DLQ and oldest age into the "
        "current minute of the metrics history (the overview's charts), and write this process's counts."
    )

    def add_arguments(self, parser):
        parser.add_argument("--every", type=float, default=15.0, help="seconds between samples (default 15)")
        parser.add_argument("--once", action="store_true", help="take one sample and stop")

    def handle(self, every=15.0, once=False, **options):
        collector = MetricsCollector()
        stop = threading.Event()
        previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            while not stop.is_set():
                try:
                    figures = collector.sample()
                    if once:
                        for queue, values in figures.items():
                            shown = ", ".join(f"{k} {v:g}" for k, v in values.items() if v is not None)
                            self.stdout.write(f"{queue}: {shown}")
                except errors.DynamoError as exc:
                    self.stderr.write(f"sample failed: {exc.message}")
                if once:
                    return
                stop.wait(every)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
