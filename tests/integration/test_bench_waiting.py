"""`python -m bench.waiting --smoke` runs, its checks pass, and its JSON has the shape
docs/benchmarks.md gives (the figures mean nothing at smoke size). Without `--endpoint`, as
a benchmark is run by hand: on an in-memory DynamoDB Local of its own, stopped at the end (the
other benchmarks' tests give theirs the session's)."""

import json

import pytest

from bench import harness

pytestmark = pytest.mark.integration


def test_the_waiting_line_benchmark_runs_and_costs_the_same_at_every_length():
    done = harness.run_module("waiting", "--smoke", "--json")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert set(figures) == {"fits_none", "fits_first", "escalation", "overview", "parameters"}
    assert set(figures["fits_none"]) == {"0", "50"}
    assert figures["fits_first"]["0"] is None
    for case in ("fits_none", "escalation"):
        assert figures[case]["0"] == figures[case]["50"], case  # flat in the line's length
    assert figures["fits_none"]["50"]["requests"] <= 6
    assert figures["fits_first"]["50"]["requests"] <= 6
