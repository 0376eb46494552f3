"""Estimated-wait benchmark: how far `estimated_wait_seconds` is from the wait callers had.

    .venv/bin/python -m bench.estimate [--json] [--minutes 120] [--agents 6] [--calls-per-minute 5]
        [--handle-seconds 60] [--seed 7] [--endpoint URL] [--smoke]

A day's traffic recorded on fresh tables of DynamoDB Local, on a clock the benchmark
moves (no sleeping): callers arrive at random (Poisson, `--calls-per-minute`, one of
three languages or any), AGENTS agents who speak every language take them, each call
lasts an exponential time of mean `--handle-seconds`, then the agent is queued again and
takes the next caller they fit. The figures are flushed every simulated ten seconds, as
every serving process does. Each caller who has to wait is read as `GET /api/calls/<id>`
reads them right after arriving (`routing.standing.standing_of`), and their estimate is
compared with the wait they then had.

Reported: the callers who waited, those with an estimate (none while nobody like them
was answered in the last 15 minutes), and for callers who waited at least 30 s the
median absolute error as a share of the actual wait, with the 25th and 75th percentiles
and the median signed error (positive: the estimate was too long).
"""

from __future__ import annotations

import argparse
import heapq
import random
import statistics
import sys
from dataclasses import dataclass, field
from datetime import timedelta

from bench import harness

SMOKE = {"minutes": 20, "calls_per_minute": 4, "agents": 5}
LANGUAGES = ("English", "French", "Spanish", None)


class SimulatedClock:
    """The time the benchmark sets; each reading a microsecond after the last, so that
    what is written one after the other still sorts in order."""

    def __init__(self):
        from queues_app.ddb.clock import now

        self.moment = now()

    def __call__(self):
        self.moment += timedelta(microseconds=1)
        return self.moment


@dataclass
class Recorded:
    waited: int = 0
    estimated: dict[str, float] = field(default_factory=dict)  # call id -> estimate at arrival
    actual: dict[str, float] = field(default_factory=dict)  # call id -> wait until assigned
    problems: list[str] = field(default_factory=list)


def simulate(endpoint: str, args: argparse.Namespace) -> Recorded:
    from queues_app.agents.skills import SkillCatalog
    from queues_app.centre.call_center import CallCenter
    from queues_app.ddb.clock import from_iso
    from queues_app.figures import counters
    from queues_app.figures.service_level import ServiceLevelReader
    from queues_app.monitoring.sampler import MetricsCollector
    from queues_app.routing.standing import standing_of

    rng, clock, recorded = random.Random(args.seed), SimulatedClock(), Recorded()
    catalog = SkillCatalog.from_mapping({"language": [lang for lang in LANGUAGES if lang], "gender": ["F", "M", "X"]})
    with harness.fresh_tables(endpoint, "estimate") as db:
        router, reader = CallCenter(db, catalog, clock=clock), ServiceLevelReader(db, clock)
        collector = MetricsCollector(db, clock)
        start = clock.moment
        events: list[tuple[float, int, str, str]] = []  # (seconds from start, tie, kind, id)
        for n in range(args.agents):
            agent = router.agents.create(f"Agent {n}", {"language": list(LANGUAGES[:3]), "gender": ["F"]})
            router.make_available(agent.agent_id)
        moment, tie, flushed = 0.0, 0, 0.0
        while moment < args.minutes * 60:
            moment += rng.expovariate(args.calls_per_minute / 60)
            tie += 1
            heapq.heappush(events, (moment, tie, "arrival", ""))
        while events:
            at, _tie, kind, subject = heapq.heappop(events)
            clock.moment = start + timedelta(seconds=at)
            while flushed + 10 <= at:  # every process flushes its figures every 10 s
                flushed += 10
                counters.MetricsStore(db).flush()
                if flushed % 60 == 0:  # the collector's occupancy sample (every 15 s in `serve`)
                    collector.sample_occupancy()
            taken = None
            if kind == "arrival":
                call, _ = router.create_call({"language": rng.choice(LANGUAGES)})
                if call.agent_id:
                    taken = call
                else:
                    recorded.waited += 1
                    standing = standing_of(router.line, reader, call)
                    if standing and standing.estimated_wait_seconds is not None:
                        recorded.estimated[call.call_id] = standing.estimated_wait_seconds
            else:
                taken = router.release(subject, then="queue").call
            if taken is not None:
                wait = (from_iso(taken.assigned_at) - from_iso(taken.arrived_at)).total_seconds()
                if wait > 0:
                    recorded.actual[taken.call_id] = wait
                tie += 1
                heapq.heappush(events, (at + rng.expovariate(1 / args.handle_seconds), tie, "end", taken.agent_id))
        waiting, _more = router.line.count_waiting()
        if waiting:
            recorded.problems.append(f"{waiting} callers still wait at the end: every one should be taken")
    return recorded


def errors_of(recorded: Recorded, at_least: float = 30.0) -> dict:
    scored = [
        (recorded.estimated[i] - wait) / wait
        for i, wait in recorded.actual.items()
        if wait >= at_least and i in recorded.estimated
    ]
    shares = sorted(abs(e) for e in scored)
    return {
        "callers_who_waited": recorded.waited,
        "with_an_estimate": len(recorded.estimated),
        "scored": len(scored),
        "median_abs_error_share": round(statistics.median(shares), 3) if shares else None,
        "p25_abs_error_share": round(harness.percentile(shares, 0.25) or 0, 3) if shares else None,
        "p75_abs_error_share": round(harness.percentile(shares, 0.75) or 0, 3) if shares else None,
        "median_signed_error_share": round(statistics.median(scored), 3) if scored else None,
    }


def report(figures: dict, where: str) -> str:
    return "\n".join(
        [
            f"Estimated wait against the actual wait ({where}):",
            f"  callers who waited: {figures['callers_who_waited']}, with an estimate: {figures['with_an_estimate']}",
            f"  scored (waited at least 30 s): {figures['scored']}",
            f"  median absolute error: {figures['median_abs_error_share']} of the actual wait "
            f"(25th-75th percentile {figures['p25_abs_error_share']}-{figures['p75_abs_error_share']}); "
            f"median signed error {figures['median_signed_error_share']}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__ or "", "estimate", seed=7, warmup=0)
    whole, number = harness.positive(int), harness.positive(float)
    parser.add_argument("--minutes", type=whole, default=120, help="simulated minutes of arrivals (120)")
    parser.add_argument("--agents", type=whole, default=6, help="agents, each speaking every language (6)")
    parser.add_argument("--calls-per-minute", type=number, default=5.0, help="mean arrival rate (5)")
    parser.add_argument("--handle-seconds", type=number, default=60.0, help="mean handle time (60)")
    args = harness.parse(parser, argv, smoke=SMOKE)
    outcome: dict = {}

    def run(endpoint: str) -> dict:
        recorded = simulate(endpoint, args)
        outcome.update(errors_of(recorded), problems=recorded.problems)
        return outcome

    return harness.execute(
        args,
        run,
        report=lambda figures, where: report(figures, where),
        as_json=lambda figures: {
            **{k: v for k, v in figures.items() if k != "problems"},
            "parameters": {k: getattr(args, k) for k in ("minutes", "agents", "calls_per_minute", "handle_seconds")},
        },
        problems=lambda figures: figures["problems"],
    )


if __name__ == "__main__":
    sys.exit(main())
