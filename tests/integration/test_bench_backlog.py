"""`python -m bench.backlog` at toy sizes: --json prints one object of the documented shape for
both modes, every submitted shipment is completed exactly once (the table agrees), and
an outage leaves a backlog for the consumers to come back to.

No timing assertions (not even that sidelining beats fifo): the figures belong to
docs/benchmarks.md, and a loaded machine can reorder them at these sizes.
"""

import json

from bench import backlog, harness

MODE_KEYS = {
    "submitted",
    "completed",
    "completed_exactly_once",
    "submitted_steady",
    "submitted_outage",
    "submitted_recovery",
    "steady_wait_p50_s",
    "steady_wait_p95_s",
    "normal_threshold_s",
    "backlog_at_recovery",
    "backlog_at_recovery_by_queue",
    "time_to_normal_s",
    "fresh_wait_during_recovery_p50_s",
    "fresh_wait_during_recovery_p95_s",
    "fresh_wait_during_recovery_max_s",
    "fresh_over_threshold",
    "backlog_cleared_s",
    "backlog_wait_p50_s",
    "backlog_wait_max_s",
    "oldest_wait_s",
    "taken_from_spillover",
    "fresh_taken_from_spillover",
    "completed_per_s_until_cleared",
    "production_after_recovery_s",
    "requests_per_completed",
    "requests_by_operation",
    "update_conflicts",
    "empty_takes",
    "producer_lag_max_s",
    "duration_s",
    "depth_timeline",
    "problems",
}

TINY = ["--smoke", "--seed", "3"]  # rate 10, 2 consumers, steady 2 s, outage 3 s, spillover after 1 s


def test_both_modes_complete_every_shipment_once(dynamodb_local):
    finished = harness.run_module("backlog", "--json", "--endpoint", dynamodb_local.endpoint, *TINY)
    printed = json.loads(finished.stdout)  # stdout holds the JSON object only
    assert finished.returncode == 0, finished.stderr
    assert set(printed) == {"params", "fifo", "sidelining", "seconds"}
    assert printed["params"]["rate"] == 10 and printed["params"]["spillover_after"] == 1
    for mode in ("fifo", "sidelining"):
        figures = printed[mode]
        assert set(figures) == MODE_KEYS, mode
        assert figures["problems"] == [], mode
        assert figures["completed_exactly_once"] is True, mode
        assert figures["completed"] == figures["submitted"] > 0, mode
        assert figures["submitted"] == (
            figures["submitted_steady"] + figures["submitted_outage"] + figures["submitted_recovery"]
        ), mode
        # 3 s without consumers at 10 a second: the consumers come back to a backlog
        assert figures["backlog_at_recovery"] > 0, mode
        assert set(figures["backlog_at_recovery_by_queue"]) == {"live", "spillover"}, mode
        assert figures["oldest_wait_s"] is not None and figures["oldest_wait_s"] >= 0, mode
    # only the sidelining consumers ever look at the spillover queue
    assert printed["fifo"]["taken_from_spillover"] == 0


def test_run_records_agree_with_the_figures(dynamodb_local):
    p = backlog.Parameters(
        rate=10,
        consumers=2,
        work_seconds=0.02,
        steady=1,
        outage=2,
        recovery_max=15,
        tail=0.5,
        spillover_after=1,
        sweep_seconds=0.2,
        seed=5,
    )
    results = backlog.run_benchmark(dynamodb_local.endpoint, p, modes=("sidelining",), warmup=0)
    assert results.problems == []
    run = results.runs["sidelining"]
    m = run.metrics()
    assert m["completed"] == len(run.records)
    assert sorted(r.index for r in run.records.values()) == list(range(len(run.records)))
    for record in run.records.values():
        assert record.submitted <= record.written
        assert record.submitted <= record.taken <= record.done
        assert record.source in ("live", "spillover")
    assert m["taken_from_spillover"] == sum(1 for r in run.records.values() if r.source == "spillover")
