"""Backlog benchmark: the shipments queue after an outage, served oldest first (fifo)
against sidelining stale work to the spillover queue (sidelining), on DynamoDB Local.

    .venv/bin/python -m bench.backlog [--json] [--rate 20] [--consumers 4] [--work-seconds 0.05]
                                      [--steady 15] [--outage 20] [--recovery-max 90] [--tail 5]
                                      [--spillover-after 3] [--sweep-seconds 0.5] [--modes fifo,sidelining]
                                      [--seed 7] [--warmup 1] [--endpoint URL] [--smoke]

The article ("Avoiding insurmountable queue backlogs") calls a queue bimodal: without a
backlog it is fast, and after an outage it stays slow until the backlog is worked off,
because fresh work waits behind all of it. Sidelining work older than a bound to a
spillover queue, taken only when the live queue is caught up, serves fresh work first.

For each mode (fifo, then sidelining), on fresh tables of their own, in real time:

- a producer thread submits shipments (`ShipmentQueue.submit` into the live queue) as
  a seeded Poisson stream of `--rate` per second (the same stream for both modes);
  each one's data holds its index and its submit time;
- `--consumers` threads each loop: take one shipment, "work" `--work-seconds` (a
  sleep), then `complete`; an empty take waits 10 ms. fifo takes with
  `ShipmentQueue.receive("live")`; sidelining with its own
  `FairConsumer(queue, FairnessPolicy(spillover_after_seconds=--spillover-after),
  sweep_seconds=--sweep-seconds).receive()`: when a sweep is due (the consumers of the
  process take turns: every sweep_seconds after a sweep that moved something, a
  quarter of the bound after one that did not), it first moves every live shipment
  that has waited longer than the bound to the spillover queue (`sideline_stale`), then
  takes the live queue, and the spillover queue only when the live one has nothing
  visible;
- phases: steady (`--steady` seconds), then an outage (`--outage` seconds: the
  consumers take nothing; one busy with a shipment finishes it first) while the
  producer goes on, then recovery: the consumers come back at the moment R. The
  producer goes on until `--tail` seconds after the backlog is cleared (below), or
  until `--recovery-max` seconds after R, whichever comes first; then the consumers
  drain what is left and stop.

A shipment's wait runs from the moment the producer calls `submit` to the moment the
consumer's take returns it (bench monotonic clock). Reported per mode:

- `steady_wait_p50_s` / `_p95_s`: waits of the shipments taken before the outage;
- `backlog_at_recovery`: shipments queued (COUNT of the live and spillover queues) at
  R, just before the consumers come back;
- `fresh_wait_during_recovery_p50_s` / `_p95_s` / `_max_s`: waits of the shipments
  submitted at or after R;
- `normal_threshold_s` = max(2 x steady p95, 1 s), and `time_to_normal_s`: the earliest
  T >= R such that every shipment submitted at or after T waited less than the
  threshold, as T - R (0 when every fresh one did; null when even the last one did
  not);
- `backlog_cleared_s`: from R until no submitted shipment is waiting any more (every
  one submitted so far has been taken: the live and the spillover queues are both
  empty), from the bench's record of submits and takes;
- `oldest_wait_s`: the longest wait of any shipment (sidelining's cost: old work
  waits longer); `backlog_wait_max_s`: the same among those submitted before R;
- `taken_from_spillover` (`fresh_taken_from_spillover`: those submitted at or after
  R, sidelined because they too waited longer than the bound);
  `completed_per_s_until_cleared`: completions per second from R until the backlog is
  cleared (the consumers' throughput with a backlog to work on);
- submitted, completed; requests per completed shipment and by operation (the depth
  monitor's COUNT queries left out); `update_conflicts`: conditional UpdateItems
  refused (claims, and sideline moves, that lost a race to another consumer);
  `empty_takes`: takes that found nothing, each followed by a 10 ms wait (their
  Queries are most of an idle consumer's requests); `depth_timeline`: [seconds since
  R, live, spillover], sampled with two COUNT queries once a second by a monitor
  thread (not metered).

Checks (exit status 1 when one fails): every submitted shipment completed exactly once
(no completion refused), and the table agrees (all COMPLETED, nothing queued, in
flight, delayed or in the DLQ in either queue).

`--json` prints one JSON object: {"params": {...}, "fifo": {...}, "sidelining": {...},
"seconds": ...}. The command line, DynamoDB Local, fresh tables, warm-up, metering and
output are `bench.harness`'s.
"""

from __future__ import annotations

import random
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field

from bench import harness
from queues_app.shipments.fairness import FairConsumer, FairnessPolicy
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.records import DEFAULT_QUEUE, SPILLOVER_QUEUE, ReceiptInvalid, ShipmentStatus

MODES = ("fifo", "sidelining")
IDLE_SLEEP = 0.01  # a consumer's wait after an empty take
MONITOR_EVERY = 1.0  # seconds between depth samples
VISIBILITY_TIMEOUT = 60.0  # far longer than any work here: no lease runs out
FINAL_DRAIN_LIMIT = 180.0  # seconds the consumers get for what is left after production
SMOKE = {
    "rate": 10.0,
    "consumers": 2,
    "work_seconds": 0.02,
    "steady": 2.0,
    "outage": 3.0,
    "recovery_max": 20.0,
    "tail": 1.0,
    "spillover_after": 1.0,
    "sweep_seconds": 0.2,
    "warmup": 0,
}


@dataclass(frozen=True)
class Parameters:
    rate: float = 20.0
    consumers: int = 4
    work_seconds: float = 0.05
    steady: float = 15.0
    outage: float = 20.0
    recovery_max: float = 90.0
    tail: float = 5.0
    spillover_after: float = 3.0
    sweep_seconds: float = 0.5
    seed: int = 7


@dataclass
class Record:
    index: int
    submitted: float  # monotonic, when submit was called
    written: float | None = None  # when submit returned
    taken: float | None = None
    done: float | None = None
    source: str | None = None  # the queue it was taken from

    @property
    def wait(self) -> float | None:
        return None if self.taken is None else self.taken - self.submitted


@dataclass
class Run:
    mode: str
    parameters: Parameters
    records: dict[str, Record]
    started: float
    outage_at: float
    recovery_at: float
    production_end: float
    ended: float
    backlog_at_recovery: dict[str, int]
    timeline: list[list[float]]
    requests: int
    operations: dict
    producer_lag_max: float
    completions: int
    empty_takes: int
    problems: list[str] = field(default_factory=list)

    def cleared_at(self) -> float | None:
        """The first moment at or after R when every shipment submitted so far was taken."""
        events = []
        for r in self.records.values():
            events.append((r.submitted, 1))
            if r.taken is not None:
                events.append((r.taken, -1))
        events.sort()
        waiting = 0
        for moment, delta in events:
            waiting += delta
            if moment >= self.recovery_at and waiting == 0:
                return moment
        return None

    def metrics(self) -> dict:
        records = sorted(self.records.values(), key=lambda r: r.submitted)
        steady = [r.wait for r in records if r.taken is not None and r.taken < self.outage_at]
        steady_p95 = harness.percentile(steady, 0.95)
        threshold = max(2 * steady_p95, 1.0) if steady_p95 is not None else 1.0
        fresh = [r for r in records if r.submitted >= self.recovery_at]
        fresh_waits = [r.wait for r in fresh if r.wait is not None]
        # time to normal: the earliest submit time T >= R after which every fresh one waited < threshold
        time_to_normal = 0.0 if fresh else None
        for i in range(len(fresh) - 1, -1, -1):
            if fresh[i].wait is None or fresh[i].wait >= threshold:
                time_to_normal = fresh[i + 1].submitted - self.recovery_at if i + 1 < len(fresh) else None
                break
        backlog = [r.wait for r in records if r.submitted < self.recovery_at and r.wait is not None]
        waits = [r.wait for r in records if r.wait is not None]
        cleared = self.cleared_at()
        completed = sum(1 for r in records if r.done is not None)
        per = max(completed, 1)
        operations = {op: figures["calls"] for op, figures in sorted(self.operations.items())}
        return {
            "submitted": len(records),
            "completed": completed,
            "completed_exactly_once": not self.problems and completed == len(records) == self.completions,
            "submitted_steady": sum(1 for r in records if r.submitted < self.outage_at),
            "submitted_outage": sum(1 for r in records if self.outage_at <= r.submitted < self.recovery_at),
            "submitted_recovery": len(fresh),
            "steady_wait_p50_s": _round(harness.percentile(steady, 0.5)),
            "steady_wait_p95_s": _round(steady_p95),
            "normal_threshold_s": _round(threshold),
            "backlog_at_recovery": sum(self.backlog_at_recovery.values()),
            "backlog_at_recovery_by_queue": dict(self.backlog_at_recovery),
            "time_to_normal_s": _round(time_to_normal),
            "fresh_wait_during_recovery_p50_s": _round(harness.percentile(fresh_waits, 0.5)),
            "fresh_wait_during_recovery_p95_s": _round(harness.percentile(fresh_waits, 0.95)),
            "fresh_wait_during_recovery_max_s": _round(max(fresh_waits, default=None)),
            "fresh_over_threshold": sum(1 for w in fresh_waits if w >= threshold),
            "backlog_cleared_s": _round(cleared - self.recovery_at if cleared is not None else None),
            "backlog_wait_p50_s": _round(harness.percentile(backlog, 0.5)),
            "backlog_wait_max_s": _round(max(backlog, default=None)),
            "oldest_wait_s": _round(max(waits, default=None)),
            "taken_from_spillover": sum(1 for r in records if r.source == "spillover"),
            "fresh_taken_from_spillover": sum(1 for r in fresh if r.source == "spillover"),
            "completed_per_s_until_cleared": _round(
                sum(1 for r in records if r.done is not None and self.recovery_at <= r.done <= cleared)
                / (cleared - self.recovery_at),
                1,
            )
            if cleared is not None and cleared > self.recovery_at
            else None,
            "production_after_recovery_s": _round(self.production_end - self.recovery_at),
            "requests_per_completed": round(self.requests / per, 2),
            "requests_by_operation": operations,
            "empty_takes": self.empty_takes,
            "update_conflicts": self.operations.get("UpdateItem", {})
            .get("errors", {})
            .get("ConditionalCheckFailedException", 0),
            "producer_lag_max_s": round(self.producer_lag_max, 3),
            "duration_s": round(self.ended - self.started, 1),
            "depth_timeline": self.timeline,
            "problems": list(self.problems),
        }


def _round(value: float | None, digits: int = 3) -> float | None:
    return None if value is None else round(value, digits)


# --- one run -------------------------------------------------------------------------------


def run_mode(endpoint: str, mode: str, p: Parameters, *, progress=None) -> Run:
    """One mode on fresh tables."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    with harness.fresh_tables(endpoint, "backlog", mode, read_timeout=60.0) as db:
        queue = ShipmentQueue(db)
        lock = threading.Lock()
        records: dict[str, Record] = {}
        completed_ids: list[str] = []
        failures: list[str] = []
        stop_producing = threading.Event()
        stop_consuming = threading.Event()
        working = threading.Event()  # set: consumers take work; clear: outage
        working.set()
        counters = {"lag": 0.0, "empty": 0}
        timeline: list[list[float]] = []
        marks: dict[str, float] = {}
        rng = random.Random(p.seed)

        def producer(start: float) -> None:
            offset = rng.expovariate(p.rate)
            index = 0
            try:
                while not stop_producing.is_set():
                    delay = start + offset - time.monotonic()
                    if delay > 0:
                        if stop_producing.wait(delay):
                            return
                    else:
                        counters["lag"] = max(counters["lag"], -delay)
                    shipment_id = f"s{index:06d}-{uuid.uuid4().hex[:6]}"
                    submitted = time.monotonic()
                    with lock:  # known before it exists: a consumer can never take one the bench does not know
                        records[shipment_id] = Record(index, submitted)
                    queue.submit({"n": index, "t": time.time()}, shipment_id=shipment_id)
                    with lock:
                        records[shipment_id].written = time.monotonic()
                    index += 1
                    offset += rng.expovariate(p.rate)
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(f"producer: {exc!r}")
                stop_producing.set()

        def consumer() -> None:
            fair = (
                FairConsumer(
                    queue, FairnessPolicy(spillover_after_seconds=p.spillover_after), sweep_seconds=p.sweep_seconds
                )
                if mode == "sidelining"
                else None
            )
            try:
                while not stop_consuming.is_set():
                    if not working.is_set():
                        working.wait(0.05)
                        continue
                    if fair is not None:
                        receipt = fair.receive(visibility_timeout=VISIBILITY_TIMEOUT)
                    else:
                        receipt = queue.receive(DEFAULT_QUEUE, visibility_timeout=VISIBILITY_TIMEOUT)
                    moment = time.monotonic()
                    if receipt is None:
                        with lock:
                            counters["empty"] += 1
                        stop_consuming.wait(IDLE_SLEEP)
                        continue
                    shipment_id = receipt.shipment.shipment_id
                    with lock:
                        record = records.get(shipment_id)
                        if record is None:
                            failures.append(f"took {shipment_id}, which the producer has not reported")
                            continue
                        if record.taken is not None:
                            failures.append(f"{shipment_id} taken twice")
                        record.taken = moment
                        record.source = receipt.shipment.queue
                    time.sleep(p.work_seconds)
                    try:
                        queue.complete(shipment_id, receipt.receipt)
                    except ReceiptInvalid as exc:
                        failures.append(f"completion refused: {exc}")
                        continue
                    with lock:
                        record.done = time.monotonic()
                        completed_ids.append(shipment_id)
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(f"consumer: {exc!r}")
                stop_consuming.set()
                stop_producing.set()

        def monitor() -> None:
            try:
                while not stop_consuming.wait(MONITOR_EVERY):
                    with harness.unmetered():
                        live = queue.count_queued(DEFAULT_QUEUE)
                        spill = queue.count_queued(SPILLOVER_QUEUE)
                    base = marks.get("recovery", marks["outage"] + p.outage)
                    timeline.append([round(time.monotonic() - base, 1), live, spill])
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(f"monitor: {exc!r}")

        def waiting_now() -> int:
            with lock:
                return sum(1 for r in records.values() if r.taken is None)

        with harness.metered() as measured:
            started = time.monotonic()
            marks["outage"] = started + p.steady
            threads = [threading.Thread(target=producer, args=(started,), name="producer")]
            threads += [threading.Thread(target=consumer, name=f"consumer-{i}") for i in range(p.consumers)]
            threads.append(threading.Thread(target=monitor, name="monitor"))
            for thread in threads:
                thread.start()
            # steady
            stop_producing.wait(max(0.0, marks["outage"] - time.monotonic()))
            working.clear()
            outage_at = time.monotonic()
            marks["outage"] = outage_at
            if progress:
                progress(f"{mode}: outage ({len(records)} submitted so far)")
            stop_producing.wait(max(0.0, outage_at + p.outage - time.monotonic()))
            # recovery
            queued = {
                DEFAULT_QUEUE: queue.count_queued(DEFAULT_QUEUE),
                SPILLOVER_QUEUE: queue.count_queued(SPILLOVER_QUEUE),
            }
            recovery_at = time.monotonic()
            marks["recovery"] = recovery_at
            working.set()
            if progress:
                progress(f"{mode}: consumers back, {sum(queued.values())} queued")
            deadline = recovery_at + p.recovery_max
            cleared = None
            while not stop_producing.is_set() and time.monotonic() < deadline:
                if cleared is None and waiting_now() == 0:
                    cleared = time.monotonic()
                    deadline = min(deadline, cleared + p.tail)
                    if progress:
                        progress(f"{mode}: backlog cleared {cleared - recovery_at:.1f} s after recovery")
                time.sleep(0.02)
            stop_producing.set()
            threads[0].join()
            production_end = time.monotonic()
            # what is left, without arrivals
            drain_deadline = production_end + FINAL_DRAIN_LIMIT
            while time.monotonic() < drain_deadline and not stop_consuming.is_set():
                with lock:
                    if all(r.done is not None for r in records.values()):
                        break
                time.sleep(0.05)
            else:
                if not stop_consuming.is_set():
                    failures.append(f"not drained {FINAL_DRAIN_LIMIT:.0f} s after production stopped")
            stop_consuming.set()
            for thread in threads:
                thread.join()
            ended = time.monotonic()

        run = Run(
            mode=mode,
            parameters=p,
            records=records,
            started=started,
            outage_at=outage_at,
            recovery_at=recovery_at,
            production_end=production_end,
            ended=ended,
            backlog_at_recovery=queued,
            timeline=timeline,
            requests=measured.requests,
            operations=measured.operations,
            producer_lag_max=counters["lag"],
            completions=len(completed_ids),
            empty_takes=counters["empty"],
            problems=list(failures),
        )
        _check(run, queue, completed_ids)
        return run


def _check(run: Run, queue: ShipmentQueue, completed_ids: list[str]) -> None:
    """Every submitted shipment completed exactly once; the table agrees."""
    twice = len(completed_ids) - len(set(completed_ids))
    if twice:
        run.problems.append(f"{twice} shipments completed twice")
    never = sorted(set(run.records) - set(completed_ids))
    if never:
        run.problems.append(f"{len(never)} shipments never completed, e.g. {never[:5]}")
    unknown = set(completed_ids) - set(run.records)
    if unknown:
        run.problems.append(f"{len(unknown)} completed shipments the producer did not submit")
    ids = sorted(run.records)
    stored = []
    for i in range(0, len(ids), 100):
        stored += queue.get_many(ids[i : i + 100])
    not_done = [s.shipment_id for s in stored if s.status != ShipmentStatus.COMPLETED]
    if not_done or len(stored) != len(ids):
        run.problems.append(
            f"table: {len(not_done)} shipments not completed, {len(ids) - len(stored)} missing, e.g. {not_done[:5]}"
        )
    for name in (DEFAULT_QUEUE, SPILLOVER_QUEUE):
        counts = queue.counts(name)
        if counts.queued or counts.in_flight or counts.delayed or counts.dlq:
            run.problems.append(f"table: queue {name} not empty afterwards: {counts}")


# --- the whole benchmark -------------------------------------------------------------------


Results = harness.Variants[Parameters, Run]  # runs by mode


def warm_up(endpoint: str, shipments: int = 200) -> None:
    """DynamoDB Local's JVM is several times slower on its first few thousand requests:
    submit, sideline, take and complete a few hundred shipments (not measured)."""
    with harness.fresh_tables(endpoint, "backlog", "warm", read_timeout=60.0) as db:
        queue = ShipmentQueue(db)
        for i in range(shipments):
            queue.submit({"n": i})
        queue.sideline_stale(0.0, limit=shipments // 2)
        for _ in range(shipments):
            receipt = queue.receive() or queue.receive(SPILLOVER_QUEUE)
            if receipt:
                queue.complete(receipt.shipment.shipment_id, receipt.receipt)
        queue.count_queued()


def run_benchmark(
    endpoint: str, p: Parameters, *, modes: tuple[str, ...] = MODES, warmup: int = 1, progress=None
) -> Results:
    return harness.run_variants(
        modes,
        lambda mode: run_mode(endpoint, mode, p, progress=progress),
        p,
        warmup=warmup,
        warm_up_round=lambda _round: warm_up(endpoint),
        progress=progress,
        summary=summary_line,
    )


def as_json(results: Results) -> dict:
    return results.as_json("params")


def _s(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def summary_line(run: Run) -> str:
    m = run.metrics()
    return (
        f"{run.mode}: {m['submitted']} submitted, {m['completed']} completed; backlog {m['backlog_at_recovery']} "
        f"at recovery; normal after {_s(m['time_to_normal_s'])} s; fresh wait p50 "
        f"{_s(m['fresh_wait_during_recovery_p50_s'])} s, p95 {_s(m['fresh_wait_during_recovery_p95_s'])} s; "
        f"backlog cleared after {_s(m['backlog_cleared_s'])} s; oldest wait {_s(m['oldest_wait_s'])} s"
        + (f"; CHECK FAILED: {'; '.join(run.problems)}" if run.problems else "")
    )


def report(results: Results, where: str) -> str:
    p = results.parameters
    ms = {mode: run.metrics() for mode, run in results.runs.items()}
    modes = list(ms)
    lines = [
        (
            f"Operating under backlog on {where}: Poisson arrivals {p.rate:g}/s (seed {p.seed}); {p.consumers} "
            f"consumers, {p.work_seconds * 1000:g} ms of work each; steady {p.steady:g} s, outage {p.outage:g} s, "
            f"then recovery until {p.tail:g} s after the backlog is cleared (at most {p.recovery_max:g} s); "
            f"sidelining: work older than {p.spillover_after:g} s to the spillover queue, swept every "
            f"{p.sweep_seconds:g} s by one consumer at a time"
        ),
        "",
    ]
    rows = [
        (
            "submitted (steady / outage / recovery)",
            lambda m: f"{m['submitted']} ({m['submitted_steady']}/{m['submitted_outage']}/{m['submitted_recovery']})",
        ),
        ("completed exactly once", lambda m: f"{m['completed']} " + ("yes" if m["completed_exactly_once"] else "NO")),
        ("steady wait p50 / p95 (s)", lambda m: f"{_s(m['steady_wait_p50_s'], 3)} / {_s(m['steady_wait_p95_s'], 3)}"),
        ("normal threshold (s)", lambda m: _s(m["normal_threshold_s"])),
        ("backlog at recovery", lambda m: str(m["backlog_at_recovery"])),
        ("time to normal (s)", lambda m: _s(m["time_to_normal_s"])),
        (
            "fresh wait in recovery p50 / p95 / max (s)",
            lambda m: (
                f"{_s(m['fresh_wait_during_recovery_p50_s'])} / {_s(m['fresh_wait_during_recovery_p95_s'])} / "
                f"{_s(m['fresh_wait_during_recovery_max_s'])}"
            ),
        ),
        ("fresh over threshold", lambda m: f"{m['fresh_over_threshold']}/{m['submitted_recovery']}"),
        ("backlog cleared after (s)", lambda m: _s(m["backlog_cleared_s"])),
        ("backlog wait p50 / max (s)", lambda m: f"{_s(m['backlog_wait_p50_s'])} / {_s(m['backlog_wait_max_s'])}"),
        ("oldest wait (s)", lambda m: _s(m["oldest_wait_s"])),
        (
            "taken from spillover (of them fresh)",
            lambda m: f"{m['taken_from_spillover']} ({m['fresh_taken_from_spillover']})",
        ),
        ("completed / s until cleared", lambda m: _s(m["completed_per_s_until_cleared"], 1)),
        ("requests / completed", lambda m: _s(m["requests_per_completed"])),
        ("UpdateItems refused (lost races)", lambda m: str(m["update_conflicts"])),
        ("empty takes", lambda m: str(m["empty_takes"])),
        ("producer lag max (s)", lambda m: _s(m["producer_lag_max_s"], 3)),
        ("run (s)", lambda m: _s(m["duration_s"], 1)),
    ]
    width = max(len(name) for name, _ in rows)
    lines.append(f"{'':<{width}}  " + "  ".join(f"{mode:>20}" for mode in modes))
    for name, cell in rows:
        lines.append(f"{name:<{width}}  " + "  ".join(f"{cell(ms[mode]):>20}" for mode in modes))
    lines += ["", "Queued shipments (live / spillover) from R on, every 5 s (COUNT queries once a second):"]
    for mode in modes:
        samples = [s for s in ms[mode]["depth_timeline"] if s[0] >= -0.5]
        picked, next_at = [], 0.0
        for t, live, spill in samples:
            if t >= next_at - 0.5:
                picked.append(f"{t:.0f}s {live}/{spill}")
                next_at = t + 5.0
        lines.append(f"  {mode:<10} " + ", ".join(picked))
    lines += ["", "Requests per completed shipment by operation (the monitor's COUNT queries left out):"]
    for mode in modes:
        lines.append(f"  {mode:<10} " + harness.by_operation(ms[mode]["requests_by_operation"], ms[mode]["completed"]))
    lines += ["", *harness.checks(results.problems)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    d = Parameters()
    parser = harness.parser(__doc__, "backlog", seed=d.seed, warmup=1)
    parser.add_argument("--rate", type=float, default=d.rate, help="shipments submitted per second (Poisson)")
    parser.add_argument("--consumers", type=int, default=d.consumers, help="consumer threads")
    parser.add_argument("--work-seconds", type=float, default=d.work_seconds, help="simulated work per shipment")
    parser.add_argument("--steady", type=float, default=d.steady, help="seconds of steady load first")
    parser.add_argument("--outage", type=float, default=d.outage, help="seconds the consumers take nothing")
    parser.add_argument(
        "--recovery-max",
        type=float,
        default=d.recovery_max,
        help="longest the producer goes on after the consumers come back",
    )
    parser.add_argument(
        "--tail", type=float, default=d.tail, help="seconds the producer goes on after the backlog is cleared"
    )
    parser.add_argument(
        "--spillover-after",
        type=float,
        default=d.spillover_after,
        help="sidelining: live work older than this goes to the spillover queue",
    )
    parser.add_argument(
        "--sweep-seconds",
        type=float,
        default=d.sweep_seconds,
        help="sidelining: stale work is swept at most this often (by one consumer at a time)",
    )
    parser.add_argument("--modes", type=harness.names(*MODES), default=",".join(MODES), help="default: fifo,sidelining")
    args = harness.parse(parser, argv, smoke=SMOKE)
    if (
        args.rate <= 0
        or args.consumers < 1
        or args.spillover_after <= 0
        or args.sweep_seconds <= 0
        or min(args.work_seconds, args.steady, args.outage, args.recovery_max, args.tail) < 0
    ):
        parser.error(
            "--rate, --consumers, --spillover-after and --sweep-seconds must be positive; durations cannot be negative"
        )
    p = harness.from_args(Parameters, args)
    return harness.execute(
        args,
        lambda endpoint: run_benchmark(endpoint, p, modes=args.modes, warmup=args.warmup, progress=harness.progress),
        report=report,
        as_json=as_json,
    )


if __name__ == "__main__":
    sys.exit(main())
