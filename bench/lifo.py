"""LIFO benchmark: the task queue under a burst it cannot keep up with, newest first
against oldest first, on DynamoDB Local.

    .venv/bin/python -m bench.lifo [--json] [--overload-rate 40] [--overload-seconds 10]
                                   [--calm-rate 5] [--calm-seconds 15] [--downstream-rate 15]
                                   [--expiry 6] [--take-limit 10] [--orders lifo,fifo]
                                   [--seed 7] [--warmup 1] [--endpoint URL] [--smoke]

For each order (lifo, then fifo) on fresh tables of its own, the same seeded arrival
schedule runs in real time:

- a producer thread creates tasks (`TaskQueue.create`) as a Poisson stream at
  `--overload-rate` per second for `--overload-seconds`, then at `--calm-rate` for
  `--calm-seconds`;
- one consumer thread (the article's processor runs with a concurrency of 1) waits
  until the downstream can accept a call (one call per slot of 1 / `--downstream-rate`
  seconds, on a fixed grid), then takes the next task with `take_next(newest_first=...)`
  (LIFO: newest first; FIFO: oldest first; `limit=--take-limit` index entries read per
  try), "calls" the downstream, and marks the task done (`succeed`); an empty take
  waits 10 ms;
- pending tasks expire `--expiry` seconds after creation (`ExpiryPolicy`; `expires_at` is
  in whole epoch seconds, so the effective expiry is between expiry - 1 and expiry);
  a sweeper thread runs `sweep_expired()` every second, half a second after each whole
  wall-clock second (tasks expire at whole seconds), and adds up the shed tasks.

The run ends when the producer is done and no live task is pending; a last sweep then
counts what expired meanwhile. Times are the bench's own monotonic clock: a task is
created when `create` is called and taken when `take_next` returns it.

Reported per order:
- wait (taken - created) of every processed task, of the newest tenth of all tasks
  (the 10% created last; those never processed are counted apart), and per phase
  (overload, calm), each with the newest tenth of that phase;
- processed, shed (counted by the sweeper), still pending at the end, and deleted by
  DynamoDB Local's own TTL before the sweeper saw them (unaccounted otherwise);
- the backlog (live pending tasks) at the end of the overload phase, its peak, and the
  time from the end of the overload phase until it first reaches 0 (from the bench's
  own bookkeeping of creations, takes and expiry times);
- DynamoDB requests and capacity units per processed task (producer, consumer and
  sweeper together);
- failed takes (conditional UpdateItems refused: a task that expired between the
  Query and the take; one consumer never loses a race to another);
- empty takes, and among them those made while the bookkeeping knew of a live pending
  task (expected 0: `pending_ids` reads past pages of expired tasks not yet swept, which
  oldest first come before the live ones, up to 10 pages).

Checks (exit status 1 when one fails): no task processed twice; every created task
processed, shed, still pending or deleted by TTL, and the table agrees with the
consumer about which ones were processed.

`--json` prints one JSON object: {"parameters": {...}, "lifo": {...}, "fifo": {...},
"seconds": ...}. The command line, DynamoDB Local, fresh tables, warm-up, metering and
output are `bench.harness`'s.
"""

from __future__ import annotations

import math
import random
import statistics
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field

from bench import harness
from queues_app.ddb.client import Dynamo
from queues_app.ddb.scan import scan_all
from queues_app.tasks.queue import TaskQueue
from queues_app.tasks.records import ExpiryPolicy, TaskStatus

ORDERS = ("lifo", "fifo")
SWEEP_EVERY = 1.0  # seconds between sweeps
# Pending tasks expire at whole epoch seconds (all those created within one second
# together), so how long expired tasks wait for the sweeper depends on where in the
# second it runs: fixed at half a second after each whole second, for runs that repeat.
SWEEP_PHASE = 0.5
IDLE_SLEEP = 0.01  # a consumer's wait after an empty take
FINISHED_SECONDS = 60.0  # finished tasks are kept this long (longer than a run)
SMOKE = {
    "overload_rate": 20.0,
    "overload_seconds": 1.0,
    "calm_rate": 4.0,
    "calm_seconds": 1.0,
    "expiry": 2.0,
    "downstream_rate": 10.0,
    "warmup": 0,
}


@dataclass(frozen=True)
class Parameters:
    overload_rate: float = 40.0
    overload_seconds: float = 10.0
    calm_rate: float = 5.0
    calm_seconds: float = 15.0
    downstream_rate: float = 15.0
    expiry: float = 6.0
    take_limit: int = 10
    seed: int = 7


def arrival_schedule(p: Parameters) -> list[tuple[float, str]]:
    """Seeded Poisson arrivals: (offset in seconds from the start, phase)."""
    rng = random.Random(p.seed)
    arrivals = []
    for phase, start, rate, length in (
        ("overload", 0.0, p.overload_rate, p.overload_seconds),
        ("calm", p.overload_seconds, p.calm_rate, p.calm_seconds),
    ):
        if rate <= 0 or length <= 0:
            continue
        t = start + rng.expovariate(rate)
        while t < start + length:
            arrivals.append((t, phase))
            t += rng.expovariate(rate)
    return arrivals


@dataclass
class Record:
    index: int  # arrival order
    phase: str
    created: float  # monotonic, when create was called
    expiry: float  # monotonic equivalent of expires_at
    written: float | None = None  # monotonic, when create returned: the task is in the table
    taken: float | None = None
    done: float | None = None


@dataclass
class Run:
    order: str
    parameters: Parameters
    records: dict[str, Record]
    overload_end: float  # monotonic
    started: float
    ended: float
    shed: int
    shed_ages: list[float]
    still_pending: int
    deleted_by_ttl: int
    requests: int
    capacity: float
    operations: dict
    empty_takes_with_work: int
    empty_takes: int
    producer_lag_max: float
    problems: list[str] = field(default_factory=list)

    # --- figures ----------------------------------------------------------------------

    @property
    def processed(self) -> list[Record]:
        return [r for r in self.records.values() if r.done is not None]

    def backlog(self) -> tuple[float | None, int, int]:
        """(seconds from the end of the overload until no live task is pending, the
        backlog at the end of the overload, its peak), from creations, takes and expiries."""
        events = []
        for r in self.records.values():
            events.append((r.created, 1))
            end = r.taken if r.taken is not None and r.taken < r.expiry else r.expiry
            events.append((end, -1))
        events.sort(key=lambda e: (e[0], e[1]))
        pending = peak = 0
        at_overload_end = None
        gone = None
        for moment, delta in events:
            if at_overload_end is None and moment > self.overload_end:
                at_overload_end = pending
                if pending == 0:
                    gone = 0.0
            pending += delta
            peak = max(peak, pending)
            if gone is None and at_overload_end is not None and pending == 0:
                gone = moment - self.overload_end
        if at_overload_end is None:
            at_overload_end = pending
            gone = 0.0 if pending == 0 else None
        return gone, at_overload_end, peak

    def metrics(self) -> dict:
        records = sorted(self.records.values(), key=lambda r: r.created)
        processed = self.processed
        gone, at_end, peak = self.backlog()
        phases = {}
        for phase in ("overload", "calm"):
            chosen = [r for r in records if r.phase == phase]
            phases[phase] = {**_group(chosen), "newest_tenth": _group(_newest_tenth(chosen))}
        return {
            "created": len(records),
            "processed": len(processed),
            "shed": self.shed,
            "still_pending": self.still_pending,
            "deleted_by_ttl": self.deleted_by_ttl,
            "wait_all": _waits(processed),
            "wait_newest_tenth": _group(_newest_tenth(records)),
            "phases": phases,
            "backlog_gone_s": round(gone, 2) if gone is not None else None,
            "backlog_at_overload_end": at_end,
            "backlog_peak": peak,
            "shed_age_mean_s": round(statistics.fmean(self.shed_ages), 2) if self.shed_ages else None,
            "requests_per_processed": round(self.requests / len(processed), 2) if processed else None,
            "capacity_per_processed": round(self.capacity / len(processed), 2) if processed else None,
            "requests": self.requests,
            "requests_by_operation": {op: figures["calls"] for op, figures in sorted(self.operations.items())},
            "failed_takes": self.operations.get("UpdateItem", {})
            .get("errors", {})
            .get("ConditionalCheckFailedException", 0),
            "empty_takes": self.empty_takes,
            "empty_takes_with_work_pending": self.empty_takes_with_work,
            "producer_lag_max_s": round(self.producer_lag_max, 3),
            "duration_s": round(self.ended - self.started, 2),
            "problems": list(self.problems),
        }


def _newest_tenth(records: list[Record]) -> list[Record]:
    """The 10% created last (at least one), `records` in creation order."""
    if not records:
        return []
    return records[-max(1, math.ceil(len(records) / 10)) :]


def _waits(records: list[Record]) -> dict:
    waits = [r.taken - r.created for r in records if r.taken is not None and r.done is not None]
    if not waits:
        return {"n": 0, "mean_s": None, "p50_s": None, "p95_s": None, "max_s": None}
    return {
        "n": len(waits),
        "mean_s": round(statistics.fmean(waits), 3),
        "p50_s": round(harness.percentile(waits, 0.5), 3),
        "p95_s": round(harness.percentile(waits, 0.95), 3),
        "max_s": round(max(waits), 3),
    }


def _group(records: list[Record]) -> dict:
    """Size, processed, not processed (shed or left), and the waits of the processed."""
    processed = [r for r in records if r.done is not None]
    return {
        "size": len(records),
        "processed": len(processed),
        "not_processed": len(records) - len(processed),
        **_waits(processed),
    }


# --- one run -------------------------------------------------------------------------------


def run_order(endpoint: str, order: str, p: Parameters, *, timeout: float | None = None) -> Run:
    """One order on fresh tables."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}")
    newest_first = order == "lifo"
    with harness.fresh_tables(endpoint, "lifo", order) as db:
        queue = TaskQueue(db, expiry=ExpiryPolicy(pending_seconds=p.expiry, finished_seconds=FINISHED_SECONDS))
        schedule = arrival_schedule(p)
        lock = threading.Lock()
        records: dict[str, Record] = {}
        processed_ids: list[str] = []
        failures: list[str] = []
        producer_done = threading.Event()
        stop = threading.Event()
        shed = {"count": 0, "ages": []}
        counters = {"empty": 0, "empty_with_work": 0, "lag": 0.0}
        wall_minus_mono = time.time() - time.monotonic()
        limit = timeout if timeout is not None else p.overload_seconds + p.calm_seconds + p.expiry + 60.0

        def live_pending(moment: float, written_by: float | None = None) -> int:
            """Tasks in the table by `written_by`, not taken, whose expiry is after `moment`."""
            written_by = moment if written_by is None else written_by
            with lock:
                return sum(
                    1
                    for r in records.values()
                    if r.written is not None and r.written <= written_by and r.taken is None and r.expiry > moment
                )

        def producer(start: float) -> None:
            try:
                for index, (offset, phase) in enumerate(schedule):
                    if stop.is_set():
                        return
                    delay = start + offset - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
                    else:
                        counters["lag"] = max(counters["lag"], -delay)
                    # registered before the write, so that the consumer can never take a task
                    # the bench does not know yet; its expiry is corrected from the result
                    task_id = uuid.uuid4().hex[:16]
                    created = time.monotonic()
                    with lock:
                        records[task_id] = Record(index, phase, created, int(time.time() + p.expiry) - wall_minus_mono)
                    task = queue.create({"n": index, "phase": phase}, task_id=task_id)
                    with lock:
                        records[task_id].expiry = task.expires_at - wall_minus_mono
                        records[task_id].written = time.monotonic()
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(f"producer: {exc!r}")
                stop.set()
            finally:
                producer_done.set()

        def consumer() -> None:
            # The downstream accepts one call per slot of 1/rate seconds (slots on a fixed
            # grid: a token bucket of size 1), so the consumer's own requests, made within
            # a slot, do not lower the rate.
            interval = 1.0 / p.downstream_rate
            origin = next_slot = time.monotonic()
            try:
                while not stop.is_set():
                    delay = next_slot - time.monotonic()
                    if delay > 0:  # the downstream cannot take another call yet
                        time.sleep(delay)
                    asked = time.monotonic()
                    task = queue.take_next(newest_first=newest_first, limit=p.take_limit)
                    moment = time.monotonic()
                    if task is None:
                        finished = producer_done.is_set()
                        # a task written before the take began, not taken, whose expiry is
                        # more than a second away (no race with a write or an expiry)
                        waiting = live_pending(moment + 1.0, written_by=asked)
                        counters["empty"] += 1
                        if waiting:
                            counters["empty_with_work"] += 1
                        elif finished and live_pending(moment) == 0:
                            return
                        time.sleep(IDLE_SLEEP)
                        continue
                    with lock:
                        record = records.get(task.task_id)
                        if record is None:
                            failures.append(f"took {task.task_id}, which the producer has not reported")
                            continue
                        if record.taken is not None:
                            failures.append(f"{task.task_id} taken twice")
                        record.taken = moment
                    # the downstream call uses this slot; the next one starts on the next slot
                    next_slot = origin + (math.floor((moment - origin) / interval) + 1) * interval
                    queue.succeed(task.task_id, "ok")
                    with lock:
                        record.done = time.monotonic()
                        processed_ids.append(task.task_id)
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(f"consumer: {exc!r}")
                stop.set()

        def sweep_once() -> None:
            report = queue.sweep_expired()
            shed["count"] += report.shed
            shed["ages"] += report.ages_seconds

        def sweeper() -> None:
            try:
                while True:
                    wall = time.time()
                    due = math.floor(wall / SWEEP_EVERY) * SWEEP_EVERY + SWEEP_PHASE
                    if due <= wall:
                        due += SWEEP_EVERY
                    if stop.wait(due - wall):
                        return
                    sweep_once()
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(f"sweeper: {exc!r}")
                stop.set()

        with harness.metered() as measured:
            started = time.monotonic()
            threads = [
                threading.Thread(target=producer, args=(started,), name="producer"),
                threading.Thread(target=consumer, name="consumer"),
                threading.Thread(target=sweeper, name="sweeper"),
            ]
            for thread in threads:
                thread.start()
            threads[1].join(limit)
            if threads[1].is_alive():
                failures.append(f"not finished after {limit:.0f}s")
            stop.set()
            for thread in threads:
                thread.join()
            ended = time.monotonic()
            sweep_once()  # what expired since the last sweep
        run = Run(
            order=order,
            parameters=p,
            records=records,
            overload_end=started + p.overload_seconds,
            started=started,
            ended=ended,
            shed=shed["count"],
            shed_ages=shed["ages"],
            still_pending=0,
            deleted_by_ttl=0,
            requests=measured.requests,
            capacity=measured.capacity,
            operations=measured.operations,
            empty_takes_with_work=counters["empty_with_work"],
            empty_takes=counters["empty"],
            producer_lag_max=counters["lag"],
            problems=list(failures),
        )
        _check(run, db, processed_ids)
        return run


def _check(run: Run, db: Dynamo, processed_ids: list[str]) -> None:
    """Every created task processed once, shed, still pending or gone by TTL; the table agrees."""
    stored = {i["task_id"]: i for i in scan_all(db, "tasks") if "task_status" in i}
    by_status: dict[str, set[str]] = {s: set() for s in TaskStatus.ALL}
    for task_id, item in stored.items():
        by_status[item["task_status"]].add(task_id)
    twice = len(processed_ids) - len(set(processed_ids))
    if twice:
        run.problems.append(f"{twice} tasks processed twice")
    if by_status[TaskStatus.SUCCESS] != set(processed_ids):
        run.problems.append(
            f"the table has {len(by_status[TaskStatus.SUCCESS])} tasks done, the consumer {len(set(processed_ids))}"
        )
    if by_status[TaskStatus.TAKEN] or by_status[TaskStatus.FAILURE]:
        run.problems.append(
            f"{len(by_status[TaskStatus.TAKEN])} tasks left TAKEN, {len(by_status[TaskStatus.FAILURE])} FAILURE"
        )
    unknown = set(stored) - set(run.records)
    if unknown:
        run.problems.append(f"{len(unknown)} tasks in the table the producer did not create")
    run.still_pending = len(by_status[TaskStatus.PENDING])
    missing = len(set(run.records) - set(stored))  # deleted: by the sweeper (shed) or by TTL
    run.deleted_by_ttl = missing - run.shed
    if run.deleted_by_ttl < 0:
        run.problems.append(f"the sweeper counted {run.shed} shed, but only {missing} tasks are gone")


# --- the whole benchmark -------------------------------------------------------------------


Results = harness.Variants[Parameters, Run]  # runs by order


def warm_up(endpoint: str, tasks: int = 150) -> None:
    """DynamoDB Local's JVM is several times slower on its first few thousand requests:
    create, take and finish a few hundred tasks (not measured), both orders."""
    with harness.fresh_tables(endpoint, "lifo", "warm") as db:
        queue = TaskQueue(db, expiry=ExpiryPolicy(pending_seconds=60, finished_seconds=60))
        for i in range(tasks):
            queue.create({"n": i})
        for i in range(tasks):
            task = queue.take_next(newest_first=i % 2 == 0)
            if task:
                queue.succeed(task.task_id)
        queue.count(TaskStatus.PENDING)
        queue.sweep_expired()


def run_benchmark(
    endpoint: str, p: Parameters, *, orders: tuple[str, ...] = ORDERS, warmup: int = 1, progress=None
) -> Results:
    return harness.run_variants(
        orders,
        lambda order: run_order(endpoint, order, p),
        p,
        warmup=warmup,
        warm_up_round=lambda _round: warm_up(endpoint),
        progress=progress,
        summary=summary_line,
    )


def as_json(results: Results) -> dict:
    return results.as_json("parameters")


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def summary_line(run: Run) -> str:
    m = run.metrics()
    return (
        f"{run.order}: {m['created']} created, {m['processed']} processed, {m['shed']} shed; wait "
        f"{_ms(m['wait_all']['mean_s'])} ms mean, newest tenth {_ms(m['wait_newest_tenth']['mean_s'])} ms "
        f"({m['wait_newest_tenth']['processed']}/{m['wait_newest_tenth']['size']} processed); backlog gone "
        f"{m['backlog_gone_s']} s after the overload"
        + (f"; CHECK FAILED: {'; '.join(run.problems)}" if run.problems else "")
    )


def report(results: Results, where: str) -> str:
    p = results.parameters
    lines = [
        (
            f"LIFO vs FIFO under overload on {where}: arrivals {p.overload_rate:g}/s for {p.overload_seconds:g} "
            f"s, then {p.calm_rate:g}/s for {p.calm_seconds:g} s (Poisson, seed {p.seed}); one consumer, downstream "
            f"{p.downstream_rate:g}/s; pending expiry {p.expiry:g} s, swept every {SWEEP_EVERY:g} s "
            f"(at +{SWEEP_PHASE:g} s); take_next reads {p.take_limit} index entries"
        ),
        "",
        (
            "Waits (taken - created), ms: mean / p50 / p95 / max of the processed tasks in each group; "
            "'done' = processed / size of the group"
        ),
        f"{'order':<5} {'group':<22} {'done':>9} {'mean':>6} {'p50':>6} {'p95':>6} {'max':>6}",
    ]
    for order, run in results.runs.items():
        m = run.metrics()
        groups = [
            ("all tasks", {"size": m["created"], "processed": m["processed"], **m["wait_all"]}),
            ("newest tenth", m["wait_newest_tenth"]),
        ]
        for phase in ("overload", "calm"):
            groups += [(f"{phase}", m["phases"][phase]), (f"{phase}, newest tenth", m["phases"][phase]["newest_tenth"])]
        for name, g in groups:
            lines.append(
                f"{order:<5} {name:<22} {g['processed']:>4}/{g['size']:<4} {_ms(g['mean_s']):>6} "
                f"{_ms(g['p50_s']):>6} {_ms(g['p95_s']):>6} {_ms(g['max_s']):>6}"
            )
        lines.append("")
    lines += [
        (
            f"{'order':<5} {'created':>7} {'processed':>9} {'shed':>5} {'left':>5} {'ttl':>4} {'backlog@end':>11} "
            f"{'peak':>5} {'gone after s':>12} {'shed age s':>10} {'req/processed':>13} {'CU/processed':>12} "
            f"{'empty takes (work)':>18} {'run s':>6}  check"
        ),
    ]
    for order, run in results.runs.items():
        m = run.metrics()
        gone = "-" if m["backlog_gone_s"] is None else f"{m['backlog_gone_s']:.2f}"
        age = "-" if m["shed_age_mean_s"] is None else f"{m['shed_age_mean_s']:.2f}"
        lines.append(
            f"{order:<5} {m['created']:>7} {m['processed']:>9} {m['shed']:>5} {m['still_pending']:>5} "
            f"{m['deleted_by_ttl']:>4} {m['backlog_at_overload_end']:>11} {m['backlog_peak']:>5} {gone:>12} "
            f"{age:>10} {m['requests_per_processed'] or 0:>13.2f} {m['capacity_per_processed'] or 0:>12.2f} "
            f"{m['empty_takes']:>10} ({m['empty_takes_with_work_pending']:>5}) {m['duration_s']:>6.1f}  "
            + ("ok" if not run.problems else "FAILED")
        )
    lines.append("")
    for order, run in results.runs.items():
        m = run.metrics()
        lines.append(
            f"{order}: requests per processed task by operation: "
            + harness.by_operation(m["requests_by_operation"], m["processed"])
            + f"; {m['failed_takes']} takes refused (expired since the Query)"
        )
    lines += [
        "",
        (
            "backlog@end: live pending tasks when the overload ends; gone after: seconds from then until none is "
            "pending; left: still pending at the end; ttl: deleted by DynamoDB Local's TTL before the sweeper saw "
            "them; empty takes (work): take_next found nothing (while the bench knew of a live pending task)"
        ),
    ]
    lines += harness.checks(results.problems)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    defaults = Parameters()
    parser = harness.parser(__doc__, "lifo", seed=defaults.seed, warmup=1)
    parser.add_argument("--overload-rate", type=float, default=defaults.overload_rate, help="tasks per second")
    parser.add_argument("--overload-seconds", type=float, default=defaults.overload_seconds)
    parser.add_argument("--calm-rate", type=float, default=defaults.calm_rate, help="tasks per second")
    parser.add_argument("--calm-seconds", type=float, default=defaults.calm_seconds)
    parser.add_argument(
        "--downstream-rate",
        type=float,
        default=defaults.downstream_rate,
        help="calls per second the downstream accepts",
    )
    parser.add_argument("--expiry", type=float, default=defaults.expiry, help="seconds until a pending task is shed")
    parser.add_argument(
        "--take-limit",
        type=int,
        default=defaults.take_limit,
        help="index entries take_next reads (its `limit`; default 10, the library's)",
    )
    parser.add_argument("--orders", type=harness.names(*ORDERS), default=",".join(ORDERS), help="default: lifo,fifo")
    args = harness.parse(parser, argv, smoke=SMOKE)
    if (
        args.downstream_rate <= 0
        or args.expiry <= 0
        or args.take_limit < 1
        or min(args.overload_rate, args.overload_seconds, args.calm_rate, args.calm_seconds) < 0
    ):
        parser.error(
            "rates and durations cannot be negative; --downstream-rate, --expiry and --take-limit must be positive"
        )
    p = harness.from_args(Parameters, args)
    return harness.execute(
        args,
        lambda endpoint: run_benchmark(endpoint, p, orders=args.orders, warmup=args.warmup, progress=harness.progress),
        report=report,
        as_json=as_json,
    )


if __name__ == "__main__":
    sys.exit(main())
