"""`python -m bench.counting --smoke` runs, its check (the figures read back equal the
calls made) passes, and its JSON has the shape docs/benchmarks.md gives."""

import json

import pytest

from bench import harness

pytestmark = pytest.mark.integration


def test_the_counting_benchmark_runs_and_every_call_is_counted(dynamodb_local):
    done = harness.run_module("counting", "--smoke", "--json", "--endpoint", dynamodb_local.endpoint)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert set(figures) == {"paces", "parameters"}
    assert set(figures["paces"]) == {"1", "10"}
    for pace in figures["paces"].values():
        assert pace["calls"] == 12  # 10 answered at once, 2 who hang up
        assert pace["requests"]["requests"] > 0 and pace["background"]["capacity"] > 0
    # Written less often, the figures cost less in the background per call.
    assert figures["paces"]["10"]["background"]["requests"] < figures["paces"]["1"]["background"]["requests"]
