"""Counting benchmark: what the service-level figures cost per call.

    .venv/bin/python -m bench.counting [--json] [--calls 200] [--per-flush 1,10,100] [--endpoint URL] [--smoke]

On fresh tables, through `Operations` (the code the API runs), a steady stream of calls:
each is answered at once by a queued agent and then released (`then` queue, so the agent
queues again); every fifth caller also brings one who waits for a combination nobody
fits and hangs up. The figures are written out every `--per-flush` calls (a process that
serves one call between two of its flushes is a quiet centre; 100 a busy one), and once
more at the end, so that every figure is written.

Reported per call, for each pace: DynamoDB requests and capacity units made by the
requests themselves (the request meter, as `bench.scale` counts them) and by the
writing of the figures in the background (`MetricsStore.flush`: the process meter less
the requests' own). The design and the figures: docs/scale.md, "Counting every call
once". Checks: the figures read back give exactly the calls answered, abandoned and
ended.

`--json` prints {"paces": {"<per-flush>": {"requests": {...}, "background": {...}}}, "parameters": {...}}.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from bench import harness

SMOKE = {"calls": 10, "per_flush": (1, 10)}


@dataclass
class Pace:
    per_flush: int
    calls: int = 0
    answered: int = 0
    abandoned: int = 0
    requests: dict = field(default_factory=dict)  # {"requests": n, "capacity": units} per call
    background: dict = field(default_factory=dict)


@dataclass
class CountingRun:
    paces: list[Pace] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _totals(snapshot: dict) -> tuple[int, float]:
    return sum(s["calls"] for s in snapshot.values()), sum(s["capacity"] for s in snapshot.values())


def one_pace(endpoint: str, calls: int, per_flush: int) -> tuple[Pace, list[str]]:
    from queues_app.agents.roster import Agents
    from queues_app.ddb import meter
    from queues_app.figures.counters import MetricsStore
    from queues_app.figures.service_level import ServiceLevelReader
    from queues_app.operations import Operations

    pace = Pace(per_flush)
    problems: list[str] = []
    with harness.fresh_tables(endpoint, "counting", per_flush) as db:
        ops = Operations("phone system", "api", db=db)
        agents = Agents(db)
        dims = dict(agents.catalog.dimensions)
        first = {name: [next(iter(values))] for name, values in dims.items()}
        # A combination no agent fits: the last value of a dimension with more than one.
        spread = next(name for name, values in dims.items() if len(values) > 1)
        nobody = {spread: list(dims[spread])[-1]}
        staff = [agents.create(f"Agent {n}", first) for n in range(4)]
        for agent in staff:
            ops.make_available(agent.agent_id)
        MetricsStore(db).flush()
        before = _totals(meter.process_meter.snapshot())
        own_requests, own_capacity = 0, 0.0
        for n in range(calls):
            with harness.metered() as seen:
                call, _ = ops.create_call({})
                if call.agent_id:
                    ops.release(call.agent_id, then="queue")
                    pace.answered += 1
                if n % 5 == 4:
                    waiting, _ = ops.create_call(nobody)
                    ops.abandon_call(waiting.call_id)
                    pace.abandoned += 1
            own_requests += seen.requests
            own_capacity += seen.capacity
            pace.calls += 1 + (n % 5 == 4)
            if (n + 1) % per_flush == 0:
                MetricsStore(db).flush()
        MetricsStore(db).flush()
        after = _totals(meter.process_meter.snapshot())
        all_requests, all_capacity = after[0] - before[0], after[1] - before[1]
        pace.requests = {
            "requests": round(own_requests / pace.calls, 2),
            "capacity": round(own_capacity / pace.calls, 2),
        }
        pace.background = {
            "requests": round((all_requests - own_requests) / pace.calls, 2),
            "capacity": round((all_capacity - own_capacity) / pace.calls, 2),
        }
        with harness.unmetered():
            today = ServiceLevelReader(db).read().today.overall
        if (today.answered, today.abandoned, today.handled) != (pace.answered, pace.abandoned, pace.answered):
            problems.append(
                f"per flush {per_flush}: the figures say {today.answered} answered, {today.abandoned} abandoned, "
                f"{today.handled} ended; the run made {pace.answered}, {pace.abandoned}, {pace.answered}"
            )
    return pace, problems


def run(endpoint: str, calls: int, paces: tuple[int, ...]) -> CountingRun:
    result = CountingRun()
    for per_flush in paces:
        harness.progress(f"{calls} calls, figures written every {per_flush}")
        pace, problems = one_pace(endpoint, calls, per_flush)
        result.paces.append(pace)
        result.problems += problems
    return result


def report(result: CountingRun, where: str) -> str:
    lines = [f"Counting the calls, per call, on {where}: requests / capacity units", ""]
    lines.append(f"{'calls per flush':>16} | {'calls':>6} | {'the requests':>18} | {'in the background':>18}")
    for pace in result.paces:
        own, back = pace.requests, pace.background
        lines.append(
            f"{pace.per_flush:>16} | {pace.calls:>6} | {own['requests']:>7} / {own['capacity']:>8} "
            f"| {back['requests']:>7} / {back['capacity']:>8}"
        )
    lines += harness.checks(result.problems)
    return "\n".join(lines)


def as_json(result: CountingRun, args: argparse.Namespace) -> dict:
    return {
        "paces": {
            str(p.per_flush): {"calls": p.calls, "requests": p.requests, "background": p.background}
            for p in result.paces
        },
        "parameters": {"calls": args.calls, "per_flush": list(args.per_flush)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__ or "", "counting", warmup=0)
    parser.add_argument("--calls", type=int, default=200, help="callers answered at once (default 200)")
    parser.add_argument(
        "--per-flush",
        type=harness.int_list,
        default=(1, 10, 100),
        help="calls between two writes of the figures (default 1,10,100)",
    )
    args = harness.parse(parser, argv, smoke=SMOKE)
    if args.calls < 1 or not args.per_flush or min(args.per_flush) < 1:
        parser.error("--calls and every --per-flush take a positive number")
    return harness.execute(
        args,
        lambda endpoint: run(endpoint, args.calls, args.per_flush),
        report=report,
        as_json=lambda r: as_json(r, args),
    )


if __name__ == "__main__":
    sys.exit(main())
