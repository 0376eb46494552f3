"""`python -m bench.lifo` at toy sizes: every created task is accounted for (processed once, shed
or still pending; TTL is left off, so that no task can go without the bench counting it),
the table agrees, and --json prints one object of the documented shape.

No timing assertions (not even that LIFO beats FIFO): the figures belong to
docs/benchmarks.md, and a loaded machine can reorder them at these sizes.
"""

import json

import pytest

from bench import harness, lifo
from queues_app.ddb import schema

TINY = lifo.Parameters(
    overload_rate=30, overload_seconds=1.5, calm_rate=5, calm_seconds=1.5, downstream_rate=15, expiry=2, seed=3
)

GROUP_KEYS = {"size", "processed", "not_processed", "n", "mean_s", "p50_s", "p95_s", "max_s"}
ORDER_KEYS = {
    "created",
    "processed",
    "shed",
    "still_pending",
    "deleted_by_ttl",
    "wait_all",
    "wait_newest_tenth",
    "phases",
    "backlog_gone_s",
    "backlog_at_overload_end",
    "backlog_peak",
    "shed_age_mean_s",
    "requests_per_processed",
    "capacity_per_processed",
    "requests",
    "requests_by_operation",
    "failed_takes",
    "empty_takes",
    "empty_takes_with_work_pending",
    "producer_lag_max_s",
    "duration_s",
    "problems",
}


@pytest.fixture
def no_ttl(monkeypatch):
    """The bench's tables without TTL: DynamoDB Local deletes nothing on its own, so a task
    gone from the table was shed by the bench's sweeper or lost. The tables whose TTL was
    left off are listed."""
    left_off = []
    monkeypatch.setattr(schema, "_ensure_ttl", lambda db, name, attribute: left_off.append(name))
    return left_off


def test_every_task_is_processed_once_shed_or_left(dynamodb_local, no_ttl):
    results = lifo.run_benchmark(dynamodb_local.endpoint, TINY, warmup=0)
    assert any(name.endswith("-tasks") for name in no_ttl)  # the task table the runs used had no TTL
    assert results.problems == []  # none processed twice; the table agrees with the consumer
    schedule = lifo.arrival_schedule(TINY)
    assert set(results.runs) == {"lifo", "fifo"}
    for order, run in results.runs.items():
        m = run.metrics()
        assert m["created"] == len(schedule) == len(run.records), order
        assert sorted(r.index for r in run.records.values()) == list(range(len(schedule)))
        assert all(r.written is not None for r in run.records.values())
        # none lost: processed + shed + still pending = created (nothing can go by TTL)
        assert m["deleted_by_ttl"] == 0, order
        assert m["processed"] + m["shed"] + m["still_pending"] == m["created"], order
        for record in run.records.values():
            if record.done is not None:
                assert record.created <= record.taken <= record.done
            else:
                assert record.taken is None  # a task taken is always finished
        assert m["wait_all"]["n"] == m["processed"]
        tenth = m["wait_newest_tenth"]
        assert tenth["size"] == -(-m["created"] // 10)
        assert tenth["processed"] + tenth["not_processed"] == tenth["size"]
        assert sum(m["phases"][p]["size"] for p in ("overload", "calm")) == m["created"]
        assert m["processed"] > 0 and m["requests_per_processed"] > 0


def test_json_output_has_the_documented_shape(dynamodb_local):
    finished = harness.run_module("lifo", "--json", "--endpoint", dynamodb_local.endpoint, "--smoke")
    assert finished.returncode == 0, finished.stderr
    printed = json.loads(finished.stdout)  # stdout holds the JSON object only
    assert set(printed) == {"parameters", "lifo", "fifo", "seconds"}
    assert printed["parameters"]["overload_rate"] == 20 and printed["parameters"]["take_limit"] == 10
    for order in ("lifo", "fifo"):
        figures = printed[order]
        assert set(figures) == ORDER_KEYS
        assert set(figures["wait_all"]) == {"n", "mean_s", "p50_s", "p95_s", "max_s"}
        assert set(figures["wait_newest_tenth"]) == GROUP_KEYS
        assert set(figures["phases"]) == {"overload", "calm"}
        for phase in figures["phases"].values():
            assert set(phase) == GROUP_KEYS | {"newest_tenth"}
            assert set(phase["newest_tenth"]) == GROUP_KEYS
        assert figures["problems"] == []
