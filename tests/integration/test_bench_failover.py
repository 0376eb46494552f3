"""`python -m bench.failover --smoke --shards 2`: two matcher processes for each of two
matching shards, callers of one shard placed steadily, its holder killed. Callers keep
being matched, another matcher takes that shard's lease and callers go to it, the other
shard's holder keeps its lease, and the stored data keeps its invariants. (One shard's
matcher killed and started again: the served day with faults.)

No timing assertions: how fast belongs to docs/benchmarks.md.
"""

import json

from bench import harness


def test_callers_keep_being_matched_when_the_holder_is_killed_and_another_matcher_takes_over(dynamodb_local):
    finished = harness.run_module(
        "failover", "--json", "--shards", "2", "--endpoint", dynamodb_local.endpoint, "--smoke", timeout=600
    )
    assert finished.returncode == 0, finished.stderr[-3000:]  # every check passed
    printed = json.loads(finished.stdout)

    (run,) = printed["runs"]
    assert run["problems"] == []  # the other shard's lease did not move
    assert run["kill_to_first_matched_s"] is not None  # a caller was matched after the kill
    assert run["new_holder"] and run["new_holder"] != run["old_holder"]
    assert run["kill_to_first_via_new_holder_s"] is not None  # and callers went to the new holder
    assert run["during"]["failed"] == 0
    assert set(printed["medians"]) == {
        "kill_to_first_matched_s",
        "kill_to_new_holder_s",
        "kill_to_first_via_new_holder_s",
    }
    assert printed["parameters"]["shards"] == 2
