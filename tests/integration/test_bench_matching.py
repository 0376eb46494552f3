"""`python -m bench.matching` at toy sizes: both algorithms drain every queue, nobody twice.

No timing assertions: the figures themselves belong to docs/benchmarks.md.
"""

import json

from bench import harness, matching

AGENTS = 20


def test_both_algorithms_assign_every_agent_once(dynamodb_local):
    results = matching.run_benchmark(dynamodb_local.endpoint, agents=AGENTS, threads=(1, 4), seed=3, repeat=1, warmup=0)
    assert set(results) == {"ours", "article"}
    for name, by_k in results.items():
        assert set(by_k) == {1, 4}
        for k, summary in by_k.items():
            (run,) = summary.runs
            assert run.double_assignments == 0, (name, k)
            assert run.assignments == AGENTS, (name, k)
            assert run.problems == [], (name, k, run.problems)  # every agent attending, queues empty
            metrics = summary.metrics()
            assert metrics["double_assignments"] == 0
            assert metrics["attempts_per_assignment"] >= 1.0
            assert metrics["requests_per_assignment"] >= 2.0  # at least a Query and a transaction
            assert metrics["capacity_per_assignment"] > 0
        # one thread never loses a race, so it never sends a second transaction
        assert by_k[1].metrics()["attempts_per_assignment"] == 1.0
    # the article reads the metadata of all 9 queues per attempt; ours never does
    assert "TransactGetItems" in results["article"][1].runs[0].operations
    assert "TransactGetItems" not in results["ours"][1].runs[0].operations


def test_json_output_has_the_documented_shape(dynamodb_local):
    finished = harness.run_module("matching", "--json", "--endpoint", dynamodb_local.endpoint, "--smoke")
    assert finished.returncode == 0, finished.stderr
    printed = json.loads(finished.stdout)  # stdout holds the JSON object only
    assert set(printed) == {"ours", "article"}
    for by_k in printed.values():
        assert set(by_k) == {"1", "2"}
        for metrics in by_k.values():
            assert set(metrics) == set(matching.METRICS)
            assert metrics["double_assignments"] == 0


def test_process_mode_runs_each_matcher_in_a_process_of_its_own(dynamodb_local):
    finished = harness.run_module("matching", "--json", "--processes", "--endpoint", dynamodb_local.endpoint, "--smoke")
    assert finished.returncode == 0, finished.stderr  # every table check passed
    printed = json.loads(finished.stdout)
    assert set(printed) == {"processes"}
    assert set(printed["processes"]) == {"ours", "article"}
    for by_k in printed["processes"].values():
        assert set(by_k) == {"1", "2"}
        for metrics in by_k.values():
            assert set(metrics) == set(matching.PROCESS_METRICS)
            assert metrics["double_assignments"] == 0
            assert metrics["attempts_per_assignment"] >= 1.0
            assert 0 <= metrics["fifo_inversions_mean"] <= metrics["fifo_inversions_max"]
            assert 0 < metrics["assign_p50_ms"] <= metrics["assign_p95_ms"]
        # a matcher alone takes every queue's agents in order
        assert by_k["1"]["fifo_inversions_max"] == 0


def test_fifo_inversions_count_earlier_agents_still_unassigned_at_each_commit():
    combo = ("Spanish", "F")
    queue = [("t1#a", "a"), ("t2#b", "b"), ("t3#c", "c")]

    def given(agent_id: str, at: float) -> matching.Assignment:
        return matching.Assignment(agent_id, f"call-{agent_id}", combo, 0.0, at, at)

    # c first (a and b still queued), then a, then b (a already gone)
    assert matching.fifo_inversions([given("c", 1), given("a", 2), given("b", 3)], {combo: queue}) == [2, 0, 0]
    # b first, then c (a still queued), a never
    assert matching.fifo_inversions([given("b", 1), given("c", 2)], {combo: queue}) == [1, 1]
