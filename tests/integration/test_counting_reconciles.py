"""Every call fact counted exactly once, on DynamoDB Local: call traffic from several
processes through every way a call is answered or leaves the line (tests/helpers/
call_traffic.py), the matching dispatcher among them, one process killed with SIGKILL
mid-run; then, after the sweep `collect_metrics` makes, every quarter hour's and the
day's figures equal a recount from the call records themselves."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import defaultdict

import pytest
from django.conf import settings

from queues_app.calls.store import call_from_item
from queues_app.ddb.clock import from_iso
from queues_app.figures import facts, service_level
from queues_app.figures.tally import Tally

pytestmark = pytest.mark.integration

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIGURES = ("answered", "answered_within", "abandoned", "handled", "wait_sum", "abandoned_wait_sum", "handle_sum")


def start(env, *args):
    return subprocess.Popen(
        [sys.executable, *args], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def recount(db) -> dict[tuple[str, str], dict[str, float]]:
    """The figures every interval and day should have, from the call records alone."""
    expected: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    calls = [
        call_from_item(item)
        for item in db.items("scan", TableName=db.table("callcenter"))
        if item["pk"].startswith("CALL#") and "status" in item
    ]

    def add(moment, kind, seconds, combination):
        values, _peaks = service_level.fact_figures(kind, round(max(0.0, seconds), 3))
        for pk, sk, _keep in service_level.figure_keys(moment, facts.combination_name(combination)):
            if pk != service_level.MINUTE_PK:
                for name, value in values.items():
                    expected[(pk, sk)][name] += value

    for call in calls:
        arrived, answered, ended = from_iso(call.arrived_at), from_iso(call.assigned_at), from_iso(call.ended_at)
        if answered:
            add(answered, facts.ANSWERED, (answered - arrived).total_seconds(), call.asked_for)
        if call.status == "abandoned":
            add(ended, facts.ABANDONED, (ended - arrived).total_seconds(), call.asked_for)
        if call.status == "ended":
            add(ended, facts.ENDED, (ended - answered).total_seconds(), call.asked_for)
    return expected, calls


def reported(db) -> dict[tuple[str, str], dict[str, float]]:
    """Each interval's and day's figures, added up over the shards the counting spread them on."""
    found: dict[tuple[str, str], dict[str, float]] = {}
    for pk in (service_level.INTERVAL_PK, service_level.DAY_PK):
        for shard in service_level.figure_partitions(pk):
            for item in db.partition_items(db.table("metrics"), shard):
                if not item["sk"].endswith(f"#{service_level.OCCUPANCY}"):
                    figures = found.setdefault((pk, item["sk"]), dict.fromkeys(FIGURES, 0.0))
                    for name in FIGURES:
                        figures[name] += float(item.get(name, 0))
    return found


def test_every_call_fact_is_counted_once_across_processes_and_a_sigkill(local_db):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DYNAMODB_ENDPOINT_URL": settings.DYNAMODB_ENDPOINT_URL,
        "DYNAMODB_TABLE_PREFIX": settings.DYNAMODB_TABLE_PREFIX,
    }
    # A lease long enough that a busy machine does not let it lapse (its callers would then be
    # matched where they arrive, and none through the dispatcher).
    matcher = start(env, "manage.py", "run_matcher", "--listen", "127.0.0.1", "--lease", "10")
    line = matcher.stdout.readline()
    assert "listening" in line, matcher.stderr.read()
    traffic = "tests.helpers.call_traffic"
    victim_rounds = 0
    workers = [
        start(env, "-m", traffic, "1", "80", "--dispatched"),
        start(env, "-m", traffic, "2", "80", "--seeded"),
        start(env, "-m", traffic, "3", "80"),
    ]
    # Killed with some of its changes counted (it counts every 2 s) and some not: after 3 s
    # and 40 rounds it is told to stop once it holds facts it wrote and has not counted.
    victim = start(env, "-m", traffic, "4", "0", "--forever", "--seeded", "--flush-every", "2", "--hold-when-told")
    began = time.monotonic()
    while time.monotonic() - began < 3 or victim_rounds < 40:
        assert victim.stdout.readline(), victim.stderr.read()
        victim_rounds += 1
    victim.send_signal(signal.SIGUSR1)
    while not (line := victim.stdout.readline()).startswith("holding "):
        assert line, victim.stderr.read()
    held = int(line.split()[1])
    os.kill(victim.pid, signal.SIGKILL)
    victim.wait(timeout=30)
    for worker in workers:
        out, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err[-3000:]
    matcher.send_signal(signal.SIGTERM)
    out, err = matcher.communicate(timeout=60)
    matched = int(out.rsplit("Stopped: ", 1)[1].split()[0])
    assert matched > 0, "no caller went through the matching dispatcher"

    left_behind = sum(1 for pk in facts.partitions() for _ in local_db.partition_items(local_db.table("metrics"), pk))
    swept = Tally(local_db).sweep()  # what collect_metrics' next pass does
    assert swept.left == []
    assert left_behind >= held > 0 and swept.counted == left_behind
    assert sum(1 for pk in facts.partitions() for _ in local_db.partition_items(local_db.table("metrics"), pk)) == 0

    expected, calls = recount(local_db)
    found = reported(local_db)
    differences = [
        (key, name, expected.get(key, {}).get(name, 0.0), found.get(key, {}).get(name, 0.0))
        for key in sorted(set(expected) | set(found))
        for name in FIGURES
        if abs(expected.get(key, {}).get(name, 0.0) - found.get(key, {}).get(name, 0.0)) > 1e-6
    ]
    statuses = defaultdict(int)
    for call in calls:
        statuses[call.status] += 1
    escalated = sum(1 for call in calls if call.relaxed and call.assigned_at)
    print(
        f"{len(calls)} calls {dict(statuses)}, {escalated} answered after escalation, {matched} through the "
        f"dispatcher; {left_behind} facts left uncounted after the SIGKILL and the last flushes, swept; "
        f"{len(expected)} interval and day items compared: {len(differences)} differences"
    )
    assert differences == []
    assert statuses["ended"] and statuses["abandoned"] and statuses["assigned"] + statuses["ended"] > 0
    assert escalated > 0
    day = [key for key in found if key[0] == service_level.DAY_PK]
    assert day and sum(found[key]["answered"] for key in day) == sum(1 for call in calls if call.assigned_at)
