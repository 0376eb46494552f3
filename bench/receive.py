"""Receive benchmark: our ShipmentQueue.receive against the article's peek, on DynamoDB Local.

    .venv/bin/python -m bench.receive [--json] [--inflight 0,1000,10000] [--receives 50]
                                      [--waiting 200] [--consumers 1,4,16] [--shipments 400]
                                      [--modes backlog,stream] [--producers 1] [--idle-ms 10]
                                      [--methods ours,article] [--warmup 1] [--endpoint URL]
                                      [--smoke]

Part 1, cost of one receive with N shipments in flight. For each N, fresh tables hold,
for both methods alike, N shipments in flight (leased for an hour, enqueued before the
others: the oldest work is the work in flight) and W waiting ones behind them. Then M
receives, one after the other, each leasing the next waiting shipment; only those are
metered and timed. Reported per method and N: DynamoDB requests per receive, consumed
capacity units per receive (as DynamoDB Local reports them, indexes included), mean
latency, and for the article the Query pages read per receive. Every receive must
return the next waiting shipment in queue order (checked).

- ours: `ShipmentQueue.receive` on our `shipments` table: the head of the `invisible`
  index up to now (nothing is due: every lease runs for an hour), then the head of the
  `ready` index, then one conditional UpdateItem.
- article: `bench/article_receive.py` (the article's `peek`): page through the one
  `queued` index 250 at a time past every shipment in flight to the first eligible one,
  then one conditional UpdateItem.

Part 2, enqueue-to-complete throughput of ours with C consumer threads: S shipments are
created ready to ship (not timed); then either all are enqueued before the consumers
start ("backlog"), or a producer thread enqueues them one by one while the consumers
run ("stream"); C consumers loop receive -> complete (an empty receive waits 10 ms).
Reported: completed shipments per second (S / time to the last completion),
enqueue-to-complete latency (from the enqueue call to the return of complete), requests
per shipment (the producer's included in stream mode), empty receives and lost claims.
Every shipment must be completed exactly once, and the table must agree (checked).

`--json` prints one JSON object, {"ours": {"<N>": {...}}, "article": {"<N>": {...}}},
each inner object with requests_per_peek, capacity_per_peek and a few more figures (the
keys keep the names they had when the operation was called peek); the throughput lines
then go to stderr. Failed checks make the command exit with status 1. The command line,
DynamoDB Local, fresh tables, warm-up, metering and output are `bench.harness`'s.
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta

from bench import article_receive, harness
from queues_app.ddb import batch
from queues_app.ddb.clock import now, to_iso
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.records import Shipment, ShipmentStatus, ready_sort_key, timed_sort_key

METHODS = ("ours", "article")
THROUGHPUT_MODES = ("backlog", "stream")
LEASE_SECONDS = 3600.0  # leases of the shipments in flight, and of the measured receives
LOADERS = 4  # threads writing the initial items (BatchWriteItem)
SMOKE = {"inflight": (0, 260), "receives": 3, "waiting": 5, "consumers": (1, 2), "shipments": 20, "warmup": 0}


def shipment_data(index: int) -> dict:
    """The same application data for both methods (about 300 bytes)."""
    return {
        "order": f"ORD-{index:07d}",
        "customer": f"C-{index % 997:05d}",
        "carrier": ("UPS", "DHL", "FedEx")[index % 3],
        "items": [{"sku": f"SKU-{(index * 7 + k) % 5000:05d}", "qty": 1 + (index + k) % 4} for k in range(3)],
        "address": {"street": f"{index % 400} Harbour Road", "city": "Halifax", "postcode": "B3H 1A1", "country": "CA"},
    }


def load(write, items: list, loaders: int = LOADERS) -> None:
    """Write `items` with `write(chunk)` from a few threads (BatchWriteItem, 25 at a time)."""
    if not items:
        return
    size = max(25, -(-len(items) // loaders))
    chunks = [items[i : i + size] for i in range(0, len(items), size)]
    with ThreadPoolExecutor(max_workers=loaders) as pool:
        list(pool.map(write, chunks))


# --- part 1: cost of one receive -----------------------------------------------------------


@dataclass
class ReceiveStats:
    method: str
    inflight: int
    receives: int
    requests: int
    capacity: float
    latencies: list[float]  # seconds, one per receive
    pages: int = 0  # article: Query pages read over all receives
    operations: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def metrics(self) -> dict:
        per = max(self.receives, 1)
        figures = {
            "requests_per_peek": round(self.requests / per, 3),
            "capacity_per_peek": round(self.capacity / per, 3),
            "latency_ms_mean": round(statistics.fmean(self.latencies) * 1000, 2) if self.latencies else 0.0,
            "queries_per_peek": round(self.operations.get("Query", {}).get("calls", 0) / per, 3),
        }
        if self.method == "article":
            figures["pages_per_peek"] = round(self.pages / per, 3)
        return figures


@dataclass
class Scenario:
    inflight: int
    waiting: int
    receives: int
    results: dict[str, ReceiveStats]


def our_items(inflight: int, waiting: int, base, received_at, lease_end) -> list[Shipment]:
    """N in flight (enqueued first, from `base` on, a millisecond apart; received at
    `received_at`, leased until `lease_end`), then W waiting."""
    shipments = []
    deadline, received = to_iso(lease_end), to_iso(received_at)
    for i in range(inflight + waiting):
        enqueued = to_iso(base + timedelta(milliseconds=i))
        common = {
            "data": shipment_data(i),
            "priority": 0,
            "created_at": enqueued,
            "enqueued_at": enqueued,
            "first_enqueued_at": enqueued,
        }
        if i < inflight:
            shipment_id = f"f{i:06d}"
            shipments.append(
                Shipment(
                    shipment_id=shipment_id,
                    status=ShipmentStatus.PROCESSING,
                    version=4,
                    updated_at=received,
                    visible_at=deadline,
                    receipt=uuid.uuid4().hex,
                    receive_count=1,
                    attempts=1,
                    first_attempt_at=received,
                    last_attempt_at=received,
                    invisible_sk=timed_sort_key(deadline, shipment_id),
                    **common,
                )
            )
        else:
            shipment_id = f"w{i - inflight:06d}"
            shipments.append(
                Shipment(
                    shipment_id=shipment_id,
                    status=ShipmentStatus.READY_TO_SHIP,
                    version=3,
                    updated_at=enqueued,
                    ready_sk=ready_sort_key(0, enqueued, shipment_id),
                    **common,
                )
            )
    return shipments


def article_items(inflight: int, waiting: int, base, received_at) -> list[dict]:
    """The same shipments, the article's way (in flight: selected, peeked at `received_at`)."""
    items = []
    peek_ms = int(received_at.timestamp() * 1000)
    for i in range(inflight + waiting):
        enqueued = to_iso(base + timedelta(milliseconds=i))
        if i < inflight:
            items.append(
                article_receive.queued_item(
                    f"f{i:06d}",
                    shipment_data(i),
                    created=enqueued,
                    enqueued=enqueued,
                    version=3,
                    peeked=article_receive.iso_from_ms(peek_ms),
                    peek_ms=peek_ms,
                )
            )
        else:
            items.append(
                article_receive.queued_item(
                    f"w{i - inflight:06d}",
                    shipment_data(i),
                    created=enqueued,
                    enqueued=enqueued,
                    version=2,
                )
            )
    return items


def measure(method: str, inflight: int, receives: int, receive_once) -> ReceiveStats:
    """`receives` calls of `receive_once() -> (shipment_id | None, pages)`, metered and timed."""
    latencies, received, pages = [], [], 0
    # A lone consumer: races lost by an earlier throughput run must not colour its order.
    harness.reset_contention()
    with harness.metered() as measured:
        for _ in range(receives):
            began = time.perf_counter()
            shipment_id, read = receive_once()
            latencies.append(time.perf_counter() - began)
            received.append(shipment_id)
            pages += read
    stats = ReceiveStats(
        method, inflight, receives, measured.requests, measured.capacity, latencies, pages, measured.operations
    )
    expected = [f"w{i:06d}" for i in range(receives)]
    if received != expected:
        wrong = [(i, got) for i, (got, want) in enumerate(zip(received, expected, strict=True)) if got != want]
        stats.problems.append(
            f"{method} with {inflight} in flight: {len(wrong)} receives did not return the next "
            f"waiting shipment, e.g. {wrong[:3]}"
        )
    return stats


def run_scenario(
    endpoint: str, inflight: int, *, receives: int = 50, waiting: int = 200, methods: tuple[str, ...] = METHODS
) -> Scenario:
    """Fresh tables with `inflight` in flight and `waiting` waiting, for each method;
    `receives` measured receives of each."""
    if receives > waiting:
        raise ValueError("--receives cannot exceed --waiting: every measured receive takes a waiting shipment")
    with harness.fresh_tables(endpoint, "receive", inflight, read_timeout=60.0) as db:
        article_table = f"{db.prefix}article-shipments"
        article_receive.create_table(db, article_table)
        try:
            moment = now()
            base = moment - timedelta(hours=1)  # enqueued about an hour ago, a millisecond apart
            received_at = moment - timedelta(minutes=1)  # those in flight: received a minute ago, for an hour
            queue = ShipmentQueue(db)
            load(
                lambda chunk: queue.create_many(chunk),
                our_items(inflight, waiting, base, received_at, received_at + timedelta(seconds=LEASE_SECONDS)),
            )
            load(
                lambda chunk: batch.put_items(db, article_table, chunk),
                article_items(inflight, waiting, base, received_at),
            )

            def ours_once():
                receipt = queue.receive(visibility_timeout=LEASE_SECONDS)
                return (receipt.shipment.shipment_id if receipt else None), 0

            article = article_receive.ArticleQueue(db, article_table, visibility_timeout=LEASE_SECONDS)

            def article_once():
                result = article.receive()
                return (result.shipment_id if result else None), article.last_pages

            receivers = {"ours": ours_once, "article": article_once}
            return Scenario(
                inflight,
                waiting,
                receives,
                {name: measure(name, inflight, receives, receivers[name]) for name in methods},
            )
        finally:
            article_receive.delete_table(db, article_table)


# --- part 2: enqueue-to-complete throughput (ours) ---------------------------------------


@dataclass
class ThroughputResult:
    mode: str  # "stream": enqueued while the consumers run; "backlog": all enqueued first
    consumers: int
    shipments: int
    completed: int
    seconds: float
    latencies: list[float]
    requests: int
    empty_receives: int
    lost_claims: int
    producer_seconds: float  # stream: when the producer had enqueued the last one
    completed_ids: list[str] = field(default_factory=list)  # in completion order, repeats included
    problems: list[str] = field(default_factory=list)

    def metrics(self) -> dict:
        per = max(self.completed, 1)

        def pct(p: float) -> float:
            value = harness.percentile(self.latencies, p)
            return round(value * 1000, 1) if value is not None else 0.0

        return {
            "completed_per_s": round(self.completed / self.seconds, 1) if self.seconds else 0.0,
            "latency_ms_mean": round(statistics.fmean(self.latencies) * 1000, 1) if self.latencies else 0.0,
            "latency_ms_p50": pct(0.5),
            "latency_ms_p95": pct(0.95),
            "requests_per_shipment": round(self.requests / per, 2),
            "empty_peeks": self.empty_receives,
            "lost_claims": self.lost_claims,
            "producer_s": round(self.producer_seconds, 2),
            "seconds": round(self.seconds, 2),
        }


def run_throughput(
    endpoint: str,
    consumers: int,
    *,
    shipments: int = 400,
    mode: str = "stream",
    producers: int = 1,
    idle_sleep: float = 0.01,
    visibility_timeout: float = 60.0,
    timeout: float = 300.0,
) -> ThroughputResult:
    """Fresh tables and `shipments` ready shipments (not timed), then:

    - "stream": `producers` threads enqueue them (ShipmentQueue.enqueue) while
      `consumers` threads loop receive -> complete; timing starts with the first enqueue;
    - "backlog": they are all enqueued first (not timed, not metered), then the
      consumers drain the queue; timing starts with the first receive.

    An empty receive waits `idle_sleep` seconds. Enqueue-to-complete latency runs from
    the enqueue call to the return of complete. Checks that every shipment was
    completed exactly once, and that the table agrees."""
    if mode not in THROUGHPUT_MODES:
        raise ValueError(f"mode must be one of {THROUGHPUT_MODES}")
    with harness.fresh_tables(endpoint, "tput", mode, consumers, read_timeout=60.0) as db:
        queue = ShipmentQueue(db)
        stamp = to_iso(now())
        ids = [f"s{i:06d}" for i in range(shipments)]
        load(
            lambda chunk: queue.create_many(chunk),
            [
                Shipment(
                    shipment_id=shipment_id,
                    data=shipment_data(i),
                    status=ShipmentStatus.READY_TO_SHIP,
                    created_at=stamp,
                    updated_at=stamp,
                )
                for i, shipment_id in enumerate(ids)
            ],
        )

        lock = threading.Lock()
        enqueued_at: dict[str, float] = {}
        done_at: dict[str, float] = {}
        completed: list[str] = []
        empty = [0]
        failures: list[str] = []
        finished = threading.Event()
        producer_done: list[float] = []

        def enqueue_all(chosen: list[str]) -> None:
            for shipment_id in chosen:
                enqueued_at[shipment_id] = time.perf_counter()
                queue.enqueue(shipment_id)

        if mode == "backlog":
            # a few threads at once; the queue order does not matter here
            with ThreadPoolExecutor(max_workers=LOADERS) as pool:
                list(pool.map(lambda k: enqueue_all(ids[k::LOADERS]), range(LOADERS)))
            producers = 0
        start_line = threading.Barrier(producers + consumers + 1)

        def producer(index: int) -> None:
            start_line.wait()
            try:
                enqueue_all(ids[index::producers])
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(f"producer: {exc!r}")
                finished.set()
            producer_done.append(time.perf_counter())

        def consumer() -> None:
            start_line.wait()
            try:
                while not finished.is_set():
                    receipt = queue.receive(visibility_timeout=visibility_timeout)
                    if receipt is None:
                        with lock:
                            empty[0] += 1
                        finished.wait(idle_sleep)
                        continue
                    shipment_id = receipt.shipment.shipment_id
                    queue.complete(shipment_id, receipt.receipt)
                    moment = time.perf_counter()
                    with lock:
                        completed.append(shipment_id)
                        done_at.setdefault(shipment_id, moment)
                        if len(completed) >= shipments:
                            finished.set()
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(f"consumer: {exc!r}")
                finished.set()

        threads = [threading.Thread(target=producer, args=(i,), name=f"producer-{i}") for i in range(producers)]
        threads += [threading.Thread(target=consumer, name=f"consumer-{i}") for i in range(consumers)]
        for thread in threads:
            thread.start()
        with harness.metered() as measured:
            start_line.wait()
            began = time.perf_counter()
            if not finished.wait(timeout):
                failures.append(f"not finished after {timeout:.0f}s ({len(completed)} of {shipments} completed)")
                finished.set()
            for thread in threads:
                thread.join()
        last = max(done_at.values(), default=began)
        result = ThroughputResult(
            mode=mode,
            consumers=consumers,
            shipments=shipments,
            completed=len(completed),
            seconds=last - began,
            latencies=[done_at[i] - enqueued_at[i] for i in done_at if i in enqueued_at],
            requests=measured.requests,
            empty_receives=empty[0],
            lost_claims=measured.errors("UpdateItem", "ConditionalCheckFailedException"),
            producer_seconds=(max(producer_done) - began) if producer_done else 0.0,
            completed_ids=list(completed),
            problems=list(failures),
        )
        twice = len(completed) - len(set(completed))
        if twice:
            result.problems.append(f"{twice} completions of shipments completed already")
        never = [i for i in ids if i not in done_at]
        if never:
            result.problems.append(f"{len(never)} shipments never completed, e.g. {never[:5]}")
        stored = queue.get_many(ids)  # after the metered block
        not_done = [s.shipment_id for s in stored if s.status != ShipmentStatus.COMPLETED]
        if not_done or len(stored) != len(ids):
            result.problems.append(
                f"table: {len(not_done)} shipments not completed, {len(ids) - len(stored)} missing, e.g. {not_done[:5]}"
            )
        counts = queue.counts()
        if counts.queued or counts.in_flight or counts.delayed or counts.dlq:
            result.problems.append(f"table: queue not empty afterwards: {counts}")
        return result


# --- the whole benchmark -----------------------------------------------------------------


@dataclass
class Results:
    scenarios: dict[int, Scenario]
    throughput: dict[tuple[str, int], ThroughputResult]  # (mode, consumers)

    @property
    def problems(self) -> list[str]:
        found = [p for s in self.scenarios.values() for r in s.results.values() for p in r.problems]
        found += [
            f"throughput ({mode}) with {c} consumers: {p}"
            for (mode, c), r in self.throughput.items()
            for p in r.problems
        ]
        return found


def run_benchmark(
    endpoint: str,
    *,
    inflight: tuple[int, ...] = (0, 1000, 10000),
    receives: int = 50,
    waiting: int = 200,
    consumers: tuple[int, ...] = (1, 4, 16),
    shipments: int = 400,
    modes: tuple[str, ...] = THROUGHPUT_MODES,
    producers: int = 1,
    idle_sleep: float = 0.01,
    methods: tuple[str, ...] = METHODS,
    warmup: int = 1,
    progress=None,
) -> Results:
    """Part 1 for every N in `inflight`, then part 2 for every mode and C in `consumers`.

    A warm-up round (thrown away) is a small scenario (300 in flight) and a small
    throughput run; it changes no count, only the latencies."""

    def warm_up_round(_round: int) -> None:
        run_scenario(endpoint, 300, receives=20, waiting=20, methods=methods)
        if consumers and modes:
            run_throughput(
                endpoint, 4, shipments=min(shipments, 100), mode=modes[0], producers=producers, idle_sleep=idle_sleep
            )

    harness.warm_up(warmup, warm_up_round)
    scenarios = {}
    for n in inflight:
        scenarios[n] = run_scenario(endpoint, n, receives=receives, waiting=waiting, methods=methods)
        if progress:
            progress(
                f"{n} in flight: "
                + "; ".join(
                    f"{name} {r.metrics()['requests_per_peek']:.2f} requests, {r.metrics()['capacity_per_peek']:.2f} "
                    f"CU, {r.metrics()['latency_ms_mean']:.1f} ms per receive"
                    for name, r in scenarios[n].results.items()
                )
            )
    throughput = {}
    for mode in modes:
        for c in consumers:
            throughput[mode, c] = run_throughput(
                endpoint, c, shipments=shipments, mode=mode, producers=producers, idle_sleep=idle_sleep
            )
            if progress:
                progress(throughput_line(throughput[mode, c]))
    return Results(scenarios, throughput)


def as_json(results: Results) -> dict:
    methods = [m for m in METHODS if any(m in s.results for s in results.scenarios.values())]
    return {
        m: {str(n): s.results[m].metrics() for n, s in results.scenarios.items() if m in s.results} for m in methods
    }


def throughput_line(r: ThroughputResult) -> str:
    m = r.metrics()
    return (
        f"{r.mode}, {r.consumers} consumer(s): {r.completed}/{r.shipments} completed in {m['seconds']:.2f}s, "
        f"{m['completed_per_s']:.1f}/s, enqueue-to-complete {m['latency_ms_mean']:.0f} ms mean "
        f"({m['latency_ms_p50']:.0f} p50, {m['latency_ms_p95']:.0f} p95), {m['requests_per_shipment']:.2f} "
        f"requests per shipment, {m['empty_peeks']} empty receives, {m['lost_claims']} lost claims"
        + (f"; CHECK FAILED: {'; '.join(r.problems)}" if r.problems else "")
    )


TITLES = {
    "ours": "ours: ShipmentQueue.receive (Query `invisible` up to now, Query `ready`, conditional UpdateItem)",
    "article": "article: Query the `queued` index 250 at a time past those in flight, conditional UpdateItem",
}


def report(results: Results, where: str, *, producers: int, idle_sleep: float) -> str:
    any_scenario = next(iter(results.scenarios.values()), None)
    lines = []
    if any_scenario:
        title = (
            f"Receive cost: {any_scenario.receives} measured receives per line, {any_scenario.waiting} waiting "
            f"behind those in flight; DynamoDB at {where}"
        )
        lines += [title, ""]
        for name in METHODS:
            rows = [(n, s.results[name]) for n, s in results.scenarios.items() if name in s.results]
            if not rows:
                continue
            header = (
                f"{'in flight':>9} {'requests/rcv':>13} {'capacity/rcv':>13} {'pages/rcv':>10} "
                f"{'ms/rcv':>8}  by operation (requests, CU per receive)"
            )
            lines += [TITLES[name], header]
            for n, stats in rows:
                m = stats.metrics()
                pages = f"{m['pages_per_peek']:.2f}" if "pages_per_peek" in m else "-"
                lines.append(
                    f"{n:>9} {m['requests_per_peek']:>13.2f} {m['capacity_per_peek']:>13.2f} "
                    f"{pages:>10} {m['latency_ms_mean']:>8.1f}  "
                    + harness.by_operation(stats.operations, stats.receives, capacity="")
                )
            lines.append("")
        ours = [
            s.results["ours"].metrics()["requests_per_peek"] for s in results.scenarios.values() if "ours" in s.results
        ]
        if ours:
            constant = len(set(ours)) == 1
            lines.append(
                f"ours: at most {max(ours):.2f} requests per receive, "
                + ("the same at every N" if constant else f"varying with N ({sorted(set(ours))})")
            )
        lines.append("")
    if results.throughput:
        shipments = next(iter(results.throughput.values())).shipments
        title = (
            f"Enqueue-to-complete throughput of ours, {shipments} shipments per run (backlog: all enqueued "
            f"before the consumers start; stream: {producers} producer thread(s) enqueue while they run); "
            f"an empty receive waits {idle_sleep * 1000:.0f} ms"
        )
        header = (
            f"{'mode':>7} {'consumers':>9} {'completed/s':>11} {'mean ms':>8} {'p50 ms':>7} {'p95 ms':>7} "
            f"{'requests/shipment':>17} {'empty rcvs':>11} {'lost claims':>11} {'enqueued by s':>13} check"
        )
        lines += [title, header]
        for (mode, c), r in results.throughput.items():
            m = r.metrics()
            enqueued_by = f"{m['producer_s']:.2f}" if mode == "stream" else "-"
            lines.append(
                f"{mode:>7} {c:>9} {m['completed_per_s']:>11.1f} {m['latency_ms_mean']:>8.0f} "
                f"{m['latency_ms_p50']:>7.0f} {m['latency_ms_p95']:>7.0f} "
                f"{m['requests_per_shipment']:>17.2f} {m['empty_peeks']:>11} {m['lost_claims']:>11} "
                f"{enqueued_by:>13} " + ("each completed once" if not r.problems else "FAILED")
            )
        lines.append("")
    lines += harness.checks(results.problems)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, "receive", warmup=1)
    parser.add_argument(
        "--inflight",
        type=harness.int_list,
        default="0,1000,10000",
        help="shipments in flight, comma-separated (default 0,1000,10000)",
    )
    parser.add_argument(
        "--receives",
        "--peeks",
        dest="receives",
        type=int,
        default=50,
        help="measured receives per method and N (default 50)",
    )
    parser.add_argument("--waiting", type=int, default=200, help="waiting shipments behind those in flight")
    parser.add_argument(
        "--consumers",
        type=harness.int_list,
        default="1,4,16",
        help="consumer threads for the throughput runs; '' skips them",
    )
    parser.add_argument("--shipments", type=int, default=400, help="shipments per throughput run (default 400)")
    parser.add_argument(
        "--modes",
        type=harness.names(*THROUGHPUT_MODES),
        default=",".join(THROUGHPUT_MODES),
        help="throughput modes: backlog (enqueue all, then drain), stream (enqueue while consuming)",
    )
    parser.add_argument("--producers", type=int, default=1, help="producer threads in stream mode (default 1)")
    parser.add_argument("--idle-ms", type=float, default=10.0, help="a consumer's wait after an empty receive")
    parser.add_argument(
        "--methods", type=harness.names(*METHODS), default=",".join(METHODS), help="default: ours,article"
    )
    args = harness.parse(parser, argv, smoke=SMOKE)
    if (
        any(n < 0 for n in args.inflight)
        or any(c < 1 for c in args.consumers)
        or args.receives < 1
        or args.shipments < 1
        or args.producers < 1
    ):
        parser.error(
            "--inflight takes zero or more, --consumers, --receives, --shipments and --producers positive numbers"
        )
    if args.receives > args.waiting:
        parser.error("--receives cannot exceed --waiting")
    idle_sleep = args.idle_ms / 1000
    return harness.execute(
        args,
        lambda endpoint: run_benchmark(
            endpoint,
            inflight=args.inflight,
            receives=args.receives,
            waiting=args.waiting,
            consumers=args.consumers,
            shipments=args.shipments,
            modes=args.modes,
            producers=args.producers,
            idle_sleep=idle_sleep,
            methods=args.methods,
            warmup=args.warmup,
            progress=harness.progress,
        ),
        report=lambda results, where: report(results, where, producers=args.producers, idle_sleep=idle_sleep),
        as_json=as_json,
        json_notes=lambda results: [f"throughput: {throughput_line(r)}" for r in results.throughput.values()],
    )


if __name__ == "__main__":
    sys.exit(main())
