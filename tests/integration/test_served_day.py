"""`python -m bench.served_day --smoke --faults`: a quarter of an hour of the weekday played
through the API against `serve`'s processes (offers on, a fifth let ring) while the matcher and a web worker are killed,
the collector paused and DynamoDB throttled; no caller lost, none counted twice (the interval report and
/metrics equal the player's tally), nobody left waiting, check_invariants clean, and every
server gone at the end."""

import json

from bench import harness
from tests.integration.test_bench_load import processes_with


def test_a_served_day_with_faults_loses_no_caller_and_counts_each_once(dynamodb_local):
    finished = harness.run_module(
        "served_day", "--smoke", "--faults", "--json", "--endpoint", dynamodb_local.endpoint, timeout=900
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    run = json.loads(finished.stdout)
    assert run["problems"] == []
    tally = run["tally"]
    assert tally["offered"] > 5 and tally["answered"] + tally["abandoned"] == tally["offered"]
    assert run["report"] == {
        **{name: tally[name] for name in ("offered", "answered", "abandoned")},
        "callbacks_requested": tally["callbacks_asked"],
        "callbacks_connected": tally["callbacks_reached"],
        "overflowed": tally["overflowed"],
        "refused": tally["refused"],
        "agents_answered": tally["answered"],
        "agents_calls_handled": tally["calls_ended"],
        "agents_missed_offers": tally["offers_missed"],
    }
    assert tally["offers_missed"] > 0  # offers on (2 s), a fifth let ring: each missed in the agents' report
    assert run["metrics"] == {"answered": tally["answered"], "abandoned": tally["abandoned"]}
    faults = {fault["fault"]: fault for fault in run["faults"]}
    assert set(faults) == {
        "matcher killed and started again",
        "a web worker killed",
        "the collector stopped",
        "50% of DynamoDB requests throttled",
    }, faults
    assert faults["matcher killed and started again"]["lease_held_after_s"] > 0  # the killed one's ran out first
    assert faults["a web worker killed"]["replaced_after_s"] >= 0
    assert run["dynamodb"]["requests_per_call"] > 0 and run["dynamodb"]["throttled_requests"] > 0
    assert processes_with(f"DYNAMODB_TABLE_PREFIX={run['tables_prefix']}") == []
