"""The shipment consumer: receive, run a handler while heartbeating, complete or fail.

On a stop request (SIGTERM) it finishes the shipment in hand when the handler returns
within `grace_seconds`, and otherwise gives it back to the queue untouched.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from queues_app.ddb import errors
from queues_app.ddb.backoff import TRANSIENT, Backoff
from queues_app.ddb.clock import from_iso
from queues_app.figures.heartbeats import SHIPMENT_WORKER, Heartbeat
from queues_app.shipments.fairness import FairConsumer
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.records import DEFAULT_QUEUE, Receipt, Shipment, ShipmentStatus
from queues_app.tracing import traced

log = logging.getLogger(__name__)


class HandlerFailed(Exception):
    """Raised by a handler: the shipment failed and should be retried (or dead-lettered)."""


Handler = Callable[[Shipment, threading.Event], None]


@dataclass
class WorkerStats:
    completed: int = 0
    failed: int = 0
    released: int = 0
    lost_leases: int = 0
    heartbeats: int = 0
    completed_ids: list[str] = field(default_factory=list)


def demo_handler(fail_share: float = 0.1, work_seconds: float = 0.2, seed: int | None = None) -> Handler:
    """Pretend to ship: work for a while, and fail a share of the shipments."""
    rng = random.Random(seed)

    def handle(shipment: Shipment, stop: threading.Event) -> None:
        # Interruptible work: a stop request ends the wait early.
        stop.wait(work_seconds * rng.uniform(0.5, 1.5))
        if shipment.data.get("always_fail") or rng.random() < fail_share:
            raise HandlerFailed(f"demo carrier rejected shipment {shipment.shipment_id}")

    return handle


class ShipmentWorker:
    def __init__(
        self,
        queue: ShipmentQueue,
        handler: Handler,
        *,
        queue_name: str = DEFAULT_QUEUE,
        visibility_timeout: float = 30.0,
        grace_seconds: float = 10.0,
        idle_sleep: float = 1.0,
        fair: FairConsumer | None = None,
        backoff: Backoff | None = None,
        liveness: Heartbeat | None = None,
    ):
        self.queue = queue
        # With `fair`, the live queue first, the spillover queue when live is caught up.
        self.fair = fair
        self.handler = handler
        self.queue_name = queue_name
        self.visibility_timeout = visibility_timeout
        self.grace_seconds = grace_seconds
        self.idle_sleep = idle_sleep
        self.stop_requested = threading.Event()
        self.stats = WorkerStats()
        # Given: shared by the worker threads of one process, whose command says "stopped".
        self._owns_liveness = liveness is None
        self.liveness = liveness or Heartbeat(SHIPMENT_WORKER, queue.db)
        # DynamoDB outages: growing, capped waits between receives, logged once per change.
        self.backoff = backoff or Backoff(log)

    def stop(self) -> None:
        self.stop_requested.set()

    def run(self, *, max_shipments: int | None = None, stop_when_empty: bool = False) -> WorkerStats:
        """Work until stopped, with a liveness heartbeat (one write per ~10 s; "stopped" on the way out)."""
        try:
            return self._run(max_shipments=max_shipments, stop_when_empty=stop_when_empty)
        finally:
            if self._owns_liveness:
                self.liveness.stopped(self.stats.completed + self.stats.failed, part=id(self))

    def _run(self, *, max_shipments: int | None, stop_when_empty: bool) -> WorkerStats:
        handled = 0
        idle = self.idle_sleep
        while not self.stop_requested.is_set():
            self.liveness.beat(handled=self.stats.completed + self.stats.failed, part=id(self))
            if max_shipments is not None and handled >= max_shipments:
                break
            try:
                if self.fair:
                    lease = self.fair.receive(visibility_timeout=self.visibility_timeout)
                else:
                    lease = self.queue.receive(self.queue_name, visibility_timeout=self.visibility_timeout)
            except TRANSIENT as exc:
                self.stop_requested.wait(self.backoff.failed(exc))
                continue
            self.backoff.succeeded()
            if lease is None:
                if stop_when_empty:
                    break
                self.stop_requested.wait(idle)
                continue
            handled += 1
            with traced(lease.shipment.trace_id):
                log.info("shipment %s: attempt %d", lease.shipment.shipment_id, lease.shipment.attempts)
                self.process(lease)
        return self.stats

    def process(self, lease: Receipt) -> None:
        shipment = lease.shipment
        done = threading.Event()
        handler_stop = threading.Event()
        outcome: dict = {}

        def work():
            try:
                self.handler(shipment, handler_stop)
            except HandlerFailed as exc:
                outcome["failure"] = str(exc)
            except Exception as exc:  # a handler bug is a failed attempt, not a dead worker
                log.exception("handler crashed on shipment %s", shipment.shipment_id)
                outcome["failure"] = f"handler error: {exc!r}"
            finally:
                done.set()

        thread = threading.Thread(target=work, name=f"handler-{shipment.shipment_id}", daemon=True)
        started = time.monotonic()
        thread.start()
        beat_every = max(self.visibility_timeout / 3, 0.05)
        stop_seen_at = None
        while not done.wait(beat_every):
            if self.stop_requested.is_set():
                stop_seen_at = stop_seen_at or time.monotonic()
                if time.monotonic() - stop_seen_at > self.grace_seconds:
                    handler_stop.set()
                    self._give_back(lease, time.monotonic() - started)
                    done.wait(self.grace_seconds)
                    return
            try:
                self.queue.heartbeat(shipment.shipment_id, lease.receipt, extend_seconds=self.visibility_timeout)
                self.stats.heartbeats += 1
            except errors.Conflict as exc:
                # Removed, dead-lettered or taken back by a supervisor: stop working on it.
                self.stats.lost_leases += 1
                handler_stop.set()
                log.warning(
                    "shipment %s lost after %.2f s: %s", shipment.shipment_id, time.monotonic() - started, exc.message
                )
                return
            except TRANSIENT as exc:
                # The lease still runs for a while: heartbeat again at the next beat.
                log.warning("shipment %s: heartbeat failed (%s)", shipment.shipment_id, exc.message)
        self._finish(lease, outcome.get("failure"), time.monotonic() - started)

    def _finish(self, lease: Receipt, failure: str | None, took: float) -> None:
        sid = lease.shipment.shipment_id
        try:
            if failure:
                after = self.queue.fail(sid, lease.receipt, failure)
                self.stats.failed += 1
                if after.status == ShipmentStatus.IN_DLQ:
                    log.warning(
                        "shipment %s dead-lettered after %d receives (%s) in %.2f s",
                        sid,
                        after.attempts,
                        failure,
                        took,
                    )
                else:
                    visible = from_iso(after.visible_at)
                    retry_in = (visible - self.queue.clock()).total_seconds() if visible else 0.0
                    log.warning("shipment %s failed (%s) in %.2f s, retry in %.1f s", sid, failure, took, retry_in)
            else:
                self.queue.complete(sid, lease.receipt)
                self.stats.completed += 1
                self.stats.completed_ids.append(sid)
                log.info("shipment %s completed in %.2f s", sid, took)
        except errors.Conflict as exc:
            self.stats.lost_leases += 1
            log.warning("could not finish shipment %s: %s", sid, exc.message)
        except TRANSIENT as exc:
            # Still in flight: it becomes visible again when its lease runs out.
            log.warning("could not finish shipment %s (%s); it comes back when its lease runs out", sid, exc.message)

    def _give_back(self, lease: Receipt, took: float) -> None:
        sid = lease.shipment.shipment_id
        try:
            self.queue.release(sid, lease.receipt)
            self.stats.released += 1
            log.info("shipment %s given back after %.2f s: stopping", sid, took)
        except errors.Conflict:
            self.stats.lost_leases += 1
        except TRANSIENT as exc:
            log.warning("could not give back shipment %s (%s); it comes back when its lease runs out", sid, exc.message)
