"""Matching benchmark: our Router against the article's algorithm, on DynamoDB Local.

    .venv/bin/python bench/matching.py [--json] [--agents 200] [--threads 1,4,16]
                                       [--seed N] [--endpoint URL] [--repeat 3] [--warmup 1]

For each algorithm and each K: fresh tables, the same seeded agents (gender F/M/X, one
to three languages), all queued before timing starts; then K threads drain the queues.
Each thread repeatedly picks a random (language, gender) among the combinations not
yet known to be empty and asks for an agent of exactly that combination; an empty
queue marks the combination drained; the run ends when all of them are.

Reported per algorithm and K, over the drain only:
- assignments per second (wall time of the drain);
- attempts per assignment: TransactWriteItems sent / assignments;
- DynamoDB requests and consumed capacity units per assignment (request meter);
- double assignments: agents handed to more than one call.
Each (algorithm, K) runs `--repeat` times (interleaved with the other algorithm) after
`--warmup` rounds that warm DynamoDB Local's JVM up; the medians are reported, and the
double assignments of all repeats added up. After each run the table is checked (every agent attending the call it was given,
every queue partition empty, every metadata depth 0); mismatches are reported and make
the script exit with status 1.

Without --endpoint the script starts an in-memory DynamoDB Local and stops it at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time
import uuid
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import boto3

from bench.article_matching import ArticleMatcher
from bench.common import dynamodb_endpoint, setup_django
from queues_app.agents import keys
from queues_app.ddb import meter, schema
from queues_app.agents.roster import Agents
from queues_app.ddb.client import Dynamo
from queues_app.agents.records import AgentStatus, Call, CallStatus, QueueOrder
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import unmarshal
from queues_app.agents.router import Router
from queues_app.agents.skills import SkillCatalog

SKILLS = {"language": ["English", "French", "Spanish"], "gender": ["F", "M", "X"]}
ALGORITHMS = ("ours", "article")
METRICS = (
    "assignments_per_s",
    "attempts_per_assignment",
    "requests_per_assignment",
    "capacity_per_assignment",
    "double_assignments",
)


def catalog() -> SkillCatalog:
    return SkillCatalog.from_mapping(SKILLS)


def make_agents(count: int, seed: int) -> list[tuple[str, str, dict[str, list[str]]]]:
    """(agent_id, name, skills): a gender of F/M/X and one to three languages each."""
    rng = random.Random(seed)
    agents = []
    for i in range(count):
        languages = rng.sample(SKILLS["language"], rng.randint(1, 3))
        gender = rng.choice(SKILLS["gender"])
        agents.append((f"a{i:04d}", f"Agent {i:04d}", {"language": languages, "gender": [gender]}))
    return agents


# --- matchers: one "assign an agent of exactly this combination" per algorithm ------------


class OursMatcher:
    """The product's matcher: `Router._match` on a new call with both preferences set
    (one strongly consistent Query, one TransactWriteItems per success, the call item
    written in the same transaction)."""

    def __init__(self, db: Dynamo, skill_catalog: SkillCatalog):
        self.router = Router(db, skill_catalog, default_order=QueueOrder.FIFO)

    def assign(self, combo: tuple[str, ...], call_id: str) -> str | None:
        preferences = dict(zip(self.router.catalog.names, combo, strict=True))
        call = Call(call_id=call_id, status=CallStatus.WAITING, preferences=preferences,
                    order=QueueOrder.FIFO, arrived_at=to_iso(now()))
        assigned = self.router._match(call, new_call=True)
        return assigned.agent_id if assigned else None


class ArticleBaseline:
    def __init__(self, db: Dynamo, skill_catalog: SkillCatalog):
        self.matcher = ArticleMatcher(db, skill_catalog)

    def assign(self, combo: tuple[str, ...], call_id: str) -> str | None:
        assignment = self.matcher.assign(combo, call_id)
        return assignment.agent_id if assignment else None


MATCHERS = {"ours": OursMatcher, "article": ArticleBaseline}


# --- one run -------------------------------------------------------------------------------


@dataclass
class RunResult:
    algorithm: str
    threads: int
    agents: int
    assignments: int
    seconds: float
    requests: int
    capacity: float
    transactions: int  # TransactWriteItems sent
    cancelled: int  # of which cancelled
    double_assignments: int
    gave_up: int  # "nothing assigned" answers while the queue still held agents
    operations: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def metrics(self) -> dict:
        per = max(self.assignments, 1)
        return {
            "assignments_per_s": round(self.assignments / self.seconds, 2) if self.seconds else 0.0,
            "attempts_per_assignment": round(self.transactions / per, 3),
            "requests_per_assignment": round(self.requests / per, 3),
            "capacity_per_assignment": round(self.capacity / per, 3),
            "double_assignments": self.double_assignments,
        }


class _Unmetered:
    """A plain boto3 client the request meter does not see, for the harness's own reads
    (confirming that a queue is empty, checking the table after a run)."""

    def __init__(self, endpoint: str):
        self.client = boto3.client(
            "dynamodb", endpoint_url=endpoint, region_name="us-east-1",
            aws_access_key_id="local", aws_secret_access_key="local",
        )

    def query_all(self, table: str, pk: str, **extra) -> list[dict]:
        items, start = [], None
        while True:
            params = {"TableName": table, "KeyConditionExpression": "pk = :pk",
                      "ExpressionAttributeValues": {":pk": {"S": pk}}, "ConsistentRead": True, **extra}
            if start:
                params["ExclusiveStartKey"] = start
            page = self.client.query(**params)
            items += [unmarshal(i) for i in page.get("Items", [])]
            start = page.get("LastEvaluatedKey")
            if not start:
                return items

    def queue_is_empty(self, table: str, combo: tuple[str, ...]) -> bool:
        page = self.client.query(
            TableName=table, KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": keys.queue_name(combo)}}, ConsistentRead=True, Limit=1,
        )
        return not page.get("Items")


def queue_all(db: Dynamo, skill_catalog: SkillCatalog, agent_specs: list, workers: int = 8) -> None:
    """Queue every agent with `Router.make_available`, a few at a time. Each agent gets
    a fixed queue time (an hour ago plus its index in milliseconds), so the queue order
    is the order of `agent_specs` in every run, whatever order the requests finish in."""
    base = now() - timedelta(hours=1)

    def queue(index: int) -> None:
        agent_id = agent_specs[index][0]
        router = Router(db, skill_catalog, default_order=QueueOrder.FIFO,
                        clock=lambda: base + timedelta(milliseconds=index))
        _agent, call = router.make_available(agent_id)
        if call is not None:
            raise RuntimeError(f"{agent_id} took call {call.call_id}, but no caller waits in a fresh table")

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(queue, range(len(agent_specs))))


def run_one(endpoint: str, algorithm: str, threads: int, agent_specs: list, seed: int) -> RunResult:
    """Fresh tables, queue every agent, drain with `threads` matchers, check, drop the tables."""
    skill_catalog = catalog()
    db = Dynamo(prefix=f"bench-{algorithm}-{threads}-{uuid.uuid4().hex[:8]}-", endpoint_url=endpoint,
                region="us-east-1", read_timeout=30.0)
    schema.create_tables(db)
    plain = _Unmetered(endpoint)
    table = db.table("callcenter")
    try:
        # Setup (not timed, not metered): the article's metadata items, the agents, all queued.
        ArticleMatcher(db, skill_catalog).initialize_metadata()
        agents = Agents(db, skill_catalog)
        agents.create_many([agents.build(name, skills, agent_id=agent_id) for agent_id, name, skills in agent_specs])
        queue_all(db, skill_catalog, agent_specs)

        matcher = MATCHERS[algorithm](db, skill_catalog)
        combos = skill_catalog.all_combinations()
        drained: set[tuple[str, ...]] = set()
        assigned: dict[str, list[str]] = defaultdict(list)
        lock = threading.Lock()
        gave_up = [0]
        errors: list[BaseException] = []
        start_line = threading.Barrier(threads + 1)

        def matcher_thread(index: int) -> None:
            # The same preference stream for both algorithms at a given K and thread.
            rng = random.Random(f"{seed}:{threads}:{index}")
            start_line.wait()
            try:
                while True:
                    with lock:
                        remaining = [c for c in combos if c not in drained]
                    if not remaining:
                        return
                    combo = rng.choice(remaining)
                    call_id = uuid.UUID(int=rng.getrandbits(128)).hex[:16]
                    agent_id = matcher.assign(combo, call_id)
                    if agent_id is not None:
                        with lock:
                            assigned[agent_id].append(call_id)
                    elif plain.queue_is_empty(table, combo):
                        with lock:
                            drained.add(combo)
                    else:
                        with lock:
                            gave_up[0] += 1
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                errors.append(exc)
                with lock:
                    drained.update(combos)  # stop the others

        workers = [threading.Thread(target=matcher_thread, args=(i,), name=f"matcher-{i}") for i in range(threads)]
        for worker in workers:
            worker.start()
        with meter.measure() as measured:
            start_line.wait()
            began = time.perf_counter()
            for worker in workers:
                worker.join()
            seconds = time.perf_counter() - began
        if errors:
            raise errors[0]

        snapshot = measured.snapshot()
        transactions = snapshot.get("TransactWriteItems", {})
        result = RunResult(
            algorithm=algorithm,
            threads=threads,
            agents=len(agent_specs),
            assignments=sum(len(calls) for calls in assigned.values()),
            seconds=seconds,
            requests=measured.calls,
            capacity=measured.capacity,
            transactions=transactions.get("calls", 0),
            cancelled=transactions.get("errors", {}).get("TransactionCanceledException", 0),
            double_assignments=sum(1 for calls in assigned.values() if len(calls) > 1),
            gave_up=gave_up[0],
            operations=snapshot,
        )
        result.problems = check_table(plain, table, skill_catalog, agent_specs, assigned)
        return result
    finally:
        schema.delete_tables(db)


def check_table(plain: _Unmetered, table: str, skill_catalog: SkillCatalog, agent_specs: list,
                assigned: dict[str, list[str]]) -> list[str]:
    """What the table says after a drain, compared with what the matchers reported."""
    problems = []
    stored = {a["agent_id"]: a for a in plain.query_all(table, keys.AGENTS_PK)}
    not_attending = [a for a, item in stored.items() if item.get("status") != AgentStatus.ATTENDING]
    if not_attending:
        problems.append(f"{len(not_attending)} agents not attending, e.g. {sorted(not_attending)[:5]}")
    never = [agent_id for agent_id, _n, _s in agent_specs if agent_id not in assigned]
    if never:
        problems.append(f"{len(never)} agents never assigned, e.g. {never[:5]}")
    wrong_call = [a for a, calls in assigned.items() if len(calls) == 1 and stored.get(a, {}).get("call_id") != calls[0]]
    if wrong_call:
        problems.append(f"{len(wrong_call)} agents hold another call than the one reported, e.g. {wrong_call[:5]}")
    for combo in skill_catalog.all_combinations():
        left = plain.query_all(table, keys.queue_name(combo))
        if left:
            problems.append(f"{keys.queue_name(combo)} still holds {len(left)} message items")
    for meta in plain.query_all(table, keys.QUEUES_PK):
        if int(meta.get("depth", 0)) != 0:
            problems.append(f"metadata {meta['sk']} has depth {meta['depth']}")
    return problems


# --- the whole benchmark -----------------------------------------------------------------


@dataclass
class Summary:
    """The repeats of one (algorithm, K): medians of the rates, all double assignments."""

    algorithm: str
    threads: int
    runs: list[RunResult]

    def metrics(self) -> dict:
        each = [r.metrics() for r in self.runs]
        summary = {name: round(statistics.median(m[name] for m in each), 3) for name in METRICS[:-1]}
        summary["double_assignments"] = sum(m["double_assignments"] for m in each)
        return summary

    @property
    def rates(self) -> list[float]:
        return [r.metrics()["assignments_per_s"] for r in self.runs]

    @property
    def problems(self) -> list[str]:
        return [p for r in self.runs for p in r.problems]


Results = dict[str, dict[int, Summary]]


def run_benchmark(endpoint: str, *, agents: int = 200, threads: tuple[int, ...] = (1, 4, 16), seed: int = 7,
                  algorithms: tuple[str, ...] = ALGORITHMS, repeat: int = 3, warmup: int = 1,
                  progress=None) -> Results:
    """Every (algorithm, K) run `repeat` times, each on fresh tables, with the same agents.

    DynamoDB Local runs in a JVM whose first requests are several times slower than
    later ones (class loading, JIT), so `warmup` rounds of every algorithm at K=4 run
    first and are thrown away. Repeats interleave the algorithms, so that a slow phase
    of the machine does not fall on one of them only.
    """
    agent_specs = make_agents(agents, seed)
    for round_ in range(warmup):
        for name in algorithms:
            result = run_one(endpoint, name, 4, agent_specs, seed + 1 + round_)
            if progress:
                progress(result, "warm-up")
    runs: dict[tuple[str, int], list[RunResult]] = defaultdict(list)
    for round_ in range(repeat):
        for k in threads:
            for name in algorithms:
                result = run_one(endpoint, name, k, agent_specs, seed)
                runs[name, k].append(result)
                if progress:
                    progress(result, f"run {round_ + 1}/{repeat}")
    return {name: {k: Summary(name, k, runs[name, k]) for k in threads} for name in algorithms}


def as_json(results: Results) -> dict:
    return {name: {str(k): s.metrics() for k, s in by_k.items()} for name, by_k in results.items()}


def ratios(results: Results) -> tuple[int, float, float] | None:
    """(K, ours/article assignments per second, ours/article capacity per assignment) at
    the largest K both algorithms ran."""
    common = set(results.get("ours", {})) & set(results.get("article", {}))
    if not common:
        return None
    k = max(common)
    ours, article = results["ours"][k].metrics(), results["article"][k].metrics()
    speed = ours["assignments_per_s"] / article["assignments_per_s"] if article["assignments_per_s"] else float("inf")
    capacity = (ours["capacity_per_assignment"] / article["capacity_per_assignment"]
                if article["capacity_per_assignment"] else float("inf"))
    return k, speed, capacity


TITLES = {"ours": "ours (Router._match: Query + TransactWriteItems conditioned on the agent)",
          "article": "article (TransactGetItems snapshot + Query + TransactWriteItems conditioned on versions)"}


def report(results: Results, *, endpoint: str, agents: int, seed: int, repeat: int) -> str:
    title = (f"Matching benchmark: {agents} agents, seed {seed}, {repeat} run(s) per line "
             f"(medians; double assignments summed), DynamoDB at {endpoint}")
    lines = [title, ""]
    header = (f"{'K':>3} {'assign/s':>9} {'(min-max)':>13} {'attempts/a':>10} {'requests/a':>10} "
              f"{'capacity/a':>10} {'double':>6} {'cancelled/a':>11}")
    for name, by_k in results.items():
        lines += [TITLES[name], header]
        for k, summary in by_k.items():
            m = summary.metrics()
            cancelled = statistics.median(r.cancelled / max(r.assignments, 1) for r in summary.runs)
            spread = f"({min(summary.rates):.0f}-{max(summary.rates):.0f})"
            lines.append(
                f"{k:>3} {m['assignments_per_s']:>9.1f} {spread:>13} {m['attempts_per_assignment']:>10.2f} "
                f"{m['requests_per_assignment']:>10.2f} {m['capacity_per_assignment']:>10.2f} "
                f"{m['double_assignments']:>6} {cancelled:>11.2f}"
            )
        lines.append("")
    lines.append("Requests (capacity units) per assignment, by operation, median run:")
    for name, by_k in results.items():
        for k, summary in by_k.items():
            middle = sorted(summary.runs, key=lambda r: r.metrics()["assignments_per_s"])[len(summary.runs) // 2]
            per = max(middle.assignments, 1)
            ops = ", ".join(f"{op} {s['calls'] / per:.2f} ({s['capacity'] / per:.2f} CU)"
                            for op, s in sorted(middle.operations.items()))
            lines.append(f"  {name:>7} K={k:<2}: {ops}")
            gave_up = sum(r.gave_up for r in summary.runs)
            if gave_up:
                lines.append(f"    {gave_up} times the matcher found nobody although the queue was not empty")
            for problem in summary.problems:
                lines.append(f"    TABLE CHECK FAILED: {problem}")
    found = ratios(results)
    if found:
        k, speed, capacity = found
        lines += ["", (f"At K={k}: assignments per second, ours / article = {speed:.2f}x; "
                       f"capacity units per assignment, ours / article = {capacity:.2f}")]
    problems = [p for by_k in results.values() for s in by_k.values() for p in s.problems]
    lines.append("Table checks after every run: " + ("all passed" if not problems else f"{len(problems)} FAILED"))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print only one JSON object (progress goes to stderr)")
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--threads", default="1,4,16", help="comma-separated K values (default 1,4,16)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="runs per algorithm and K; medians are reported")
    parser.add_argument("--warmup", type=int, default=1, help="warm-up rounds before measuring (default 1)")
    parser.add_argument("--endpoint", help="a running DynamoDB (Local); default: start an in-memory one")
    parser.add_argument("--algorithms", default=",".join(ALGORITHMS), help="default: ours,article")
    args = parser.parse_args(argv)
    try:
        threads = tuple(int(k) for k in args.threads.split(",") if k.strip())
    except ValueError:
        parser.error("--threads takes comma-separated integers, e.g. 1,4,16")
    algorithms = tuple(a.strip() for a in args.algorithms.split(",") if a.strip())
    if not threads or min(threads) < 1 or args.agents < 1 or args.repeat < 1 or args.warmup < 0:
        parser.error("--threads, --agents and --repeat need positive numbers, --warmup zero or more")
    if not algorithms or set(algorithms) - set(ALGORITHMS):
        parser.error("--algorithms takes ours, article or both")

    setup_django()

    def progress(result: RunResult, label: str) -> None:
        m = result.metrics()
        print(f"  {label:>9} {result.algorithm:>7} K={result.threads:<2} {result.assignments} assignments in "
              f"{result.seconds:.2f}s ({m['assignments_per_s']:.1f}/s, {m['attempts_per_assignment']:.2f} "
              "attempts each)", file=sys.stderr, flush=True)

    with dynamodb_endpoint(args.endpoint) as endpoint:
            results = run_benchmark(endpoint, agents=args.agents, threads=threads, seed=args.seed,
                                    algorithms=algorithms, repeat=args.repeat, warmup=args.warmup, progress=progress)

    problems = [f"{s.algorithm} K={s.threads}: {p}" for by_k in results.values() for s in by_k.values()
                for p in s.problems]
    if args.json:
        print(json.dumps(as_json(results)))
        for problem in problems:
            print(f"TABLE CHECK FAILED: {problem}", file=sys.stderr)
    else:
        print(report(results, endpoint=endpoint if args.endpoint else "in-memory DynamoDB Local",
                     agents=args.agents, seed=args.seed, repeat=args.repeat))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
