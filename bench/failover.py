"""Failover of the matching dispatcher: what callers see when the matcher process that
holds the lease dies (`kill -9`), and how long until another holds it.

    .venv/bin/python -m bench.failover [--json] [--matchers 2] [--shards 1] [--rate 20] [--agents 40]
                                       [--handle-seconds 0.5] [--before 3] [--after 3]
                                       [--repeat 5] [--seed 7] [--endpoint URL] [--smoke]

What runs, on fresh tables under a prefix of their own for each run: `--matchers`
`manage.py run_matcher` processes, as `make serve` and the systemd unit start them (no
setting: loopback, a port the system picks, a lease of 3 s); this process is a web
worker (`dispatch.send_new_callers()`, as callcenter/wsgi.py has it) placing a caller
every 1/`--rate` s, each from a thread of a pool, through `CallCenter.create_call`
(Spanish, any gender). `--agents` agents (Spanish, one gender each) wait in the queue;
an assigned agent's call is ended after `--handle-seconds` and the agent queued again.

Each run: wait until a matcher holds the lease, place callers for `--before` s, send
SIGKILL to the holder's process, and go on placing callers; a thread reads the lease
item every 20 ms until another matcher holds it; callers are placed `--after` s more.
Per run:

- kill to first caller matched again: from the kill to the first answer of a caller
  given an agent (callers in flight to the dead holder count, once matched here);
- kill to new holder: from the kill to the new holder's acquisition (`acquired_at` in the
  lease item, taken by its clock before the request: one clock on this host);
- kill to the first caller matched by the new holder (the web worker reads the lease
  again once the old one ran out, or a second after it last saw nobody);
- callers placed from the kill to the new holder: matched by this process itself,
  through a holder, waiting, failed.

With `--shards S` (SWITCHBOARD_MATCHING_SHARDS=S): `--matchers` processes for each shard,
each holding or standing by for its shard's lease (`run_matcher --shard k`, as `serve`
starts them); the callers are all of one shard, whose holder is killed, and the other
shards' holders must keep their leases throughout.

Reported: each run, and the medians (with ranges) over `--repeat` runs. Checks: a caller
was matched after the kill, another matcher took the lease, callers went to it, no
caller failed, the other shards' leases did not move, and the stored data keeps its
invariants (`check_invariants`' checks).
"""

from __future__ import annotations

import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench import harness
from queues_app.agents.roster import Agents
from queues_app.calls.records import Call, CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.client import Dynamo
from queues_app.ddb.lease import LeaseInfo
from queues_app.figures import heartbeats
from queues_app.lines.records import MAIN as MAIN_LINE
from queues_app.routing import dispatch

PREFERENCES = {"language": "Spanish", "gender": "any"}
GENDERS = ("F", "M", "X")
HOLDER_TIMEOUT = 120.0  # a matcher process imports Django before it listens: slow on a busy machine


@dataclass
class FailoverParameters:
    matchers: int = 2
    shards: int = 1
    rate: float = 20.0
    agents: int = 40
    handle_seconds: float = 0.5
    before: float = 3.0
    after: float = 3.0
    repeat: int = 5
    seed: int = 7


SMOKE = dict(rate=5.0, agents=12, before=1.0, after=1.0, repeat=1)
NEW_HOLDER_TIMEOUT = 30.0  # seconds for the first caller through the new holder


@dataclass
class Placed:
    """One caller as the web worker saw it."""

    due: float
    answered: float
    status: str  # assigned, waiting, or failed
    via: str  # "holder" (matched by the matcher process) or "here" (by this process)


@dataclass
class RunResult:
    index: int
    old_holder: str = ""
    new_holder: str = ""
    kill_to_first_matched_s: float | None = None
    kill_to_new_holder_s: float | None = None
    kill_to_first_via_new_holder_s: float | None = None
    during: dict[str, int] = field(default_factory=dict)  # callers placed from the kill to the new holder
    callers: int = 0
    problems: list[str] = field(default_factory=list)


# --- the web worker ------------------------------------------------------------------


_route = threading.local()


def _noting_route(request):
    """`DispatchClient.request`, noting on the calling thread whether the holder answered."""

    def noted(client: dispatch.DispatchClient, call):
        outcome = request(client, call)
        _route.via = "here" if outcome is dispatch.HERE else "holder"
        return outcome

    return noted


class WebWorker:
    """Callers placed at a steady rate, calls ended after the handle time."""

    def __init__(self, router: CallCenter, params: FailoverParameters, rng: random.Random):
        self.router, self.params, self.rng = router, params, rng
        self.placed: list[Placed] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="caller")
        self.thread = threading.Thread(target=self._arrivals, name="arrivals", daemon=True)
        self.ends: list[threading.Timer] = []  # calls being handled, ended when their timer fires

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=30)
        self.pool.shutdown(wait=True)
        with self.lock:
            for timer in self.ends:
                timer.cancel()

    def _arrivals(self) -> None:
        due = time.time()
        while not self.stopping.is_set():
            self.pool.submit(self._place, due)
            due += 1.0 / self.params.rate
            self.stopping.wait(max(0.0, due - time.time()))

    def _place(self, due: float) -> None:
        _route.via = "here"
        try:
            call, _created = self.router.create_call(dict(PREFERENCES))
        except Exception as exc:  # noqa: BLE001 - counted as failed, reported
            harness.progress(f"a caller failed: {type(exc).__name__}: {exc}")
            self._note(Placed(due, time.time(), "failed", _route.via))
            return
        self._note(Placed(due, time.time(), call.status, _route.via))
        if call.status == CallStatus.ASSIGNED and call.agent_id:
            self._end_later(call.agent_id, call.call_id)

    def _note(self, placed: Placed) -> None:
        with self.lock:
            self.placed.append(placed)

    def wait_for_holder_answer(self, since: float, timeout: float) -> bool:
        """Until a caller placed here is answered through a matcher's lease after `since`."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                answered = [p for p in self.placed if p.via == "holder" and p.status == CallStatus.ASSIGNED]
            if any(p.answered > since for p in answered):
                return True
            time.sleep(0.1)
        return False

    def _end_later(self, agent_id: str, call_id: str) -> None:
        def end() -> None:
            if self.stopping.is_set():
                return
            try:
                outcome = self.router.release(agent_id, "queue", call_id=call_id)
            except Exception as exc:  # noqa: BLE001 - the agent stays attending; reported
                harness.progress(f"ending call {call_id} failed: {type(exc).__name__}: {exc}")
                return
            taken = outcome.call  # a waiting caller the agent took on coming back
            if taken is not None and taken.call_id != call_id and taken.agent_id == agent_id:
                self._end_later(agent_id, taken.call_id)

        timer = threading.Timer(self.params.handle_seconds * self.rng.uniform(0.5, 1.5), end)
        timer.daemon = True
        with self.lock:
            if self.stopping.is_set():
                return
            self.ends = [t for t in self.ends if t.is_alive()]
            self.ends.append(timer)
        timer.start()


# --- the matcher processes -------------------------------------------------------------


def callers_shard(shards: int) -> int:
    """The shard of the callers placed (one line, the main one, and one set of preferences:
    one shard)."""
    preferences = {name: None if value == "any" else value for name, value in PREFERENCES.items()}
    call = Call(call_id="-", status=CallStatus.WAITING, preferences=preferences, line=MAIN_LINE)
    return dispatch.shard_of(call, shards)


def start_matchers(count: int, db: Dynamo, shards: int = 1) -> list[subprocess.Popen]:
    """`count` matcher processes, or `count` for each shard (`--shard k`)."""
    from django.conf import settings

    env = {
        **os.environ,
        "DYNAMODB_ENDPOINT_URL": db.endpoint_url or "",
        "DYNAMODB_TABLE_PREFIX": db.prefix,
        "SECRET_KEY": settings.SECRET_KEY,  # the web worker's signatures must pass
        "LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
        "SWITCHBOARD_MATCHING_SHARDS": str(shards),
    }
    manage = [sys.executable, str(Path(harness.ROOT) / "manage.py"), "run_matcher"]
    pinned = [["--shard", str(k)] for k in range(shards)] if shards > 1 else [[]]
    return [
        subprocess.Popen(manage + shard, cwd=harness.ROOT, env=env, stdout=subprocess.DEVNULL, start_new_session=True)
        for shard in pinned
        for _ in range(count)
    ]


def stop_matchers(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_for_holder(
    db: Dynamo, *, other_than: str = "", timeout: float = HOLDER_TIMEOUT, shard: int = 0
) -> LeaseInfo | None:
    """A shard's lease once a live holder other than `other_than` holds it (None after `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        holder = dispatch.current_holder(db, shard)
        if holder and holder.address and holder.holder != other_than and holder.live(time.time()):
            return holder
        time.sleep(0.02)
    return None


def wait_for_matchers(db: Dynamo, count: int, timeout: float = HOLDER_TIMEOUT) -> bool:
    """True once `count` matcher processes beat (each beats once it listens): a matcher
    still importing Django would take the CPU from the measured seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sum(1 for w in heartbeats.workers(db) if w.kind == heartbeats.MATCHER and w.alive) >= count:
            return True
        time.sleep(0.1)
    return False


def holder_pid(holder: LeaseInfo) -> int:
    """The process named in a matcher's holder (`host:pid:tag`)."""
    return int(holder.holder.split(":")[-2])


# --- one run ------------------------------------------------------------------------------


def queue_agents(router: CallCenter, count: int, rng: random.Random) -> None:
    agents = Agents(router.db, router.catalog)
    built = [
        agents.build(f"Agent {i:03d}", {"language": ["Spanish"], "gender": [rng.choice(GENDERS)]}, agent_id=f"a{i:03d}")
        for i in range(count)
    ]
    agents.create_many(built)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda agent: router.make_available(agent.agent_id), built))


def run_once(endpoint: str, params: FailoverParameters, index: int) -> RunResult:
    from queues_app.monitoring import invariants

    result = RunResult(index)
    rng = random.Random(params.seed + index)
    shard = callers_shard(params.shards)
    with harness.fresh_tables(endpoint, "failover", index) as db:
        router = CallCenter(db)
        queue_agents(router, params.agents, rng)
        matchers = start_matchers(params.matchers, db, params.shards)
        worker = WebWorker(router, params, rng)
        try:
            first = wait_for_holder(db, shard=shard)
            if first is None or not wait_for_matchers(db, params.matchers * params.shards):
                result.problems.append(f"the matchers were not all up within {HOLDER_TIMEOUT:.0f} s")
                return result
            others = {k: wait_for_holder(db, shard=k) for k in range(params.shards) if k != shard}
            result.old_holder = first.holder
            worker.start()
            time.sleep(params.before)
            os.kill(holder_pid(first), signal.SIGKILL)
            killed = time.time()
            second = wait_for_holder(db, other_than=first.holder, timeout=60, shard=shard)
            if second is not None:
                # The web worker finds the new holder on its next try of the lease: on a
                # busy machine that can take longer than `after`, so wait for it (bounded).
                worker.wait_for_holder_answer(second.acquired_at or time.time(), timeout=NEW_HOLDER_TIMEOUT)
            time.sleep(params.after)
            worker.stop()
            result.problems += moved(db, others)
        finally:
            worker.stopping.set()
            stop_matchers(matchers)
        measure(result, worker.placed, killed, second)
        result.problems += [str(v) for v in invariants.find_violations(db, router.catalog, passes=3)]
    return result


def moved(db: Dynamo, before: dict[int, LeaseInfo | None]) -> list[str]:
    """The other shards whose lease changed hands (or generation) while one shard's holder died."""
    problems = []
    for shard, held in before.items():
        now = dispatch.current_holder(db, shard)
        if held is None or now is None or (now.holder, now.generation) != (held.holder, held.generation):
            problems.append(f"shard {shard}'s lease moved: {held} then {now}")
    return problems


def measure(result: RunResult, placed: list[Placed], killed: float, second: LeaseInfo | None) -> None:
    result.callers = len(placed)
    after = sorted((p for p in placed if p.answered > killed), key=lambda p: p.answered)
    matched = [p for p in after if p.status == CallStatus.ASSIGNED]
    if matched:
        result.kill_to_first_matched_s = round(matched[0].answered - killed, 3)
    else:
        result.problems.append("no caller was matched after the kill")
    if second is None:
        result.problems.append("no other matcher took the lease within 60 s")
        return
    result.new_holder = second.holder
    took = second.acquired_at or time.time()
    result.kill_to_new_holder_s = round(took - killed, 3)
    via_new = [p for p in matched if p.via == "holder" and p.answered > took]
    if via_new:
        result.kill_to_first_via_new_holder_s = round(via_new[0].answered - killed, 3)
    else:
        result.problems.append("no caller went to the new holder")
    during = [p for p in placed if killed <= p.due < took]
    result.during = {
        "placed": len(during),
        "matched_here": sum(1 for p in during if p.status == CallStatus.ASSIGNED and p.via == "here"),
        "matched_by_a_holder": sum(1 for p in during if p.status == CallStatus.ASSIGNED and p.via == "holder"),
        "waiting": sum(1 for p in during if p.status == CallStatus.WAITING),
        "failed": sum(1 for p in during if p.status == "failed"),
    }
    failed = sum(1 for p in placed if p.status == "failed")
    if failed:
        result.problems.append(f"{failed} callers failed")


# --- the benchmark --------------------------------------------------------------------------


@dataclass
class Failover:
    parameters: FailoverParameters
    runs: list[RunResult]
    seconds: float = 0.0

    FIGURES = ("kill_to_first_matched_s", "kill_to_new_holder_s", "kill_to_first_via_new_holder_s")

    @property
    def problems(self) -> list[str]:
        return [f"run {r.index + 1}: {p}" for r in self.runs for p in r.problems]

    def medians(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for name in self.FIGURES:
            values = [getattr(r, name) for r in self.runs if getattr(r, name) is not None]
            found[name] = (
                {"median": round(statistics.median(values), 3), "min": min(values), "max": max(values)}
                if values
                else None
            )
        return found

    def as_json(self) -> dict:
        return {
            "parameters": asdict(self.parameters),
            "runs": [asdict(r) for r in self.runs],
            "medians": self.medians(),
            "seconds": round(self.seconds, 1),
        }


def run_benchmark(endpoint: str, params: FailoverParameters) -> Failover:
    from django.conf import settings

    began = time.perf_counter()
    settings.SWITCHBOARD_MATCHING_SHARDS = params.shards  # this web worker knows the shards as the matchers do
    # This process is a web worker of the default shape; note how each caller was matched.
    dispatch.DispatchClient.request = _noting_route(dispatch.DispatchClient.request)  # type: ignore[method-assign]
    dispatch.send_new_callers()
    runs = []
    try:
        for index in range(params.repeat):
            runs.append(run_once(endpoint, params, index))
            r = runs[-1]
            harness.progress(
                f"run {index + 1}/{params.repeat}: first caller matched {r.kill_to_first_matched_s} s after the kill, "
                f"new holder after {r.kill_to_new_holder_s} s, callers to it after "
                f"{r.kill_to_first_via_new_holder_s} s; meanwhile {r.during}"
            )
    finally:
        dispatch.stop_sending()
    return Failover(params, runs, time.perf_counter() - began)


def report(result: Failover, where: str) -> str:
    p = result.parameters
    lines = [
        f"Matcher failover on {where}: {p.matchers} run_matcher processes"
        f"{f' for each of {p.shards} shards (the callers all of one)' if p.shards > 1 else ''}, "
        f"callers at {p.rate:g}/s from one "
        f"web worker, {p.agents} agents, handle time {p.handle_seconds:g} s; SIGKILL to the holder after "
        f"{p.before:g} s; {p.repeat} run(s)",
        "",
        f"{'run':>3} {'first matched s':>15} {'new holder s':>12} {'to new holder s':>15}  "
        "callers from the kill to the new holder",
    ]
    for r in result.runs:
        lines.append(
            f"{r.index + 1:>3} {r.kill_to_first_matched_s!s:>15} {r.kill_to_new_holder_s!s:>12} "
            f"{r.kill_to_first_via_new_holder_s!s:>15}  {r.during}"
        )
    lines.append("")
    for name, figure in result.medians().items():
        if figure:
            lines.append(f"{name}: median {figure['median']} s ({figure['min']}-{figure['max']})")
    lines += harness.checks(result.problems)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__ or "", "failover", seed=7, repeat=5, warmup=0)
    parser.add_argument("--matchers", type=int, default=FailoverParameters.matchers, help="run_matcher processes")
    parser.add_argument(
        "--shards", type=int, default=FailoverParameters.shards, help="SWITCHBOARD_MATCHING_SHARDS (1 to 64)"
    )
    parser.add_argument("--rate", type=float, default=FailoverParameters.rate, help="callers a second")
    parser.add_argument("--agents", type=int, default=FailoverParameters.agents)
    parser.add_argument("--handle-seconds", type=float, default=FailoverParameters.handle_seconds)
    parser.add_argument("--before", type=float, default=FailoverParameters.before, help="seconds before the kill")
    parser.add_argument("--after", type=float, default=FailoverParameters.after, help="seconds after the new holder")
    args = harness.parse(parser, argv, smoke=SMOKE)
    if args.matchers < 2 or args.rate <= 0 or args.agents < 1 or min(args.before, args.after) < 0:
        parser.error("--matchers takes 2 or more, --rate and --agents positive numbers")
    if not 1 <= args.shards <= 64:
        parser.error("--shards takes 1 to 64")
    params = harness.from_args(FailoverParameters, args)
    return harness.execute(
        args, lambda endpoint: run_benchmark(endpoint, params), report=report, as_json=Failover.as_json
    )


if __name__ == "__main__":
    sys.exit(main())
