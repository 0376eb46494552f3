"""Waiting-line benchmark: what one agent coming back costs, however long the line.

    .venv/bin/python -m bench.waiting [--json] [--lengths 0,1000,10000] [--endpoint URL] [--smoke]

For each line length N, on fresh tables: N callers wait for (French, X) (loaded in
batches, as demo data is: `WaitingLine.load`), then

- fits none: an agent (English, F) who fits none of them is made available
  (`CallCenter.make_available`); they look at the line, queue, and look again;
- fits first: an agent (French, X) is made available and takes the first of them
  (with N = 0 there is nobody to take: the figure is reported as null);
- escalation: one `escalate()` pass while every caller is due for relaxing after
  `after_seconds` = 1 hour (none is due: what a pass costs when there is nothing to do)
  and the overview's supply-and-demand grid and calls panel, which read the line too.

Reported per N and case: DynamoDB requests and capacity units (the request meter; writes
in transactions count twice, as DynamoDB bills them). The goal (docs/benchmarks.md): at
most 6 requests and 20 capacity units for one `make_available`, whatever N.
Checks: the fitting agent took the longest-waiting caller, the other one is queued, and
`check_invariants`' call-centre invariants hold at the end of each N.

`--json` prints {"fits_none": {"0": {"requests", "capacity"}, ...}, "fits_first": {...},
"escalation": {...}, "overview": {...}, "parameters": {...}}.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from datetime import timedelta

from bench import harness

SMOKE = {"lengths": (0, 50)}
CASES = ("fits_none", "fits_first", "escalation", "overview")


def one_length(endpoint: str, length: int) -> tuple[dict[str, dict | None], list[str]]:
    from queues_app.agents.records import AgentStatus
    from queues_app.agents.roster import Agents
    from queues_app.agents.skills import SkillCatalog
    from queues_app.calls.records import Call, CallStatus
    from queues_app.centre.call_center import CallCenter
    from queues_app.ddb.clock import now, to_iso
    from queues_app.monitoring import invariants
    from queues_app.monitoring.overview import Dashboard
    from queues_app.routing.escalation import EscalationPolicy
    from queues_app.webhooks.events import listening

    catalog = SkillCatalog.from_mapping({"language": ["English", "French", "Spanish"], "gender": ["F", "M", "X"]})
    figures: dict[str, dict | None] = {}
    problems: list[str] = []
    with harness.fresh_tables(endpoint, "waiting", length) as db:
        center = CallCenter(db, catalog, escalation=EscalationPolicy(after_seconds=3600))
        roster = Agents(db, catalog)
        moment = now()
        callers = [
            Call(
                call_id=f"c{n:06d}{uuid.uuid4().hex[:6]}",
                status=CallStatus.WAITING,
                preferences={"language": "French", "gender": "X"},
                arrived_at=to_iso(moment - timedelta(milliseconds=10 * (length - n))),
            )
            for n in range(length)
        ]
        center.line.load(callers)
        ana = roster.create("Ana", {"language": ["English"], "gender": ["F"]})
        fran = roster.create("Fran", {"language": ["French"], "gender": ["X"]})
        harness.reset_contention()
        center.matcher.profiles.current()  # the routing profiles, read once every few seconds, not by each case
        listening(db)  # who listens to agents' events: likewise

        with harness.metered() as seen:
            _agent, took = center.make_available(ana.agent_id)
        figures["fits_none"] = {"requests": seen.requests, "capacity": round(seen.capacity, 1)}
        if took is not None or roster.get(ana.agent_id).status != AgentStatus.QUEUED:
            problems.append(f"N={length}: the agent who fits nobody took {took and took.call_id} or was not queued")

        if length:
            with harness.metered() as seen:
                _agent, took = center.make_available(fran.agent_id)
            figures["fits_first"] = {"requests": seen.requests, "capacity": round(seen.capacity, 1)}
            if took is None or took.call_id != callers[0].call_id:
                problems.append(f"N={length}: the fitting agent took {took and took.call_id}, not the first caller")
        else:
            figures["fits_first"] = None

        with harness.metered() as seen:
            center.escalate()
        figures["escalation"] = {"requests": seen.requests, "capacity": round(seen.capacity, 1)}

        dashboard = Dashboard(center=center)
        with harness.metered() as seen:
            dashboard.supply_and_demand()
            dashboard.calls_panel()
        figures["overview"] = {"requests": seen.requests, "capacity": round(seen.capacity, 1)}

        with harness.unmetered():
            found = invariants.find_violations(db, catalog)
        problems += [f"N={length}: {violation}" for violation in found]
    return figures, problems


def run(endpoint: str, lengths: tuple[int, ...]) -> dict:
    results: dict = {case: {} for case in CASES}
    problems: list[str] = []
    for length in lengths:
        harness.progress(f"line of {length}")
        figures, found = one_length(endpoint, length)
        for case in CASES:
            results[case][str(length)] = figures[case]
        problems += found
    results["problems"] = problems
    return results


def report(results: dict, where: str) -> str:
    lines = [f"One agent coming back, on DynamoDB Local ({where}): requests / capacity units", ""]
    lengths = list(results["fits_none"])
    lines.append(f"{'callers waiting':>16} | " + " | ".join(f"{case:>20}" for case in CASES))
    for length in lengths:
        cells = []
        for case in CASES:
            figure = results[case][length]
            cells.append(f"{'-':>20}" if figure is None else f"{figure['requests']:>9} / {figure['capacity']:>8}")
        lines.append(f"{int(length):>16,} | " + " | ".join(cells))
    lines += harness.checks(results["problems"])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__ or "", "waiting", warmup=0)
    parser.add_argument(
        "--lengths",
        type=harness.int_list,
        default=(0, 1000, 10000),
        help="callers waiting before the agent comes back (default 0,1000,10000)",
    )
    args: argparse.Namespace = harness.parse(parser, argv, smoke=SMOKE)
    return harness.execute(
        args,
        lambda endpoint: run(endpoint, args.lengths),
        report=report,
        as_json=lambda r: {**{case: r[case] for case in CASES}, "parameters": {"lengths": list(args.lengths)}},
        problems=lambda r: r["problems"],
    )


if __name__ == "__main__":
    sys.exit(main())
