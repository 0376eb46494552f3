"""The figures each process keeps for /metrics: the DynamoDB request counters
(`ddb/meter.py`) and the per-route latency histogram (`figures/latency.py`), in one
process and, with PROMETHEUS_MULTIPROC_DIR, added up over several."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from callcenter import gunicorn_config
from queues_app.ddb import meter
from queues_app.figures import latency
from queues_app.monitoring.prometheus import add_process_figures
from queues_app.shipments.queue import ShipmentQueue

ROOT = Path(__file__).resolve().parents[2]
HISTOGRAM = "switchboard_http_request_duration_seconds"


def figure(name, **labels):
    """A sample of this process's figures, as /metrics would read it (0 when absent)."""
    registry = CollectorRegistry(auto_describe=False)
    add_process_figures(registry)
    return registry.get_sample_value(name, labels) or 0


def scrape(client):
    response = client.get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


def test_a_request_is_timed_under_its_route_never_its_path(supervisor_client, moto_db):
    route = {"route": "/agents/<str:agent_id>/", "method": "GET", "status_class": "4xx"}
    before = figure(f"{HISTOGRAM}_count", **route)
    assert supervisor_client.get("/agents/agent-7f3e9/").status_code == 404
    assert supervisor_client.get("/agents/agent-0c21d/").status_code == 404
    assert figure(f"{HISTOGRAM}_count", **route) == before + 2
    # Both in one series: the buckets hold them, the sum is in seconds and positive.
    assert figure(f"{HISTOGRAM}_bucket", **route, le="+Inf") >= 2
    assert figure(f"{HISTOGRAM}_sum", **route) > 0
    text = scrape(supervisor_client)
    assert 'route="/agents/<str:agent_id>/"' in text
    assert "agent-7f3e9" not in text and "agent-0c21d" not in text


def test_the_overview_is_the_root_route_and_an_unknown_path_is_unmatched(supervisor_client, moto_db):
    home = {"route": "/", "method": "GET", "status_class": "2xx"}
    unmatched = {"route": latency.UNMATCHED, "method": "GET", "status_class": "4xx"}
    before = figure(f"{HISTOGRAM}_count", **home), figure(f"{HISTOGRAM}_count", **unmatched)
    assert supervisor_client.get("/").status_code == 200
    assert supervisor_client.get("/no-such-page/x-123").status_code == 404
    after = figure(f"{HISTOGRAM}_count", **home), figure(f"{HISTOGRAM}_count", **unmatched)
    assert after == (before[0] + 1, before[1] + 1)
    assert "/no-such-page" not in scrape(supervisor_client)


def test_an_odd_method_is_other_and_a_redirect_is_3xx(client, db):
    labels = {"route": "/", "method": "other", "status_class": "3xx"}
    before = figure(f"{HISTOGRAM}_count", **labels)
    client.generic("PROPFIND", "/")  # not logged in: sent to the login page
    assert figure(f"{HISTOGRAM}_count", **labels) == before + 1


def test_the_dynamodb_counters_count_every_request_of_the_process(moto_db):
    before = {
        name: figure(f"switchboard_dynamodb_{name}_total", operation="PutItem")
        for name in ("requests", "capacity_units", "throttles", "retries")
    }
    queue = ShipmentQueue(moto_db)
    queue.submit({})
    queue.submit({})
    assert figure("switchboard_dynamodb_requests_total", operation="PutItem") >= before["requests"] + 2
    assert figure("switchboard_dynamodb_capacity_units_total", operation="PutItem") > before["capacity_units"]
    # Nothing throttled or retried on moto; the series are there all the same, at zero.
    registry = CollectorRegistry(auto_describe=False)
    add_process_figures(registry)
    assert registry.get_sample_value("switchboard_dynamodb_throttles_total", {"operation": "PutItem"}) is not None
    assert figure("switchboard_dynamodb_throttles_total", operation="PutItem") == before["throttles"]
    assert figure("switchboard_dynamodb_retries_total", operation="PutItem") == before["retries"]


def botocore_answer(operation, *, code=None, reasons=(), retries=0, units=None):
    """What botocore hands the meter after a request (`after-call`)."""
    parsed = {"ResponseMetadata": {"RetryAttempts": retries}}
    if code:
        parsed["Error"] = {"Code": code}
    if reasons:
        parsed["CancellationReasons"] = [{"Code": r} for r in reasons]
    if units is not None:
        parsed["ConsumedCapacity"] = [{"CapacityUnits": units}]
    meter._after_call(http_response=None, parsed=parsed, model=SimpleNamespace(name=operation))


def test_throttles_retries_and_errors_are_counted_by_operation_and_code():
    def figures():
        return (
            figure("switchboard_dynamodb_throttles_total", operation="TransactWriteItems"),
            figure("switchboard_dynamodb_retries_total", operation="TransactWriteItems"),
            figure("switchboard_dynamodb_errors_total", operation="TransactWriteItems", code="ThrottlingError"),
            figure(
                "switchboard_dynamodb_errors_total",
                operation="TransactWriteItems",
                code="TransactionCanceledException",
            ),
            figure("switchboard_dynamodb_capacity_units_total", operation="TransactWriteItems"),
        )

    before = figures()
    botocore_answer("TransactWriteItems", code="TransactionCanceledException", reasons=["None", "ThrottlingError"])
    botocore_answer("TransactWriteItems", retries=2, units=4.5)
    after = figures()
    assert [b - a for a, b in zip(before, after, strict=True)] == [1, 2, 1, 1, 4.5]


WORKER = textwrap.dedent(
    """
    import sys
    from types import SimpleNamespace
    from queues_app.ddb import meter
    from queues_app.figures import latency

    answer = {"ResponseMetadata": {"RetryAttempts": 0}, "ConsumedCapacity": [{"CapacityUnits": 0.5}]}
    for _ in range(int(sys.argv[1])):
        meter._after_call(http_response=None, parsed=answer, model=SimpleNamespace(name="GetItem"))
        request = SimpleNamespace(method="GET", resolver_match=SimpleNamespace(route="api/calls/<call_id>"))
        latency.observe(request, 404, 0.02)
    """
)


def run_worker(directory, requests):
    """A process that makes `requests` requests with the figures shared in `directory`, as
    a gunicorn worker does, and exits; its pid."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    process = subprocess.Popen(
        [sys.executable, "-c", WORKER, str(requests)], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True
    )
    _, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
    return process.pid


@pytest.fixture
def shared(tmp_path, monkeypatch):
    """This process reads the figures as a gunicorn worker answering /metrics does."""
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    return tmp_path


def test_with_a_shared_directory_a_scrape_adds_up_every_worker_dead_ones_included(shared, supervisor_client, moto_db):
    first = run_worker(shared, 3)
    second = run_worker(shared, 4)
    assert {p.name for p in shared.iterdir()} == {
        f"{kind}_{pid}.db" for kind in ("counter", "histogram") for pid in (first, second)
    }
    for pid in (first, second):  # as gunicorn's master does when a worker exits
        gunicorn_config.child_exit(None, SimpleNamespace(pid=pid))
    text = scrape(supervisor_client)
    families = list(text_string_to_metric_families(text))
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families for s in f.samples}
    assert samples[("switchboard_dynamodb_requests_total", (("operation", "GetItem"),))] == 7
    assert samples[("switchboard_dynamodb_capacity_units_total", (("operation", "GetItem"),))] == 3.5
    route = (("method", "GET"), ("route", "/api/calls/<call_id>"), ("status_class", "4xx"))
    assert samples[(f"{HISTOGRAM}_count", route)] == 7
    assert samples[(f"{HISTOGRAM}_bucket", (("le", "0.025"), *route))] == 7
    assert samples[(f"{HISTOGRAM}_bucket", (("le", "0.01"), *route))] == 0
    # The figures read from DynamoDB come once each, beside the workers' files.
    names = [f.name for f in families]
    assert len(names) == len(set(names))
    assert ("switchboard_queue_depth", (("queue", "live"),)) in samples
    # This process's own requests (it was not started with the directory) are not in it.
    assert ("switchboard_dynamodb_requests_total", (("operation", "Query"),)) not in samples


def test_a_dead_workers_gauge_files_go_and_its_counters_stay(shared):
    (shared / "gauge_livesum_4242.db").write_bytes(b"")
    (shared / "counter_4242.db").write_bytes(b"")
    gunicorn_config.child_exit(None, SimpleNamespace(pid=4242))
    assert sorted(p.name for p in shared.iterdir()) == ["counter_4242.db"]


def test_without_a_shared_directory_the_exit_hook_does_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    gunicorn_config.child_exit(None, SimpleNamespace(pid=4242))  # no directory to look in: no error
