"""The loop of the commands that repeat a pass until stopped (`collect_metrics --every`,
`escalate_callers --every`): SIGTERM or Ctrl-C ends it after the pass in hand, a failed
pass is reported and the loop goes on, and a heartbeat says the process is alive."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.figures import counters, heartbeats


def repeat_until_stopped(
    kind: str, db: Dynamo, every: float, one_pass: Callable[[], object], report: Callable[[str], None]
) -> None:
    """Run `one_pass` every `every` seconds until SIGTERM or SIGINT; `report` is told of
    a pass that failed on DynamoDB. The heartbeat counts the passes made."""
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    liveness = heartbeats.Heartbeat(kind, db, every=max(heartbeats.BEAT_SECONDS, every))
    try:
        while not stop.is_set():
            liveness.beat(handled=liveness.handled + 1)
            try:
                one_pass()
            except errors.DynamoError as exc:
                report(exc.message)
            counters.flush_if_due(db)  # the pass's counts and call facts, even when idle after
            stop.wait(every)
    finally:
        liveness.stopped()
        for s, handler in previous.items():
            signal.signal(s, handler)
