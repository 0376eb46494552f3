"""A call's DynamoDB requests, step by step, and a refresh of the overview's panels.

    .venv/bin/python -m bench.call_cost [--json] [--calls 60] [--rate 5] [--agents 400] [--seed 7]
                                        [--endpoint URL] [--smoke]

On fresh tables, `--agents` agents as `bench.load` seeds them (one to three languages, one
gender), every one queued; then `--calls` callers with `bench.load`'s preferences, arriving
`--rate` a second (real time: what a process remembers lasts a second), each through the
audited operations as the API makes them: the call (matched at once: agents are
plentiful), its agent released to wrap-up, then made available again. Twice: matched as
a web worker matches (reading the queues for every new caller), and as the matcher
process does (`matching.remember_heads`). Then one round of the overview's panels, all
read at the same moment as a live stream's round reads them (the panel cache on).

Reported: each pass's requests a call by step (`create`, `release`, `available`) and by
operation, and the Queries of the agents' queues a new caller; the panels' requests by
panel. Checks: every caller was matched, and `check_invariants` finds nothing.

`--json` prints {"passes": {"reads each time" | "remembers", {"per_call", "by_step",
"by_operation", "queue_queries_per_call"}}, "panels": {name: requests}, "parameters"}.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

from bench import harness

SMOKE = {"calls": 6, "rate": 50.0, "agents": 20}
STEPS = ("create", "release", "available")


@dataclass
class Results:
    passes: dict[str, dict] = field(default_factory=dict)
    panels: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


class Tally:
    """The requests of the step being run, by step and operation (a botocore hook)."""

    def __init__(self) -> None:
        self.step = ""
        self.steps: Counter[str] = Counter()
        self.operations: Counter[str] = Counter()
        self.queue_queries = 0

    def __call__(self, params, model, **kwargs) -> None:
        from queues_app.centre import keys

        if not self.step:
            return
        self.steps[self.step] += 1
        self.operations[model.name] += 1
        pk = (params.get("ExpressionAttributeValues") or {}).get(":pk", {}).get("S", "")
        if model.name == "Query" and pk.startswith(keys.QUEUE_PREFIX):
            self.queue_queries += 1


def preferences(catalog, rng: random.Random) -> dict:
    """`bench.load`'s callers: any language a quarter of the time, any gender 60%."""
    wanted = {}
    for name, values in catalog.dimensions:
        any_share = 0.25 if name.startswith("language") else 0.6
        wanted[name] = "any" if rng.random() < any_share else rng.choice(list(values))
    return wanted


def one_pass(endpoint: str, args: argparse.Namespace, remember: bool, results: Results) -> None:
    from bench.load import seed_agents
    from queues_app.monitoring.invariants import check_once
    from queues_app.operations import Operations
    from queues_app.routing import matching

    name = "remembers" if remember else "reads each time"
    with harness.fresh_tables(endpoint, "call-cost", int(remember)) as db:
        rng = random.Random(args.seed)
        seed_agents(db, args.agents, rng)
        operations = Operations("phone system", "api", db=db)
        catalog = operations.call_center.catalog
        tally = Tally()
        db.client.meta.events.register("provide-client-params.dynamodb", tally)
        matching.remember_heads(matching.SHARED_READ_AGE if remember else 0)
        unmatched = 0
        try:
            for _ in range(args.calls):
                began = time.monotonic()
                tally.step = "create"
                call, _ = operations.create_call(preferences(catalog, rng))
                if not call.agent_id:
                    unmatched += 1
                    continue
                tally.step = "release"
                agent = operations.release(call.agent_id, "wrap_up", call_id=call.call_id).agent
                tally.step = "available"
                operations.make_available(call.agent_id, expected_version=agent.version)
                tally.step = ""
                time.sleep(max(0.0, 1 / args.rate - (time.monotonic() - began)))
        finally:
            tally.step = ""
            matching.remember_heads(0)
            db.client.meta.events.unregister("provide-client-params.dynamodb", tally)
        if unmatched:
            results.problems.append(f"{name}: {unmatched} of {args.calls} callers waited with agents queued")
        results.problems += [f"{name}: {v}" for v in check_once(db, catalog).violations]
        per = args.calls
        results.passes[name] = {
            "per_call": round(sum(tally.steps.values()) / per, 2),
            "by_step": {step: round(tally.steps[step] / per, 2) for step in STEPS},
            "by_operation": {op: round(n / per, 2) for op, n in sorted(tally.operations.items())},
            "queue_queries_per_call": round(tally.queue_queries / per, 2),
        }
        if remember:
            panel_round(db, results)


def panel_round(db, results: Results) -> None:
    """One round of the overview's panels at one moment, the panel cache on and empty."""
    from django.core.cache import cache
    from django.test import override_settings

    from queues_app.centre.call_center import CallCenter
    from queues_app.monitoring.overview import Dashboard
    from queues_app.views.overview import OVERVIEW_PANELS, PANELS

    cache.clear()
    with override_settings(SWITCHBOARD_PANEL_CACHE_SECONDS=1.5):
        for panel in OVERVIEW_PANELS:
            dashboard = Dashboard(CallCenter(db))  # each panel its own request, as a live stream's round
            with harness.metered() as seen:
                PANELS[panel](dashboard)
            results.panels[panel] = seen.requests
    cache.clear()


def report(results: Results, where: str) -> str:
    lines = [f"A call's DynamoDB requests ({where}), the audited operations as the API makes them", ""]
    lines.append(f"{'pass':<16} {'a call':>7} {'create':>7} {'release':>8} {'available':>10} {'queue Q/call':>13}")
    for name, row in results.passes.items():
        steps = row["by_step"]
        lines.append(
            f"{name:<16} {row['per_call']:>7} {steps['create']:>7} {steps['release']:>8} {steps['available']:>10} "
            f"{row['queue_queries_per_call']:>13}"
        )
    lines += ["", "A round of the overview's panels: " + ", ".join(f"{k} {v}" for k, v in results.panels.items())]
    lines.append(f"  together: {sum(results.panels.values())} requests")
    return "\n".join(lines + ["", *harness.checks(results.problems)])


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__ or "", "call_cost", seed=7, warmup=0)
    parser.add_argument("--calls", type=harness.positive(int), default=60, help="callers a pass")
    parser.add_argument("--rate", type=harness.positive(float), default=5.0, help="callers a second")
    parser.add_argument("--agents", type=harness.positive(int), default=400, help="agents queued")
    args = harness.parse(parser, argv, smoke=SMOKE)

    def run(endpoint: str) -> Results:
        results = Results()
        for remember in (False, True):
            harness.progress("remembering the queues' heads" if remember else "reading the queues each time")
            one_pass(endpoint, args, remember, results)
        return results

    return harness.execute(
        args,
        run,
        report=report,
        as_json=lambda r: {
            "passes": r.passes,
            "panels": r.panels,
            "parameters": {"calls": args.calls, "rate": args.rate, "agents": args.agents, "seed": args.seed},
        },
    )


if __name__ == "__main__":
    sys.exit(main())
