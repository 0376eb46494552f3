"""Matching benchmark: our matcher against the article's algorithm, on DynamoDB Local.

    .venv/bin/python -m bench.matching [--json] [--agents 200] [--threads 1,4,16] [--processes [--matchers 1]]
                                       [--algorithms ours,article] [--seed 7] [--repeat 3]
                                       [--warmup 1] [--answer-timeout S] [--steps] [--profiles]
                                       [--endpoint URL] [--smoke]

For each algorithm and each K: fresh tables, the same seeded agents (gender F/M/X, one
to three languages), all queued before timing starts; then K matchers drain the queues.
Each matcher repeatedly picks a random (language, gender) among the combinations not
yet known to be empty and asks for an agent of exactly that combination; an empty
queue marks the combination drained; the run ends when all of them are.

Reported per algorithm and K, over the drain only:
- assignments per second (wall time of the drain);
- attempts per assignment: TransactWriteItems sent / assignments;
- DynamoDB requests and consumed capacity units per assignment (request meter);
- double assignments: agents handed to more than one call.
Each (algorithm, K) runs `--repeat` times (interleaved with the other algorithm) after
`--warmup` rounds that warm DynamoDB Local's JVM up; the medians are reported, and the
double assignments of all repeats added up. After each run the table is checked
(every agent attending the call it was given, every queue partition empty, every
metadata depth 0); mismatches are reported and make the command exit with status 1.

The K matchers are threads of one process (for `ours`, `Matcher.match` in that
process: what the matcher process's threads do); with `--processes`, K processes
("spawn", one thread, client and Django setup each, started together behind a barrier,
the same seeded preference streams), and more figures: FIFO inversions (for each
assignment, how many agents of its combination queued earlier were still unassigned
when it committed: mean and maximum), the time from asking the matcher to the answer
(p50, p95) and how many callers a process matched itself because no matcher answered
(`here`). With processes, `ours` is the project's default shape: the K processes are web
workers, which send their new callers to a matcher process (`run_matcher`'s dispatcher
with its defaults, started with the run and holding its lease before the start line),
and the CPU the matcher processes used an assignment (`cpu ms/a`); `--matchers N` runs N
of them, each holding one shard's lease (SWITCHBOARD_MATCHING_SHARDS=N: the callers of a
set of preferences are one shard's).
`--algorithms` also takes the other designs measured for matching across processes:
`direct` (each process matches its own callers) and `spread`. The command line, DynamoDB Local,
fresh tables, warm-up, metering and output are `bench.harness`'s.
"""

from __future__ import annotations

import multiprocessing
import os
import random
import statistics
import sys
import threading
import time
import uuid
import zlib
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

from bench import harness
from bench.article_matching import ArticleMatcher
from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.agents.skills import SkillCatalog
from queues_app.calls.records import Call, CallStatus, QueueOrder
from queues_app.centre import keys
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import from_iso, now, to_iso
from queues_app.lines.profiles import ProfileStore
from queues_app.management.commands import run_matcher
from queues_app.routing import dispatch
from queues_app.routing.matching import Matcher
from queues_app.routing.queues import queue_heads

SKILLS = {"language": ["English", "French", "Spanish"], "gender": ["F", "M", "X"]}
ALGORITHMS = ("ours", "article")
METRICS = (
    "assignments_per_s",
    "attempts_per_assignment",
    "requests_per_assignment",
    "capacity_per_assignment",
    "double_assignments",
)
SMOKE = {"agents": 8, "threads": (1, 2), "repeat": 1, "warmup": 0}


def catalog() -> SkillCatalog:
    return SkillCatalog.from_mapping(SKILLS)


# With --steps (set in the environment, so that the processes started inherit it): every
# agent has a level of 2 to 5 in each of their languages, and every caller of the product's
# matchers carries a routing step that all of them meet, so that each match takes the
# path of a step (its filter on levels) at the same drain as without.
STEPS = os.environ.get("BENCH_MATCHING_STEPS") == "1"
CALLER_STEPS = [{"min_level": {"language": 2}, "seconds": 3600}]
# With --profiles (likewise): every agent serves lines by a named routing profile that
# admits the callers of the product's matchers (on `support`), so that each match reads
# the profiles and filters the queues' messages by them at the same drain as without.
PROFILES = os.environ.get("BENCH_MATCHING_PROFILES") == "1"
PROFILE = {"profile_id": "blended", "name": "Blended", "lines": {"support": {}, "sales": {"priority": 2}}}


def make_agents(count: int, seed: int) -> list[tuple[str, str, dict]]:
    """(agent_id, name, skills): a gender of F/M/X and one to three languages each (with
    levels under --steps)."""
    rng, level_rng = random.Random(seed), random.Random(seed + 1)  # the same agents with levels or without
    agents = []
    for i in range(count):
        languages: list[str] | dict[str, int] = rng.sample(SKILLS["language"], rng.randint(1, 3))
        gender = rng.choice(SKILLS["gender"])
        if STEPS:
            languages = {language: level_rng.randint(2, 5) for language in languages}
        agents.append((f"a{i:04d}", f"Agent {i:04d}", {"language": languages, "gender": [gender]}))
    return agents


# --- matchers: one "assign an agent of exactly this combination" per algorithm ------------


class DirectMatcher:
    """The product's matcher with no dispatcher: `CallCenter(...).matcher.match` on a new call
    with both preferences set, in the caller's own process (one strongly consistent
    Query, one TransactWriteItems per success, the call item written in the same
    transaction; claims and reads shared by the threads of a process)."""

    def __init__(self, db: Dynamo, skill_catalog: SkillCatalog):
        self.router = CallCenter(db, skill_catalog, order=QueueOrder.FIFO)

    def assign(self, combo: tuple[str, ...], call_id: str) -> str | None:
        return self.assign_stamped(combo, call_id)[0]

    def assign_stamped(self, combo: tuple[str, ...], call_id: str) -> tuple[str | None, float | None]:
        """(agent_id, the assignment's own time stamp, epoch seconds) or (None, None)."""
        preferences: dict[str, str | None] = dict(zip(self.router.catalog.names, combo, strict=True))
        call = Call(
            call_id=call_id,
            status=CallStatus.WAITING,
            preferences=preferences,
            order=QueueOrder.FIFO,
            arrived_at=to_iso(now()),
            steps=CALLER_STEPS if STEPS else [],
            line="support" if PROFILES else None,
        )
        assigned = self.router.matcher.match(call, new_call=True)
        if not assigned:
            return None, None
        stamp = from_iso(assigned.assigned_at)
        return assigned.agent_id, stamp.timestamp() if stamp else None

    def close(self) -> None:
        """Stop whatever the matcher runs in the background."""


class OursMatcher(DirectMatcher):
    """The product's default shape, in process mode: this process is a web worker, which
    sends its new callers to the matcher process (`run_matcher`, which the benchmark
    starts: `holder_process`) as callcenter/wsgi.py has it, and matches by itself only
    when no matcher answers. With threads (one process), the K threads are what the
    matcher process runs: `Matcher.match` in one process, which is `direct`."""

    def __init__(self, db: Dynamo, skill_catalog: SkillCatalog, *, web_worker: bool = True):
        super().__init__(db, skill_catalog)
        if web_worker:
            dispatch.send_new_callers()

    def close(self) -> None:
        dispatch.stop_sending()


class SpreadMatcher(DirectMatcher):
    """Candidate design (a): each caller's first try among the first `SPREAD` candidates,
    by a hash of its call id, so that matchers of different processes start apart."""

    SPREAD = 4

    def __init__(self, db: Dynamo, skill_catalog: SkillCatalog):
        super().__init__(db, skill_catalog)
        # Every part of the call centre holds the one matcher it built: this one tries differently.
        self.router.matcher.__class__ = FirstTrySpread


class FirstTrySpread(Matcher):
    """The product's matcher, but a caller's first try starts at one of the first
    `SpreadMatcher.SPREAD` candidates, by a hash of the call id."""

    def try_order(self, search, count: int) -> list[int]:
        order = super().try_order(search, count)
        if search.tried or search.spread_out:
            return order
        start = zlib.crc32(search.call.call_id.encode()) % min(SpreadMatcher.SPREAD, count)
        return order[start:] + order[:start]


class ArticleBaseline:
    def __init__(self, db: Dynamo, skill_catalog: SkillCatalog):
        self.matcher = ArticleMatcher(db, skill_catalog)

    def assign(self, combo: tuple[str, ...], call_id: str) -> str | None:
        assignment = self.matcher.assign(combo, call_id)
        return assignment.agent_id if assignment else None

    def assign_stamped(self, combo: tuple[str, ...], call_id: str) -> tuple[str | None, float | None]:
        return self.assign(combo, call_id), None  # the article records no assignment time

    def close(self) -> None:
        pass


MATCHERS: dict[str, type[DirectMatcher] | type[ArticleBaseline]] = {
    "ours": OursMatcher,
    "article": ArticleBaseline,
    "direct": DirectMatcher,
    "spread": SpreadMatcher,
}


def build_matcher(algorithm: str, db: Dynamo, skill_catalog: SkillCatalog, *, web_worker: bool):
    """The algorithm's matcher; `ours` sends its callers to the matcher process only as a
    web worker (process mode)."""
    if algorithm == "ours":
        return OursMatcher(db, skill_catalog, web_worker=web_worker)
    return MATCHERS[algorithm](db, skill_catalog)


# The other designs measured for matching across processes (docs/benchmarks.md); not in
# the default run.
CANDIDATES = ("direct", "spread")


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


def roster_items(db: Dynamo) -> list[dict]:
    """Every agent item, from each roster partition."""
    return [item for pk in keys.agent_partitions() for item in queue_items(db, pk)]


def queue_items(db: Dynamo, pk: str) -> list[dict]:
    """Every item of one partition of the callcenter table, strongly consistent."""
    return list(db.partition_items(db.table("callcenter"), pk, ConsistentRead=True))


def queue_is_empty(db: Dynamo, combo: tuple[str, ...]) -> bool:
    """The harness's own read (not metered): does the queue of `combo` hold nobody?"""
    with harness.unmetered():
        (head,) = queue_heads(db, db.table("callcenter"), [combo], 1)
    return not head


def queue_all(db: Dynamo, skill_catalog: SkillCatalog, agent_specs: list, workers: int = 8) -> None:
    """Queue every agent with `CallCenter.make_available`, a few at a time. Each agent gets
    a fixed queue time (an hour ago plus its index in milliseconds), so the queue order
    is the order of `agent_specs` in every run, whatever order the requests finish in."""
    base = now() - timedelta(hours=1)

    def queue(index: int) -> None:
        agent_id = agent_specs[index][0]
        router = CallCenter(
            db, skill_catalog, order=QueueOrder.FIFO, clock=lambda: base + timedelta(milliseconds=index)
        )
        _agent, call = router.make_available(agent_id)
        if call is not None:
            raise RuntimeError(f"{agent_id} took call {call.call_id}, but no caller waits in a fresh table")

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(queue, range(len(agent_specs))))


@contextmanager
def queued_tables(endpoint: str, algorithm: str, k: int, agent_specs: list, *labels: object) -> Iterator[Dynamo]:
    """Fresh tables with the article's metadata items and every agent queued (not timed, not metered)."""
    skill_catalog = catalog()
    with harness.fresh_tables(endpoint, "matching", algorithm, k, *labels) as db:
        ArticleMatcher(db, skill_catalog).initialize_metadata()
        agents = Agents(db, skill_catalog)
        profile = None
        if PROFILES:
            profile = ProfileStore(db).put(PROFILE, known={"support", "sales"}).profile_id
        agents.create_many(
            [agents.build(name, skills, agent_id=agent_id, profile=profile) for agent_id, name, skills in agent_specs]
        )
        queue_all(db, skill_catalog, agent_specs)
        yield db


def run_one(endpoint: str, algorithm: str, threads: int, agent_specs: list, seed: int) -> RunResult:
    """Fresh tables, queue every agent, drain with `threads` matchers, check."""
    skill_catalog = catalog()
    with queued_tables(endpoint, algorithm, threads, agent_specs) as db:
        matcher = build_matcher(algorithm, db, skill_catalog, web_worker=False)
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
                    elif queue_is_empty(db, combo):
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
        with harness.metered() as measured:
            start_line.wait()
            began = time.perf_counter()
            for worker in workers:
                worker.join()
            seconds = time.perf_counter() - began
        matcher.close()
        if errors:
            raise errors[0]

        result = RunResult(
            algorithm=algorithm,
            threads=threads,
            agents=len(agent_specs),
            assignments=sum(len(calls) for calls in assigned.values()),
            seconds=seconds,
            requests=measured.requests,
            capacity=measured.capacity,
            transactions=measured.calls("TransactWriteItems"),
            cancelled=measured.errors("TransactWriteItems", "TransactionCanceledException"),
            double_assignments=sum(1 for calls in assigned.values() if len(calls) > 1),
            gave_up=gave_up[0],
            operations=measured.operations,
        )
        result.problems = check_table(db, skill_catalog, agent_specs, assigned)
        return result


def check_table(
    db: Dynamo, skill_catalog: SkillCatalog, agent_specs: list, assigned: dict[str, list[str]]
) -> list[str]:
    """What the table says after a drain, compared with what the matchers reported."""
    problems = []
    stored = {a["agent_id"]: a for a in roster_items(db)}
    not_attending = [a for a, item in stored.items() if item.get("status") != AgentStatus.ATTENDING]
    if not_attending:
        problems.append(f"{len(not_attending)} agents not attending, e.g. {sorted(not_attending)[:5]}")
    never = [agent_id for agent_id, _n, _s in agent_specs if agent_id not in assigned]
    if never:
        problems.append(f"{len(never)} agents never assigned, e.g. {never[:5]}")
    wrong_call = [
        a for a, calls in assigned.items() if len(calls) == 1 and stored.get(a, {}).get("call_id") != calls[0]
    ]
    if wrong_call:
        problems.append(f"{len(wrong_call)} agents hold another call than the one reported, e.g. {wrong_call[:5]}")
    for combo in skill_catalog.all_combinations():
        # The queue's own partition too: a message there would be an earlier version's.
        left = [item for pk in (keys.queue_name(combo), *keys.queue_partitions(combo)) for item in queue_items(db, pk)]
        if left:
            problems.append(f"{keys.queue_name(combo)} still holds {len(left)} message items")
    problems += [
        f"metadata {info.name} has depth {info.depth}" for info in CallCenter(db, skill_catalog).queues() if info.depth
    ]
    return problems


# --- process mode: K matchers as K processes ------------------------------------------------

PROCESS_METRICS = (
    *METRICS,
    "fifo_inversions_mean",
    "fifo_inversions_max",
    "assign_p50_ms",
    "assign_p95_ms",
    "matched_here",
    "matcher_cpu_ms_per_assignment",
)
# A child imports Django and boto3 before the start line: slow on a busy machine.
STARTUP_TIMEOUT = 300.0
DRAIN_TIMEOUT = 900.0


@dataclass(frozen=True)
class ProcessJob:
    """What one matcher process needs: the tables (endpoint, prefix), its algorithm and seed."""

    endpoint: str
    prefix: str
    algorithm: str
    processes: int
    index: int
    seed: int


@dataclass(frozen=True)
class Assignment:
    """One assignment as its matcher saw it. Times are epoch seconds (`time.time()`), one
    clock for every process of the host."""

    agent_id: str
    call_id: str
    combo: tuple[str, ...]
    requested_at: float  # when the matcher was asked
    answered_at: float  # when it had the answer
    committed_at: float  # the assignment's own time stamp (taken as its transaction is sent), else answered_at


@dataclass
class ProcessOutcome:
    """What one matcher process sends back."""

    index: int
    assignments: list[Assignment] = field(default_factory=list)
    gave_up: int = 0
    matched_here: int = 0  # callers a web worker matched itself (no matcher answered)
    finished_at: float = 0.0
    requests: int = 0
    capacity: float = 0.0
    operations: dict = field(default_factory=dict)
    cpu_seconds: float = 0.0  # a matcher process's own, from the start line to the stop
    error: str | None = None


def process_matcher(job: ProcessJob, start_line, finish_line, drained, results) -> None:
    """One matcher process: its own Django setup, client and matcher, one thread. Drains
    like a thread of `run_one`; `drained` (a shared byte per combination) stands for the
    threads' shared set."""
    outcome = ProcessOutcome(job.index)
    try:
        harness.setup_django()
        db = Dynamo(prefix=job.prefix, endpoint_url=job.endpoint, region="us-east-1", read_timeout=30.0)
        assert db.client is not None  # build the client before the start line
        harness.reset_contention()
        skill_catalog = catalog()
        matcher = build_matcher(job.algorithm, db, skill_catalog, web_worker=True)
        combos = skill_catalog.all_combinations()
        rng = random.Random(f"{job.seed}:{job.processes}:{job.index}")  # the thread mode's streams
        with harness.metered() as measured:
            start_line.wait()
            while True:
                remaining = [c for i, c in enumerate(combos) if not drained[i]]
                if not remaining:
                    break
                combo = rng.choice(remaining)
                call_id = uuid.UUID(int=rng.getrandbits(128)).hex[:16]
                requested = time.time()
                agent_id, stamp = matcher.assign_stamped(combo, call_id)
                if agent_id is not None:
                    answered = time.time()
                    outcome.assignments.append(
                        Assignment(agent_id, call_id, combo, requested, answered, stamp or answered)
                    )
                elif queue_is_empty(db, combo):
                    drained[combos.index(combo)] = 1
                else:
                    outcome.gave_up += 1
            outcome.finished_at = time.time()
        client = dispatch.client_for(db)
        outcome.matched_here = client.here if client else 0
        finish_line.wait(timeout=DRAIN_TIMEOUT)
        matcher.close()
        outcome.requests, outcome.capacity, outcome.operations = (
            measured.requests,
            measured.capacity,
            measured.operations,
        )
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        outcome.error = f"{type(exc).__name__}: {exc}"
        for index in range(len(drained)):
            drained[index] = 1  # stop the others
        start_line.abort()
        finish_line.abort()
    results.put(outcome)


def holder_process(job: ProcessJob, start_line, stop, results) -> None:
    """A matcher process of the default shape (`run_matcher`): the command's dispatcher,
    with its defaults, on this run's tables; with `--matchers N`, the one of shard
    -index - 1 (SWITCHBOARD_MATCHING_SHARDS=N). It takes its lease before the start line
    and meters what it does, and the CPU it uses, from the start line until `stop`."""
    outcome = ProcessOutcome(job.index)
    try:
        harness.setup_django()
        db = Dynamo(prefix=job.prefix, endpoint_url=job.endpoint, region="us-east-1", read_timeout=30.0)
        harness.reset_contention()
        shards = [-job.index - 1] if dispatch.configured_shards() > 1 else None
        dispatcher = run_matcher.matching_dispatcher(CallCenter(db, catalog(), order=QueueOrder.FIFO), shards=shards)
        dispatcher.start()
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not dispatcher.holding and time.monotonic() < deadline:
            time.sleep(0.02)
        try:
            with harness.metered() as measured:
                start_line.wait()
                cpu = time.process_time()
                stop.wait(DRAIN_TIMEOUT)
                outcome.cpu_seconds = time.process_time() - cpu
        finally:
            dispatcher.stop()
        outcome.requests, outcome.capacity, outcome.operations = (
            measured.requests,
            measured.capacity,
            measured.operations,
        )
    except BaseException as exc:  # noqa: BLE001 - reported by the parent
        outcome.error = f"matcher process: {type(exc).__name__}: {exc}"
        start_line.abort()
    results.put(outcome)


def add_operations(total: dict, more: dict) -> None:
    """Add one process's per-operation meter figures into `total`."""
    for name, stats in more.items():
        into = total.setdefault(name, {"calls": 0, "capacity": 0.0, "errors": {}})
        into["calls"] += stats.get("calls", 0)
        into["capacity"] += stats.get("capacity", 0.0)
        for code, count in stats.get("errors", {}).items():
            into["errors"][code] = into["errors"].get(code, 0) + count


def fifo_inversions(assignments: list[Assignment], queues: dict[tuple[str, ...], list[tuple[str, str]]]) -> list[int]:
    """For each assignment, how many agents of its combination queued earlier were still
    unassigned when it committed. `queues`: each combination's (queue token, agent_id),
    every agent who fits it."""
    committed: dict[str, float] = {}
    for a in assignments:
        committed[a.agent_id] = min(committed.get(a.agent_id, a.committed_at), a.committed_at)
    counts = []
    for a in assignments:
        queue = queues[a.combo]
        mine = next(token for token, agent_id in queue if agent_id == a.agent_id)
        counts.append(
            sum(
                1
                for token, agent_id in queue
                if token < mine and committed.get(agent_id, float("inf")) > a.committed_at
            )
        )
    return counts


@dataclass
class ProcessRunResult(RunResult):
    """A run of K matcher processes, with the order and latency figures."""

    inversions: list[int] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    matched_here: int = 0
    matcher_cpu_seconds: float = 0.0  # the matcher processes' (ours), from the start line to the stop

    def metrics(self) -> dict:
        p50, p95 = harness.percentile(self.latencies_ms, 0.5), harness.percentile(self.latencies_ms, 0.95)
        return {
            **super().metrics(),
            "fifo_inversions_mean": round(statistics.fmean(self.inversions), 3) if self.inversions else 0.0,
            "fifo_inversions_max": max(self.inversions, default=0),
            "assign_p50_ms": round(p50 or 0.0, 1),
            "assign_p95_ms": round(p95 or 0.0, 1),
            "matched_here": self.matched_here,
            "matcher_cpu_ms_per_assignment": round(self.matcher_cpu_seconds * 1000 / max(self.assignments, 1), 2),
        }


def run_processes(
    endpoint: str, algorithm: str, processes: int, agent_specs: list, seed: int, matchers: int = 1
) -> ProcessRunResult:
    """Fresh tables, queue every agent, drain with `processes` matcher processes started
    together ("spawn": each imports Django and builds its own client), check. Ours sends
    the callers to `matchers` matcher processes, a shard each."""
    os.environ["SWITCHBOARD_MATCHING_SHARDS"] = str(matchers)  # read by the processes started
    skill_catalog = catalog()
    context = multiprocessing.get_context("spawn")
    with queued_tables(endpoint, algorithm, processes, agent_specs, "p") as db:
        tokens = {item["agent_id"]: item["queue_token"] for item in roster_items(db)}
        queues: dict[tuple[str, ...], list[tuple[str, str]]] = defaultdict(list)
        for agent_id, _name, skills in agent_specs:
            for combo in skill_catalog.combinations(skills):
                queues[combo].append((tokens[agent_id], agent_id))
        combos = skill_catalog.all_combinations()
        holders = matchers if algorithm == "ours" else 0  # the default shape: matcher processes
        start_line = context.Barrier(processes + holders + 1)
        finish_line = context.Barrier(processes)
        drained = context.RawArray("b", len(combos))
        results = context.Queue()
        stop = context.Event()

        def job(index: int) -> ProcessJob:
            return ProcessJob(endpoint, db.prefix, algorithm, processes, index, seed)

        children = [
            context.Process(
                target=process_matcher,
                args=(job(i), start_line, finish_line, drained, results),
                name=f"matcher-{i}",
            )
            for i in range(processes)
        ]
        children += [
            context.Process(
                target=holder_process, args=(job(-1 - k), start_line, stop, results), name=f"run_matcher-{k}"
            )
            for k in range(holders)
        ]
        for child in children:
            child.start()
        began = 0.0
        try:
            start_line.wait(timeout=STARTUP_TIMEOUT)
            began = time.time()
        except threading.BrokenBarrierError:
            pass  # a child failed before the start: its outcome says why
        outcomes: list[ProcessOutcome] = []
        try:
            for _child in range(processes):
                outcomes.append(results.get(timeout=DRAIN_TIMEOUT))
                if outcomes[-1].error:
                    break
            stop.set()  # the web workers are done: the matcher processes may stop
            for _holder in range(holders if not outcomes[-1].error else 0):
                outcomes.append(results.get(timeout=DRAIN_TIMEOUT))
        finally:
            stop.set()
            for child in children:
                child.join(timeout=30)
                if child.is_alive():
                    child.terminate()
        failed = [o.error for o in outcomes if o.error]
        if failed or not began:
            raise RuntimeError(f"a matcher process failed: {failed[0] if failed else 'did not start'}")

        assignments = [a for o in outcomes for a in o.assignments]
        assigned: dict[str, list[str]] = defaultdict(list)
        for a in assignments:
            assigned[a.agent_id].append(a.call_id)
        operations: dict = {}
        for o in outcomes:
            add_operations(operations, o.operations)
        result = ProcessRunResult(
            algorithm=algorithm,
            threads=processes,
            agents=len(agent_specs),
            assignments=len(assignments),
            seconds=max(o.finished_at for o in outcomes if o.index >= 0) - began,
            requests=sum(o.requests for o in outcomes),
            capacity=sum(o.capacity for o in outcomes),
            transactions=operations.get("TransactWriteItems", {}).get("calls", 0),
            cancelled=operations.get("TransactWriteItems", {}).get("errors", {}).get("TransactionCanceledException", 0),
            double_assignments=sum(1 for calls in assigned.values() if len(calls) > 1),
            gave_up=sum(o.gave_up for o in outcomes),
            operations=operations,
            inversions=fifo_inversions(assignments, queues),
            latencies_ms=[(a.answered_at - a.requested_at) * 1000 for a in assignments],
            matched_here=sum(o.matched_here for o in outcomes),
            matcher_cpu_seconds=sum(o.cpu_seconds for o in outcomes if o.index < 0),
        )
        result.problems = check_table(db, skill_catalog, agent_specs, assigned)
        return result


# --- the whole benchmark -----------------------------------------------------------------


@dataclass
class Summary:
    """The repeats of one (algorithm, K): medians of the rates, all double assignments."""

    algorithm: str
    threads: int
    runs: list[RunResult]

    def metrics(self) -> dict:
        each = [r.metrics() for r in self.runs]
        medianed = [key for key in each[0] if key not in ("double_assignments", "fifo_inversions_max")]
        summary = harness.medians(each, medianed)
        summary["double_assignments"] = sum(m["double_assignments"] for m in each)
        if "fifo_inversions_max" in each[0]:
            summary["fifo_inversions_max"] = max(m["fifo_inversions_max"] for m in each)
        return {key: summary[key] for key in each[0]}

    @property
    def rates(self) -> list[float]:
        return [r.metrics()["assignments_per_s"] for r in self.runs]

    @property
    def problems(self) -> list[str]:
        return [p for r in self.runs for p in r.problems]


class Results(dict[str, dict[int, Summary]]):
    """{algorithm: {K: Summary}}."""

    @property
    def problems(self) -> list[str]:
        return [
            f"{s.algorithm} K={s.threads}: {p}" for by_k in self.values() for s in by_k.values() for p in s.problems
        ]


def progress(result: RunResult, label: str) -> None:
    m = result.metrics()
    harness.progress(
        f"{label:>9} {result.algorithm:>7} K={result.threads:<2} {result.assignments} assignments "
        f"in {result.seconds:.2f}s ({m['assignments_per_s']:.1f}/s, "
        f"{m['attempts_per_assignment']:.2f} attempts each)"
    )


def run_benchmark(
    endpoint: str,
    *,
    agents: int = 200,
    threads: tuple[int, ...] = (1, 4, 16),
    seed: int = 7,
    algorithms: tuple[str, ...] = ALGORITHMS,
    repeat: int = 3,
    warmup: int = 1,
    processes: bool = False,
    matchers: int = 1,
    progress=None,
) -> Results:
    """Every (algorithm, K) run `repeat` times, each on fresh tables, with the same agents;
    with `processes`, the K matchers are K processes (`run_processes`), else K threads.

    DynamoDB Local runs in a JVM whose first requests are several times slower than
    later ones (class loading, JIT), so `warmup` rounds of every algorithm at K=4 run
    first and are thrown away. Repeats interleave the algorithms, so that a slow phase
    of the machine does not fall on one of them only.
    """
    agent_specs = make_agents(agents, seed)

    def warm_up_round(round_: int) -> None:
        for name in algorithms:
            result = run_one(endpoint, name, 4, agent_specs, seed + 1 + round_)
            if progress:
                progress(result, "warm-up")

    harness.warm_up(warmup, warm_up_round)
    runs: dict[tuple[str, int], list[RunResult]] = defaultdict(list)
    for round_ in range(repeat):
        for k in threads:
            for name in algorithms:
                result: RunResult = (
                    run_processes(endpoint, name, k, agent_specs, seed, matchers)
                    if processes
                    else run_one(endpoint, name, k, agent_specs, seed)
                )
                runs[name, k].append(result)
                if progress:
                    progress(result, f"run {round_ + 1}/{repeat}")
    return Results({name: {k: Summary(name, k, runs[name, k]) for k in threads} for name in algorithms})


def as_json(results: Results, *, processes: bool = False) -> dict:
    """{algorithm: {K: metrics}}; in process mode, that under the key "processes"."""
    figures = {name: {str(k): s.metrics() for k, s in by_k.items()} for name, by_k in results.items()}
    return {"processes": figures} if processes else figures


def ratios(results: Results) -> tuple[int, float, float] | None:
    """(K, ours/article assignments per second, ours/article capacity per assignment) at
    the largest K both algorithms ran."""
    common = set(results.get("ours", {})) & set(results.get("article", {}))
    if not common:
        return None
    k = max(common)
    ours, article = results["ours"][k].metrics(), results["article"][k].metrics()
    speed = ours["assignments_per_s"] / article["assignments_per_s"] if article["assignments_per_s"] else float("inf")
    capacity = (
        ours["capacity_per_assignment"] / article["capacity_per_assignment"]
        if article["capacity_per_assignment"]
        else float("inf")
    )
    return k, speed, capacity


TITLES = {
    "ours": (
        "ours (Matcher.match: Query + TransactWriteItems conditioned on the agent; with processes, the default "
        "shape: web workers send their callers to the matcher process, run_matcher)"
    ),
    "article": "article (TransactGetItems snapshot + Query + TransactWriteItems conditioned on versions)",
    "direct": "direct (each matcher queries and commits itself; claims shared by the threads of a process)",
    "spread": f"spread (direct, first try among the first {SpreadMatcher.SPREAD} by a hash of the call id)",
}


def report(results: Results, where: str, *, agents: int, seed: int, repeat: int, processes: bool = False) -> str:
    title = (
        f"Matching benchmark: {agents} agents, seed {seed}, {repeat} run(s) per line "
        f"(medians; double assignments summed), K matcher {'processes' if processes else 'threads'}, "
        f"DynamoDB at {where}"
    )
    lines = [title, ""]
    header = (
        f"{'K':>3} {'assign/s':>9} {'(min-max)':>13} {'attempts/a':>10} {'requests/a':>10} "
        f"{'capacity/a':>10} {'double':>6} {'cancelled/a':>11}"
    )
    if processes:
        header += f" {'fifo mean':>9} {'fifo max':>8} {'p50 ms':>7} {'p95 ms':>7} {'here':>5} {'cpu ms/a':>8}"
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
            if processes:
                lines[-1] += (
                    f" {m['fifo_inversions_mean']:>9.2f} {m['fifo_inversions_max']:>8} "
                    f"{m['assign_p50_ms']:>7.1f} {m['assign_p95_ms']:>7.1f} {m['matched_here']:>5.0f}"
                    f" {m['matcher_cpu_ms_per_assignment']:>8.2f}"
                )
        lines.append("")
    lines.append("Requests (capacity units) per assignment, by operation, median run:")
    for name, by_k in results.items():
        for k, summary in by_k.items():
            middle = sorted(summary.runs, key=lambda r: r.metrics()["assignments_per_s"])[len(summary.runs) // 2]
            lines.append(
                f"  {name:>7} K={k:<2}: " + harness.by_operation(middle.operations, middle.assignments, capacity=" CU")
            )
            gave_up = sum(r.gave_up for r in summary.runs)
            if gave_up:
                lines.append(f"    {gave_up} times the matcher found nobody although the queue was not empty")
            for problem in summary.problems:
                lines.append(f"    TABLE CHECK FAILED: {problem}")
    found = ratios(results)
    if found:
        k, speed, capacity = found
        lines += [
            "",
            (
                f"At K={k}: assignments per second, ours / article = {speed:.2f}x; "
                f"capacity units per assignment, ours / article = {capacity:.2f}"
            ),
        ]
    lines += harness.checks(results.problems, "Table checks after every run")[:1]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__, "matching", seed=7, repeat=3, warmup=1)
    parser.add_argument("--agents", type=int, default=200, help="agents queued before each run (default 200)")
    parser.add_argument(
        "--threads",
        type=harness.int_list,
        default="1,4,16",
        help="K, the matchers (threads, or processes with --processes): comma-separated values (default 1,4,16)",
    )
    parser.add_argument(
        "--processes",
        action="store_true",
        help="run the K matchers as K processes (one thread, client and Django setup each) instead of threads",
    )
    parser.add_argument(
        "--matchers",
        type=int,
        default=1,
        help="with --processes: ours' matcher processes, each holding a shard's lease (SWITCHBOARD_MATCHING_SHARDS; "
        "default 1, as deployed)",
    )
    parser.add_argument(
        "--algorithms",
        type=harness.names(*ALGORITHMS, *CANDIDATES),
        default=",".join(ALGORITHMS),
        help="default: ours,article; the designs measured for processes: " + ", ".join(CANDIDATES),
    )
    parser.add_argument(
        "--answer-timeout",
        type=float,
        default=None,
        help="ANSWER_TIMEOUT_SECONDS for the run: each assignment is an offer (its item written in the same "
        "transaction); default: off, as deployed",
    )
    parser.add_argument(
        "--steps",
        action="store_true",
        help="agents with levels 2-5 and callers of the product's matchers with a routing step all of them meet "
        "(the cost of a step's filter)",
    )
    parser.add_argument(
        "--profiles",
        action="store_true",
        help="agents serving lines by a named routing profile that admits every caller (the cost of its filter)",
    )
    args = harness.parse(parser, argv, smoke=SMOKE)
    if args.steps:
        global STEPS
        STEPS = True
        os.environ["BENCH_MATCHING_STEPS"] = "1"  # the processes started read it
    if args.profiles:
        global PROFILES
        PROFILES = True
        os.environ["BENCH_MATCHING_PROFILES"] = "1"
    if not args.threads or min(args.threads) < 1 or args.agents < 1:
        parser.error("--threads and --agents need positive numbers")
    if not 1 <= args.matchers <= 64 or (args.matchers > 1 and not args.processes):
        parser.error("--matchers takes 1 to 64, with --processes")
    if args.answer_timeout is not None:
        if not 1 <= args.answer_timeout <= 600:
            parser.error("--answer-timeout takes 1 to 600 seconds, as ANSWER_TIMEOUT_SECONDS")
        os.environ["ANSWER_TIMEOUT_SECONDS"] = str(args.answer_timeout)  # this process and the ones it starts
    return harness.execute(
        args,
        lambda endpoint: run_benchmark(
            endpoint,
            agents=args.agents,
            threads=args.threads,
            seed=args.seed,
            algorithms=args.algorithms,
            repeat=args.repeat,
            warmup=args.warmup,
            processes=args.processes,
            matchers=args.matchers,
            progress=progress,
        ),
        report=lambda results, where: report(
            results, where, agents=args.agents, seed=args.seed, repeat=args.repeat, processes=args.processes
        ),
        as_json=lambda results: as_json(results, processes=args.processes),
    )


if __name__ == "__main__":
    sys.exit(main())
