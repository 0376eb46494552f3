"""The shipments queue under chaos, on DynamoDB Local (never moto: it is not thread-safe).

Producers create and enqueue shipments (random priorities, some delayed, some that
always fail) while several consumers receive with short leases and, at random, complete,
fail, abandon the shipment silently (as if killed), abandon it after a heartbeat,
oversleep their lease and then try to complete it anyway, or give it back untouched. A supervisor touches,
reprioritises, takes off and puts back, dead-letters and restores shipments meanwhile,
with the versions it saw. Consumers run until the queue is drained: nothing visible,
and nothing queued, in flight or delayed for a while (leases expire, delays run out).

Then every shipment is completed exactly once (one recorded successful `complete`) or
sits in the DLQ (none recorded), none is lost, the always-failing ones are all in the
DLQ, and the audit (function and command) finds nothing.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from django.core.management import call_command

from queues_app.ddb import errors
from queues_app.monitoring import invariants
from queues_app.shipments.queue import ReceiptInvalid, RetryPolicy, ShipmentQueue, ShipmentState, ShipmentStatus

SEED = 20240614
PRODUCERS = 3
PER_PRODUCER = 70  # 210 shipments
CONSUMERS = 5
ALWAYS_FAIL_SHARE = 0.1
DELAYED_SHARE = 0.1
VISIBILITY = 0.4  # seconds: abandoned shipments come back quickly
QUIET_FOR = 1.0  # drained: nothing queued, in flight or delayed, and no receive found anything, this long
# Seconds for production and drain together; the test fails beyond it. A bound for a run
# that never drains, not a pace to keep: about 15 s on 2 cores, and a slow or busy machine
# may take several times that.
TIME_LIMIT = 300.0

# What a consumer does with a shipment it received (weights); always-failing ones are never completed.
# "release" gives the shipment back untouched, as a worker shutting down does.
ACTIONS = {"complete": 50, "fail": 20, "abandon": 10, "heartbeat_then_abandon": 10, "oversleep": 10, "release": 5}
ALWAYS_FAIL_ACTIONS = {"fail": 60, "abandon": 15, "heartbeat_then_abandon": 10, "oversleep": 15, "release": 5}


@dataclass
class Journal:
    """What the threads did; appended from many threads (list.append and Counter updates
    under the lock)."""

    created: list[str] = field(default_factory=list)
    always_fail: set[str] = field(default_factory=set)
    completions: list[tuple[str, str]] = field(default_factory=list)  # (shipment id, consumer)
    outcomes: Counter = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    last_received: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, what: str) -> None:
        with self.lock:
            self.outcomes[what] += 1


def new_queue(db) -> ShipmentQueue:
    return ShipmentQueue(db, retry=RetryPolicy(max_receives=3, backoff_base_seconds=0.05, backoff_max_seconds=0.2))


def producer(db, index: int, start: threading.Barrier, journal: Journal) -> None:
    queue, rng = new_queue(db), random.Random(SEED * 10 + index)
    start.wait()
    for n in range(PER_PRODUCER):
        sid = f"p{index}-{n:03d}"
        always_fail = rng.random() < ALWAYS_FAIL_SHARE
        data = {"to": rng.choice(["Lyon", "Oslo", "Porto", "Graz"]), **({"always_fail": True} if always_fail else {})}
        try:
            if rng.random() < 0.5:
                queue.create(data, shipment_id=sid, priority=rng.randint(0, 9), ready=True)
            else:  # built first, then marked ready with the version it was created at
                queue.create(data, shipment_id=sid, priority=rng.randint(0, 9))
                queue.mark_ready(sid, expected_version=1)
            journal.created.append(sid)
            if always_fail:
                journal.always_fail.add(sid)
            delay = rng.uniform(0.1, 1.0) if rng.random() < DELAYED_SHARE else 0
            queue.enqueue(sid, delay_seconds=delay)
            journal.count("enqueued_delayed" if delay else "enqueued")
        except Exception as exc:  # noqa: BLE001 - nobody else knows these ids yet: any error is a finding
            journal.unexpected.append(f"producer {index}, {sid}: {exc!r}")
        time.sleep(rng.uniform(0, 0.01))


def consumer(db, index: int, start: threading.Barrier, stop: threading.Event, journal: Journal) -> None:
    queue, rng = new_queue(db), random.Random(SEED * 100 + index)
    name = f"consumer-{index}"
    start.wait()
    while not stop.is_set():
        try:
            lease = queue.receive(visibility_timeout=VISIBILITY)
        except (errors.Unavailable, errors.Throttled) as exc:
            journal.count(f"receive_error:{type(exc).__name__}")
            continue
        except Exception as exc:  # noqa: BLE001
            journal.unexpected.append(f"{name} receive: {exc!r}")
            continue
        if lease is None:
            journal.count("empty_receive")
            stop.wait(rng.uniform(0.01, 0.05))
            continue
        journal.last_received = time.monotonic()
        shipment = lease.shipment
        sid, receipt = shipment.shipment_id, lease.receipt
        if shipment.status != ShipmentStatus.PROCESSING or shipment.receipt != receipt:
            journal.unexpected.append(f"{name}: receive returned {sid} as {shipment.status} / {shipment.receipt}")
        weights = ALWAYS_FAIL_ACTIONS if shipment.data.get("always_fail") else ACTIONS
        action = rng.choices(list(weights), weights=list(weights.values()))[0]
        journal.count(f"action:{action}")
        time.sleep(rng.uniform(0, 0.01))  # the work
        try:
            if action == "complete":
                queue.complete(sid, receipt)
                journal.completions.append((sid, name))
            elif action == "fail":
                failed = queue.fail(sid, receipt, f"{name}: carrier said no")
                journal.count("failed_to_dlq" if failed.status == ShipmentStatus.IN_DLQ else "failed_retry")
            elif action == "abandon":
                pass  # killed: the lease runs out
            elif action == "release":
                queue.release(sid, receipt)
            elif action == "heartbeat_then_abandon":
                queue.heartbeat(sid, receipt, extend_seconds=VISIBILITY)
                time.sleep(rng.uniform(0, VISIBILITY / 2))
            elif action == "oversleep":
                time.sleep(VISIBILITY + 0.1)
                if shipment.data.get("always_fail"):
                    queue.fail(sid, receipt, f"{name}: late, and the carrier said no")
                    journal.count("late_fail_accepted")
                else:
                    # Nobody took it in the meantime: a late complete still holds the receipt.
                    queue.complete(sid, receipt)
                    journal.completions.append((sid, name))
                    journal.count("late_complete_accepted")
        except ReceiptInvalid:
            journal.count(f"receipt_invalid:{action}")  # lease ran out, or a supervisor took it back
        except errors.Conflict as exc:
            journal.count(f"conflict:{action}:{type(exc).__name__}")
        except Exception as exc:  # noqa: BLE001
            journal.unexpected.append(f"{name} {action} {sid}: {exc!r}")


def supervisor(db, start: threading.Barrier, producers_done: threading.Event, journal: Journal) -> None:
    """A few supervisor actions, each with the version it saw: conflicts are normal."""
    queue, rng = new_queue(db), random.Random(SEED)
    start.wait()
    while not producers_done.is_set():
        time.sleep(rng.uniform(0.01, 0.04))
        if not journal.created:
            continue
        sid = rng.choice(journal.created)
        try:
            seen = queue.get(sid)
            choice = rng.random()
            if seen.state == ShipmentState.QUEUED and choice < 0.4:
                queue.touch(sid, expected_version=seen.version)
                journal.count("supervisor:touch")
            elif seen.state in (ShipmentState.QUEUED, ShipmentState.DELAYED, ShipmentState.PROCESSING) and choice < 0.8:
                queue.set_priority(sid, rng.randint(0, 9), expected_version=seen.version)
                journal.count(f"supervisor:set_priority:{seen.state}")
            elif seen.state in (ShipmentState.QUEUED, ShipmentState.PROCESSING) and choice < 0.9:
                removed = queue.remove(sid, expected_version=seen.version).item
                queue.enqueue(sid, expected_version=removed.version)  # back at the end of its level
                journal.count(f"supervisor:remove_enqueue:{seen.state}")
            elif seen.state == ShipmentState.QUEUED and choice < 0.95:
                queue.send_to_dlq(sid, "supervisor: address looks wrong", expected_version=seen.version)
                journal.count("supervisor:send_to_dlq")
            elif seen.state == ShipmentState.IN_DLQ:
                queue.restore(sid, expected_version=seen.version)
                journal.count("supervisor:restore")
        except errors.Conflict as exc:
            journal.count(f"supervisor:conflict:{type(exc).__name__}")
        except Exception as exc:  # noqa: BLE001
            journal.unexpected.append(f"supervisor on {sid}: {exc!r}")


def run_until_drained(db, journal: Journal) -> float:
    queue = new_queue(db)
    start = threading.Barrier(PRODUCERS + CONSUMERS + 2)
    stop, producers_done = threading.Event(), threading.Event()
    producers = [threading.Thread(target=producer, args=(db, i, start, journal), daemon=True) for i in range(PRODUCERS)]
    consumers = [
        threading.Thread(target=consumer, args=(db, i, start, stop, journal), daemon=True) for i in range(CONSUMERS)
    ]
    boss = threading.Thread(target=supervisor, args=(db, start, producers_done, journal), daemon=True)
    for thread in producers + consumers + [boss]:
        thread.start()
    began = time.monotonic()
    start.wait()
    deadline = began + TIME_LIMIT
    try:
        for thread in producers:
            thread.join(timeout=max(deadline - time.monotonic(), 0))
            assert not thread.is_alive(), f"producers still running after {TIME_LIMIT}s"
        producers_done.set()
        boss.join(timeout=30)
        quiet_since = None
        while True:
            assert time.monotonic() < deadline, (
                f"not drained after {TIME_LIMIT}s: {queue.counts()}, outcomes {dict(journal.outcomes)}"
            )
            counts = queue.counts()
            idle = time.monotonic() - journal.last_received
            if counts.queued == counts.in_flight == counts.delayed == 0 and idle >= QUIET_FOR:
                quiet_since = quiet_since or time.monotonic()
                if time.monotonic() - quiet_since >= QUIET_FOR / 2:
                    break
            else:
                quiet_since = None
            time.sleep(0.1)
    finally:
        stop.set()
        producers_done.set()
        for thread in consumers + [boss]:
            thread.join(timeout=30)
    assert not any(t.is_alive() for t in consumers + [boss]), "a consumer or the supervisor did not stop"
    return time.monotonic() - began


def test_chaos_every_shipment_is_completed_once_or_dead_lettered(local_db, capsys):
    journal = Journal()
    elapsed = run_until_drained(local_db, journal)
    queue = new_queue(local_db)

    assert journal.unexpected == [], journal.unexpected[:20]
    created = journal.created
    assert len(created) == len(set(created)) == PRODUCERS * PER_PRODUCER
    stored = {s.shipment_id: s for s in queue.get_many(created)}
    lost = sorted(set(created) - set(stored))
    assert lost == [], f"shipments lost: {lost[:10]}"

    completed_times = Counter(sid for sid, _who in journal.completions)
    twice = {sid: n for sid, n in completed_times.items() if n > 1}
    assert twice == {}, f"completed more than once: {twice}"
    assert set(completed_times) <= set(created)
    assert not set(completed_times) & journal.always_fail, "an always-failing shipment was completed"

    problems = []
    for sid, shipment in stored.items():
        if shipment.status == ShipmentStatus.COMPLETED:
            if completed_times[sid] != 1:
                problems.append(f"{sid}: completed, but {completed_times[sid]} successful complete() calls recorded")
        elif shipment.status == ShipmentStatus.IN_DLQ:
            if completed_times[sid]:
                problems.append(f"{sid}: in the DLQ, but a complete() succeeded")
        else:
            problems.append(f"{sid}: ended {shipment.state} ({shipment.status})")
    assert problems == []
    by_state = Counter(s.state for s in stored.values())
    assert by_state[ShipmentState.COMPLETED] + by_state[ShipmentState.IN_DLQ] == len(created)
    assert all(stored[sid].status == ShipmentStatus.IN_DLQ for sid in journal.always_fail)
    assert journal.always_fail, "the seed made no always-failing shipment"

    # The chaos did happen: leases ran out and were taken again, shipments were retried.
    assert sum(s.lease_expirations for s in stored.values()) > 0
    assert any(s.receive_count > 1 for s in stored.values())
    assert any(s.failure_reasons for s in stored.values())

    counts = queue.counts()
    assert (counts.queued, counts.in_flight, counts.delayed, counts.dlq) == (0, 0, 0, by_state[ShipmentState.IN_DLQ])
    report = invariants.check(local_db)
    assert report.violations == [], [str(v) for v in report.violations]
    assert report.counts["shipments"] == len(created)
    call_command("check_invariants")
    out = capsys.readouterr().out
    assert out.startswith("OK: no violations")
    with capsys.disabled():
        print(
            f"\nchaos: {len(created)} shipments in {elapsed:.1f}s: {by_state[ShipmentState.COMPLETED]} completed, "
            f"{by_state[ShipmentState.IN_DLQ]} in the DLQ ({len(journal.always_fail)} always failing); "
            f"outcomes {dict(sorted(journal.outcomes.items()))}"
        )
