"""The benchmarks' numeric options refuse what would run nothing or never end (0, a
negative number, not a number, infinity) with one line naming the option."""

import argparse
import subprocess
import sys

import pytest

from bench import harness


def test_a_positive_number_is_finite_and_above_zero():
    assert harness.positive(int)("3") == 3 and harness.positive(float)("0.5") == 0.5
    for text in ("0", "-5", "x", "nan", "inf", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="above 0"):
            harness.positive(float)(text)
    with pytest.raises(argparse.ArgumentTypeError):
        harness.positive(int)("2.5")


@pytest.mark.parametrize(
    ("module", "option", "value"),
    [("estimate", "--minutes", "-5"), ("estimate", "--calls-per-minute", "inf"), ("day", "--hours", "0")],
)
def test_a_benchmark_refuses_a_number_that_runs_nothing_before_it_starts(module, option, value):
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", option, value], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert f"argument {option}: a number above 0 expected, not '{value}'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        (["matching", "--matchers", "2"], "--matchers takes 1 to 64, with --processes"),
        (["failover", "--shards", "0"], "--shards takes 1 to 64"),
        (["served_day", "--flush-seconds", "0.5"], "--flush-seconds takes 1 to 300"),
    ],
)
def test_matchers_and_shards_out_of_range_are_refused_before_anything_starts(arguments, said):
    module, *rest = arguments
    done = subprocess.run([sys.executable, "-m", f"bench.{module}", *rest], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr, done.stderr
