"""`python -m bench.call_cost --smoke` runs, its checks pass (every caller matched, no
invariant broken), and its JSON has the shape docs/benchmarks.md gives. The figures mean
nothing at smoke size; how remembering works is tests/unit/test_remembered_heads.py's."""

import json

import pytest

from bench import harness

pytestmark = pytest.mark.integration


def test_the_call_cost_benchmark_runs_both_passes_and_a_round_of_panels(dynamodb_local):
    done = harness.run_module("call_cost", "--smoke", "--json", "--endpoint", dynamodb_local.endpoint)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = json.loads(done.stdout)
    assert set(figures) == {"passes", "panels", "parameters"}
    each, remembering = figures["passes"]["reads each time"], figures["passes"]["remembers"]
    for row in (each, remembering):
        assert set(row) == {"per_call", "by_step", "by_operation", "queue_queries_per_call"}
        assert set(row["by_step"]) == {"create", "release", "available"} and row["per_call"] > 0
        assert row["per_call"] == pytest.approx(sum(row["by_step"].values()), abs=0.05)
    # A process that remembers never reads its queues more (fewer, unless the machine is so
    # slow that a second passes between two callers).
    assert remembering["queue_queries_per_call"] <= each["queue_queries_per_call"]
    assert set(figures["panels"]) == {"calls", "lines", "service_level", "grid", "shipments", "tasks", "history"}
