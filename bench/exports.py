"""The audit trail's CSV: how long a supervisor waits for a busy day's trail, and what
it reads.

    .venv/bin/python -m bench.exports [--json] [--entries 185,5000] [--repeat 3] [--endpoint URL] [--smoke]

For each size N, on fresh tables: N entries in today's trail (written as a busy centre
writes them: a few a request, over the day's shards), the rest of the retention
(SWITCHBOARD_AUDIT_RETENTION_DAYS, 90) empty; then `GET /audit/export.csv` as a logged-in
supervisor, read to its end, `--repeat` times. Reported per N: the rows, the median and
slowest seconds, and the DynamoDB requests of one download. The goal (docs/benchmarks.md):
a day of a busy centre under 1 s.
Checks: every entry is a row, newest first.

`--json` prints {"sizes": {"N": {"rows", "seconds", "slowest_seconds", "requests"}}, "parameters": {...}}.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field

from bench import harness

SMOKE = {"entries": (20,), "repeat": 1}
ACTIONS = ("agent.available", "call.create", "agent.release", "call.ended")


@dataclass
class Results:
    sizes: dict[int, dict] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def one_size(endpoint: str, entries: int, repeat: int, results: Results) -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client, override_settings

    from queues_app.audit.store import AuditTrail
    from queues_app.ddb import client

    with harness.fresh_tables(endpoint, "exports", entries) as db:
        trail = AuditTrail(db)
        for start in range(0, entries, 25):  # a request writes a few entries at once
            trail.record_many(
                [
                    {
                        "actor": f"supervisor{n % 7}",
                        "source": "page",
                        "action": ACTIONS[n % len(ACTIONS)],
                        "target": f"agent:a{n % 300}",
                        "summary": f"change {n}",
                    }
                    for n in range(start, min(entries, start + 25))
                ]
            )
        user, _ = get_user_model().objects.get_or_create(username="bench-supervisor")
        browser = Client(HTTP_HOST="localhost")
        browser.force_login(user)
        seconds, rows, requests = [], 0, 0
        with override_settings(DYNAMODB_ENDPOINT_URL=endpoint, DYNAMODB_TABLE_PREFIX=db.prefix):
            client.reset_default()
            for _ in range(repeat):
                with harness.metered() as seen:
                    began = time.perf_counter()
                    answer = browser.get("/audit/export.csv")
                    body = b"".join(answer.streaming_content).decode()
                    seconds.append(time.perf_counter() - began)
                requests = seen.requests
                found = list(csv.reader(io.StringIO(body)))[1:]
                rows = len(found)
            client.reset_default()
        if rows != entries:
            results.problems.append(f"{entries} entries: the CSV has {rows} rows")
        summaries = [row[1] for row in found]
        if summaries != [f"change {n}" for n in reversed(range(entries))]:
            results.problems.append(f"{entries} entries: the rows are not the trail, newest first")
        results.sizes[entries] = {
            "rows": rows,
            "seconds": round(statistics.median(seconds), 3),
            "slowest_seconds": round(max(seconds), 3),
            "requests": requests,
        }


def run(args: argparse.Namespace):
    def go(endpoint: str) -> Results:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        results = Results()
        for entries in args.entries:
            harness.progress(f"{entries} entries")
            one_size(endpoint, entries, args.repeat, results)
        return results

    return go


def report(results: Results, where: str) -> str:
    lines = [f"The audit trail's CSV ({where}): one day's entries, the rest of the retention empty", ""]
    lines.append(f"{'entries':>8} {'rows':>8} {'median s':>9} {'slowest s':>10} {'requests':>9}")
    for entries, row in results.sizes.items():
        lines.append(
            f"{entries:>8} {row['rows']:>8} {row['seconds']:>9.3f} {row['slowest_seconds']:>10.3f} {row['requests']:>9}"
        )
    return "\n".join(lines + ["", *harness.checks(results.problems)])


def main(argv: list[str] | None = None) -> int:
    # Django's own database (the supervisor who downloads) is the run's, thrown away after it.
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp(prefix='bench-exports-')}/django.sqlite3"
    parser = harness.parser(__doc__ or "", "exports", repeat=3, warmup=0)
    parser.add_argument("--entries", type=harness.int_list, default=(185, 5000), help="entries in the day")
    args = harness.parse(parser, argv, smoke=SMOKE)
    return harness.execute(
        args,
        run(args),
        report=report,
        as_json=lambda r: {"sizes": {str(k): v for k, v in r.sizes.items()}, "parameters": {"entries": args.entries}},
    )


if __name__ == "__main__":
    sys.exit(main())
