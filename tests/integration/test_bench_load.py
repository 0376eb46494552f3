"""`python -m bench.load --smoke`: the production shape (gunicorn, the matcher, the
escalation loop, shipment workers) under a phone system, supervisors and a shipment
producer for one short step. --json prints one object of the documented shape, no answer
is a 5xx and every request is answered (one the client stopped waiting for is latency, named
as the step's cause), the matcher matched the callers, the DynamoDB meter saw the servers' requests,
check_invariants finds nothing wrong, and no server outlives the run.

No latency is asserted: at these sizes and on a shared machine the figures mean nothing
(docs/benchmarks.md holds a full run).
"""

import json
from pathlib import Path

from bench import harness, load

RUN_KEYS = {
    "parameters",
    "tables_prefix",
    "client",
    "machine",
    "steps",
    "highest_rate_held",
    "held_by_supervisors",
    "viewers",
    "overviews",
    "matched_by_the_matcher",
    "audit",
    "problems",
    "seconds",
}
STEP_KEYS = {
    "rate",
    "seconds",
    "calls_due",
    "shipments_due",
    "calls_per_s",
    "endpoints",
    "panel_views",
    "failures",
    "5xx",
    "cpu_busy",
    "load_average",
    "driver",
    "dynamodb",
    "causes",
    "held",
    "supervisors",
    "cpu_seconds",
}
ENDPOINT_KEYS = {"count", "p50_ms", "p95_ms", "p99_ms", "failures", "5xx", "statuses"}


def processes_with(variable: str) -> list[int]:
    """The processes whose environment holds `variable` (NAME=value)."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if variable.encode() in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:  # gone meanwhile, or not ours
            continue
    return found


def test_a_smoke_run_serves_everyone_without_a_500_and_stops_every_server(dynamodb_local):
    finished = harness.run_module("load", "--json", "--endpoint", dynamodb_local.endpoint, "--smoke", timeout=900)
    assert finished.returncode == 0, finished.stderr[-3000:]
    printed = json.loads(finished.stdout)  # stdout holds the JSON object only

    assert set(printed) == RUN_KEYS
    assert printed["problems"] == []
    assert printed["client"] == "switchboard_client.Switchboard"
    assert printed["parameters"]["rates"] == [2] and printed["parameters"]["supervisors"] == [1, 3]
    # The rate again with each number of supervisors, compared.
    fewer, step = printed["steps"]
    assert (fewer["supervisors"], step["supervisors"]) == (1, 3)
    (compared,) = printed["viewers"]
    assert compared["supervisors"] == [1, 3] and compared["rate"] == 2
    assert set(compared) >= {"panel_views_per_s", "web_cpu_s_per_s", "dynamodb_requests_per_s"}
    assert set(step) == STEP_KEYS
    # DynamoDB Local slow under the rest of the suite is told as a 503 (no 500: `problems` is empty).
    assert step["5xx"] == sum(e["statuses"].get("503", 0) for e in step["endpoints"].values())
    # Every caller due in the step was counted, answered, or named as latency when still unanswered
    # at the step's wait (a fresh clone's run under the suite's load: 9 of 10); a step not held says why.
    counted, due = step["endpoints"]["POST /api/calls"]["count"], step["calls_due"]
    assert counted <= due
    if counted < due:
        assert f"latency: {due - counted} of {due} calls due had no answer" in " ".join(step["causes"]), step["causes"]
    assert step["held"] == (step["causes"] == [])
    assert set(step["driver"]) == {"late_p50_ms", "late_p95_ms", "late_max_ms"}
    endpoints = step["endpoints"]
    assert endpoints["POST /api/calls"]["count"] > 0
    # Shipments alike: every one due in the step answered, or the rest named as latency.
    shipped = endpoints.get("POST /api/shipments", {}).get("count", 0)
    assert step["shipments_due"] > 0 and shipped <= step["shipments_due"]
    if shipped < step["shipments_due"]:
        missing = step["shipments_due"] - shipped
        assert f"latency: {missing} of {step['shipments_due']} shipments due" in " ".join(step["causes"])
    # Each supervisor opened the overview and its live stream before the step began (none refused
    # under gunicorn's threads), and was pushed panels on it, counted over the run: a step on a
    # machine loaded by the rest of the suite may see none, which it then names as latency.
    opened = printed["overviews"]
    assert opened["GET /"]["statuses"] == {"200": 3} and opened["GET /live/"]["count"] >= 3
    assert opened["GET /live/"]["statuses"] == {"200": opened["GET /live/"]["count"]}
    pushed = opened.get(load.PUSHED, {}).get("count", 0)
    assert pushed > 0 or any("no panel was shown" in cause for cause in step["causes"]), (opened, step["causes"])
    assert step["panel_views"] >= endpoints.get(load.PUSHED, {}).get("count", 0)
    # Each process's CPU, as the kernel counts it.
    spent = step["cpu_seconds"]["seconds"]
    assert {"web", "run_matcher", "escalate_callers", "run_shipment_worker", "dynamodb_local", "driver"} <= set(spent)
    assert spent["web"] > 0 and step["cpu_seconds"]["web_per_call"] > 0
    for name, figures in endpoints.items():
        # A request the client stopped waiting for (the suite's load on a 2-core machine) is latency, not
        # asserted, but named: the step is not held for it. Any other missing answer fails.
        unanswered = figures.get("no_answer", {})
        assert set(figures) - {"no_answer", "unavailable"} == ENDPOINT_KEYS, name
        assert all(load.is_timeout(error) for error in unanswered), (name, unanswered)
        if unanswered:
            assert any("no answer within the client's" in cause for cause in step["causes"]), step["causes"]
        # A 503 is DynamoDB slow or busy under the load, said as such and named; never a missing table.
        unavailable = figures.get("unavailable", {})
        assert sum(unavailable.values()) == figures["5xx"] == figures["statuses"].get("503", 0), name
        assert all("did not answer in time" in said or "busy" in said for said in unavailable), unavailable
        if unavailable:
            assert any(cause.startswith("outage: ") for cause in step["causes"]), step["causes"]
        assert figures["p50_ms"] <= figures["p95_ms"] <= figures["p99_ms"], name

    # The meter between the servers and DynamoDB saw their requests, and what they cost.
    dynamodb = step["dynamodb"]
    assert dynamodb["requests_per_call"] > 0
    assert dynamodb["by_operation_per_call"]["TransactWriteItems"] > 0
    assert dynamodb["write_cu_per_call"] + dynamodb["write_cu_estimated_per_call"] > 0
    assert "callcenter" in dynamodb["by_table_per_call"]
    # Each server process's requests, by the name its User-Agent carries (the web workers and
    # the matcher's lease every second; the escalation pass may have had no round in a 4 s step).
    servers = {"gunicorn", "run_matcher", "escalate_callers", "run_shipment_worker"}
    assert {"gunicorn", "run_matcher"} <= set(dynamodb["by_process_per_s"]) <= servers

    # The web workers sent their callers to the matcher process (the default shape).
    assert printed["matched_by_the_matcher"] > 0
    assert printed["audit"]["ok"], printed["audit"]
    assert "no violations" in printed["audit"]["summary"]
    # gunicorn and its workers, the matcher, the escalation loop, the shipment workers, the meter: all gone.
    assert processes_with(f"DYNAMODB_TABLE_PREFIX={printed['tables_prefix']}") == []
