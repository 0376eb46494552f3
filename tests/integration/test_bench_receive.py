"""`python -m bench.receive` at toy sizes: ours stays at three requests per receive, the
article's grows once those in flight fill its first page, and every shipment is
completed once.

No timing assertions: the figures themselves belong to docs/benchmarks.md.
"""

import json

from bench import harness, receive

SHIPMENTS = 40


def test_receive_cost_and_throughput_at_toy_sizes(dynamodb_local):
    results = receive.run_benchmark(
        dynamodb_local.endpoint,
        inflight=(0, 300),
        receives=10,
        waiting=20,
        consumers=(1, 4),
        shipments=SHIPMENTS,
        warmup=0,
    )
    # every measured receive returned the next waiting shipment, every throughput run
    # completed every shipment exactly once, and the tables agree
    assert results.problems == []

    ours = {n: s.results["ours"].metrics() for n, s in results.scenarios.items()}
    article = {n: s.results["article"].metrics() for n, s in results.scenarios.items()}
    assert set(ours) == set(article) == {0, 300}
    for n in (0, 300):
        assert 0 < ours[n]["requests_per_peek"] <= 3, n
        assert ours[n]["capacity_per_peek"] > 0
        assert article[n]["capacity_per_peek"] > 0
    assert ours[0]["requests_per_peek"] == ours[300]["requests_per_peek"]
    assert ours[0]["capacity_per_peek"] == ours[300]["capacity_per_peek"]
    # 300 in flight fill the article's first page of 250: every peek reads a second one
    assert article[0]["pages_per_peek"] == 1
    assert article[300]["pages_per_peek"] == 2
    assert article[300]["requests_per_peek"] > article[0]["requests_per_peek"]
    assert article[300]["capacity_per_peek"] > article[0]["capacity_per_peek"]

    assert set(results.throughput) == {(mode, c) for mode in receive.THROUGHPUT_MODES for c in (1, 4)}
    for key, run in results.throughput.items():
        assert run.problems == [], key
        assert run.completed == SHIPMENTS, key
        assert sorted(run.completed_ids) == [f"s{i:06d}" for i in range(SHIPMENTS)], key  # each once
        assert len(run.latencies) == SHIPMENTS
        # one consumer never loses a race
        if key[1] == 1:
            assert run.lost_claims == 0


def test_json_output_has_the_documented_shape(dynamodb_local):
    finished = harness.run_module(
        "receive", "--json", "--endpoint", dynamodb_local.endpoint, "--smoke", "--consumers", ""
    )
    assert finished.returncode == 0, finished.stderr
    printed = json.loads(finished.stdout)  # stdout holds the JSON object only
    assert set(printed) == {"ours", "article"}
    for by_n in printed.values():
        assert set(by_n) == {"0", "260"}
        for figures in by_n.values():
            assert {"requests_per_peek", "capacity_per_peek"} <= set(figures)
    assert printed["ours"]["260"]["requests_per_peek"] <= 3
    assert printed["article"]["260"]["requests_per_peek"] > printed["article"]["0"]["requests_per_peek"]
