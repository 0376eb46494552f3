"""`python -m bench.estimate --smoke` runs on the shared DynamoDB Local, every caller is
taken by the end, and its JSON has the shape docs/benchmarks.md gives (the error means
nothing at smoke size)."""

import json

import pytest

from bench import harness

pytestmark = pytest.mark.integration


def test_the_estimate_benchmark_scores_the_callers_who_waited(dynamodb_local):
    done = harness.run_module("estimate", "--smoke", "--json", "--minutes", "10", "--endpoint", dynamodb_local.endpoint)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert set(figures) == {
        "callers_who_waited",
        "with_an_estimate",
        "scored",
        "median_abs_error_share",
        "p25_abs_error_share",
        "p75_abs_error_share",
        "median_signed_error_share",
        "parameters",
    }
    assert 0 < figures["with_an_estimate"] <= figures["callers_who_waited"]
    assert figures["parameters"]["minutes"] == 10
