"""Queue metrics: per-minute counts and gauges, history, totals, capacity, /metrics,
and the overview's charts, alarms and capacity panel."""

import re
import threading
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.urls import reverse

from queues_app.centre.call_center import CallCenter
from queues_app.ddb import meter
from queues_app.figures import counters
from queues_app.figures.counters import LIVE, MetricsStore, recorder
from queues_app.models import ApiToken
from queues_app.monitoring.sampler import MetricsCollector
from queues_app.shipments.queue import ShipmentQueue
from queues_app.tasks.queue import TaskQueue
from tests.helpers.clock import Moments
from tests.helpers.pages import figure
from tests.helpers.seen import shown, ticked
from tests.helpers.settings import read_setting
from tests.helpers.threads import wait_for


def test_counts_are_written_per_minute_and_as_totals(moto_db, clock):
    queue = ShipmentQueue(moto_db, clock=clock)
    for n in range(3):
        queue.submit({"n": n})
    lease = queue.receive()
    queue.complete(lease.shipment.shipment_id, lease.receipt)
    MetricsStore(moto_db).flush()
    minute = MetricsStore(moto_db).history(LIVE, 5)[-1]
    assert minute.get("enqueued") == 3 and minute.get("completed") == 1
    assert minute.get("first_attempts") == 1
    assert MetricsStore(moto_db).totals()[LIVE]["enqueued"] == 3


def test_one_event_with_nothing_after_it_is_written_within_a_flush_period(moto_db, monkeypatch):
    """A quiet process (a web worker after its last request, a worker after its last
    shipment) writes what it counted from its flush thread: no later event is needed."""
    ticks = Moments()
    monkeypatch.setattr(counters, "time", SimpleNamespace(monotonic=ticks.monotonic, time=time.time))
    monkeypatch.setattr(counters, "_flushers", {})
    MetricsStore(moto_db).flush()  # the process flushed a moment ago
    counters.note(moto_db, LIVE, "enqueued")  # the last event: not due yet, so not written
    assert MetricsStore(moto_db).totals().get(LIVE, {}).get("enqueued") is None

    stop = threading.Event()
    flusher = counters.keep_flushing(moto_db, every=0.01, stop=stop)
    try:
        assert counters.keep_flushing(moto_db, every=0.01, stop=stop) is flusher  # one a process
        time.sleep(0.05)  # several ticks of the thread, but the flush period has not passed
        assert MetricsStore(moto_db).totals().get(LIVE, {}).get("enqueued") is None
        ticks.advance(counters.recorder.period)
        assert wait_for(lambda: MetricsStore(moto_db).totals().get(LIVE, {}).get("enqueued") == 1, timeout=5)
    finally:
        stop.set()
        flusher.join(timeout=5)
    assert not flusher.is_alive()


def test_a_process_flushes_as_often_as_counts_flush_seconds_says(tmp_path):
    period = "__import__('queues_app.figures.counters').figures.counters.recorder.period"
    assert read_setting(tmp_path, period).stdout.strip() == "10.0"  # the default
    assert read_setting(tmp_path, period, COUNTS_FLUSH_SECONDS="2").stdout.strip() == "2.0"


def test_age_at_first_attempt_leaves_retries_out(moto_db, clock):
    queue = ShipmentQueue(moto_db, clock=clock)
    queue.submit({}, shipment_id="s1")
    clock.advance(40)
    lease = queue.receive(visibility_timeout=5)
    clock.advance(10)  # the lease expires: the next receive is a retry
    again = queue.receive(visibility_timeout=5)
    assert again.shipment.shipment_id == "s1" and again.shipment.receive_count == 2
    MetricsStore(moto_db).flush()
    row = MetricsStore(moto_db).history(LIVE, 5)[-1]
    assert row.get("first_attempts") == 1
    assert 40 <= row.get("first_attempt_age_max") < 41
    assert row.get("expired_leases") == 1
    assert lease.shipment.receive_count == 1


def test_a_failed_flush_keeps_the_counts(moto_empty):
    recorder.count(LIVE, "enqueued", 5)
    assert MetricsStore(moto_empty).flush() == 0  # no table: nothing written, nothing raised
    counts, _ = recorder.take()
    assert sum(counts.values()) == 5


def test_the_collector_samples_every_queue(moto_db):
    ShipmentQueue(moto_db).submit({})
    TaskQueue(moto_db).create({"job": 1})
    CallCenter(moto_db).create_call({})
    figures = MetricsCollector(moto_db).sample()
    assert figures[counters.LIVE]["depth"] == 1
    assert figures[counters.TASKS]["depth"] == 1
    assert figures[counters.CALLS]["depth"] == 1
    assert figures[counters.SPILLOVER]["depth"] == 0
    row = MetricsStore(moto_db).latest(counters.CALLS)
    assert row.get("depth") == 1 and row.get("oldest_age") is not None


def test_capacity_per_operation_is_written_for_finished_minutes(moto_db, monkeypatch):
    bucket = meter.RequestMeter()
    bucket.record(
        "TransactWriteItems",
        retries=0,
        capacity=[{"CapacityUnits": 4.0}],
        error_code=None,
        cancellation_codes=["TransactionConflict"],
    )
    bucket.record("Query", retries=0, capacity=[], error_code="ThrottlingException", cancellation_codes=[])
    monkeypatch.setattr(recorder, "capacity_minutes_to_flush", lambda: [(29_000_000, bucket)])
    MetricsStore(moto_db).flush()
    rows = moto_db.call(
        "query",
        TableName=moto_db.table("metrics"),
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": "CAPACITY"}},
    )["Items"]
    values = {k: float(v["N"]) for k, v in rows[0].items() if "__" in k}
    assert values["TransactWriteItems__conflicts"] == 1
    assert values["TransactWriteItems__capacity"] == 4
    assert values["Query__throttles"] == 1


def test_metrics_endpoint_needs_a_login_or_a_token(client, moto_db, supervisor):
    response = client.get("/metrics")
    assert response.status_code == 401 and response.json()["error"] == "Authentication required"
    token = ApiToken.issue(supervisor, "prometheus")[1]
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 200


def test_metrics_endpoint_speaks_prometheus(supervisor_client, moto_db):
    queue = ShipmentQueue(moto_db)
    for _ in range(3):
        queue.submit({})
    lease = queue.receive()
    queue.complete(lease.shipment.shipment_id, lease.receipt)
    MetricsStore(moto_db).flush()
    response = supervisor_client.get("/metrics")
    assert response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    assert 'switchboard_queue_depth{queue="live"} 2.0' in text
    assert 'switchboard_queue_in_flight{queue="live"} 0.0' in text
    assert 'switchboard_queue_events_total{event="enqueued",queue="live"} 3.0' in text
    assert 'switchboard_queue_events_total{event="completed",queue="live"} 1.0' in text
    assert re.search(r'switchboard_age_of_first_attempt_seconds\{queue="live",stat="max"\} [0-9.]+', text)
    assert re.search(r'switchboard_dynamodb_requests_total\{operation="Query"\} [0-9.]+', text)


def test_metrics_endpoint_reads_the_latest_sample_when_fresh(supervisor_client, moto_db):
    MetricsCollector(moto_db).sample()
    with meter.measure() as seen:
        supervisor_client.get("/metrics")
    # four latest samples, the totals, the heartbeats, the service level (two reads of the
    # figures' 4 shards), the lines (one: with none configured, nothing more)
    assert seen.calls <= 15


def test_history_panel_draws_a_line_from_samples(supervisor_client, moto_db):
    ShipmentQueue(moto_db).submit({})
    MetricsCollector(moto_db).sample()
    html = supervisor_client.get(reverse("home") + "?panel=history", HTTP_HX_REQUEST="true").content.decode()
    live = re.search(r'data-history="live">(.*?)</tr>', html, re.DOTALL).group(1)
    assert "<polyline" in live and "1 minute sampled" in live
    assert "no samples yet" in re.search(r'data-history="tasks">(.*?)</tr>', html, re.DOTALL).group(1)


def test_capacity_panel_lists_operations(supervisor_client, moto_db, monkeypatch):
    # One minute for the write and the page: this process's current minute is what shows
    # of it (the finished ones are the collector's to write, and none runs here).
    monkeypatch.setattr(meter, "time", SimpleNamespace(time=lambda: 1_800_000_030.0))
    ShipmentQueue(moto_db).submit({})
    html = supervisor_client.get(reverse("home") + "?panel=capacity", HTTP_HX_REQUEST="true").content.decode()
    assert 'data-operation="PutItem"' in html
    assert 'data-figure="expired-leases"' in html


def test_alarms_show_the_dlq_and_backpressure(supervisor_client, moto_db, settings):
    settings.SWITCHBOARD_FAIRNESS = {**settings.SWITCHBOARD_FAIRNESS, "backlog_bounds": {"live": 1, "calls": 100}}
    queue = ShipmentQueue(moto_db)
    queue.submit({}, shipment_id="old")
    queue.submit({}, shipment_id="new")
    queue.submit({}, shipment_id="bad")
    queue.send_to_dlq("bad", "broken label")
    html = supervisor_client.get(reverse("home") + "?panel=shipments", HTTP_HX_REQUEST="true").content.decode()
    assert "1 in the dead-letter queue" in html
    assert "backpressure: 2 waiting, past the bound of 1" in html
    assert "oldest item waited" not in html  # the default threshold is 15 minutes


def test_an_old_item_raises_the_age_alarm(supervisor_client, moto_db, settings):
    settings.SWITCHBOARD_ALARMS = {"oldest_age_seconds": {"live": 0.0, "calls": 0.0, "tasks": 0.0}}
    ShipmentQueue(moto_db).submit({})
    CallCenter(moto_db).create_call({})
    for name in ("shipments", "calls"):
        html = supervisor_client.get(reverse("home") + f"?panel={name}", HTTP_HX_REQUEST="true").content.decode()
        assert "oldest item waited" in html, name


def test_no_alarm_when_all_is_well(supervisor_client, moto_db):
    ShipmentQueue(moto_db).submit({})
    html = supervisor_client.get(reverse("home")).content.decode()
    assert 'class="alarms"' not in html


def test_open_tabs_share_one_read_of_a_panel_until_a_change(supervisor_client, moto_db, settings):
    from django.core.cache import cache

    cache.clear()
    settings.SWITCHBOARD_PANEL_CACHE_SECONDS = 60
    agent = CallCenter(moto_db).agents.create("Ada", {"language": ["French"], "gender": ["F"]})
    url = reverse("home") + "?panel=calls"
    supervisor_client.get(url, HTTP_HX_REQUEST="true")
    with meter.measure() as seen:
        again = supervisor_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert seen.calls == 0  # a second tab, or the next poll: no request
    assert figure(again, "agents-queued") == "0"
    # A change made through the pages forgets the cached figures.
    supervisor_client.post(
        reverse("agent-available", args=[agent.agent_id]), shown(agent.agent_id), HTTP_HX_REQUEST="true"
    )
    after = supervisor_client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert figure(after, "agents-queued") == "1"
    cache.clear()


CALLS_PANEL = "/?panel=calls"


def queued_on_the_panel(client) -> str:
    return figure(client.get(CALLS_PANEL, HTTP_HX_REQUEST="true").content.decode(), "agents-queued")


@pytest.fixture
def cached_panels(client, staff, moto_db, settings):
    """A staff member's client with the calls panel cached (no agent queued) and an
    offline agent; the cache emptied before and after."""
    from django.core.cache import cache

    assert reverse("home") + "?panel=calls" == CALLS_PANEL
    cache.clear()
    settings.SWITCHBOARD_PANEL_CACHE_SECONDS = 60
    agent = CallCenter(moto_db).agents.create("Ada", {"language": ["French"], "gender": ["F"]})
    client.force_login(staff)
    assert queued_on_the_panel(client) == "0"
    yield client, agent
    cache.clear()


@pytest.mark.parametrize("source", ["page", "admin"])
def test_a_supervisors_own_change_shows_at_once_for_them_then_for_everyone(cached_panels, supervisor, source):
    client, agent = cached_panels
    other = type(client)()
    other.force_login(supervisor)
    if source == "page":
        response = client.post(
            reverse("agent-available", args=[agent.agent_id]), shown(agent.agent_id), HTTP_HX_REQUEST="true"
        )
        assert response.status_code == 200
    else:
        response = client.post(
            reverse("admin:queues_app_agententry_changelist"),
            {"action": "enqueue", "ids": [ticked(agent.agent_id)], "confirmed": "1"},
        )
        assert response.status_code == 302
    # Another supervisor's poll before the change is seen keeps the shared figures...
    assert queued_on_the_panel(other) == "0"
    # ...the one who made it reads afresh, and that read is everyone's from then on.
    assert queued_on_the_panel(client) == "1"
    with meter.measure() as seen:
        assert queued_on_the_panel(other) == "1"
    assert seen.calls == 0


@pytest.mark.parametrize("source", ["api", "worker"])
def test_changes_from_the_phone_system_or_a_worker_show_when_the_cache_expires(
    cached_panels, staff, moto_db, settings, monkeypatch, source
):
    from django.core.cache import cache

    from queues_app.monitoring import shared as figures

    client, agent = cached_panels
    # A minute, on the figures' clock that the test moves: the cache's own backstop (in real
    # time, a second more) cannot run out first on a slow machine.
    settings.SWITCHBOARD_PANEL_CACHE_SECONDS = 60
    moment = [figures.now()]
    monkeypatch.setattr(figures, "now", lambda: moment[0])
    cache.clear()  # filled again on the clock of this test
    assert queued_on_the_panel(client) == "0"
    if source == "api":
        token = ApiToken.issue(staff, name="phone")[1]
        phone_system = type(client)()  # no session: a token only
        response = phone_system.post(
            reverse("api-agent-available", args=[agent.agent_id]),
            data=f'{{"version": {agent.version}}}',
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
        assert response.status_code == 200
    else:  # a worker thread of this process, straight through the service
        CallCenter(moto_db).make_available(agent.agent_id)
    # A busy phone system writes on every request: polls keep the cached figures...
    moment[0] += timedelta(seconds=59.9)
    with meter.measure() as seen:
        assert queued_on_the_panel(client) == "0"
    assert seen.calls == 0
    # ...until they are SWITCHBOARD_PANEL_CACHE_SECONDS old.
    moment[0] += timedelta(seconds=0.2)
    assert queued_on_the_panel(client) == "1"


def test_writing_the_metrics_is_not_counted_as_the_cost_of_an_operation(moto_db):
    recorder.count(LIVE, "enqueued", 1)
    with meter.measure() as seen:
        assert MetricsStore(moto_db).flush() >= 1
    assert seen.calls == 0
    assert meter.process_meter.calls_of("UpdateItem") >= 1  # still in the process totals


# --- a scrape only reads, and says no as a program expects ----------------------------

WRITE_OPERATIONS = ("PutItem", "UpdateItem", "BatchWriteItem", "TransactWriteItems", "DeleteItem")


def writes_by_this_process() -> dict[str, int]:
    return {op: meter.process_meter.calls_of(op) for op in WRITE_OPERATIONS}


def test_a_scrape_with_nobody_sampling_writes_nothing_and_still_has_the_figures(supervisor_client, moto_db):
    queue = ShipmentQueue(moto_db)
    for _ in range(2):
        queue.submit({})
    recorder.count(LIVE, "enqueued", 7)  # counts waiting for a flush: a scrape must not write them
    assert MetricsStore(moto_db).latest(LIVE) is None  # no sample yet: the scrape reads the queues itself
    before = writes_by_this_process()
    with meter.measure() as seen:
        response = supervisor_client.get("/metrics")
    assert response.status_code == 200
    assert {op: seen.calls_of(op) for op in WRITE_OPERATIONS} == dict.fromkeys(WRITE_OPERATIONS, 0)
    assert writes_by_this_process() == before  # metrics housekeeping included
    assert MetricsStore(moto_db).latest(LIVE) is None  # nothing was sampled into the table
    text = response.content.decode()
    assert 'switchboard_queue_depth{queue="live"} 2.0' in text
    assert 'switchboard_queue_depth{queue="calls"} 0.0' in text


def test_a_scrape_with_an_old_sample_reads_fresh_figures_without_writing(supervisor_client, moto_db, clock):
    queue = ShipmentQueue(moto_db)
    queue.submit({})
    clock.advance(-600)  # a sample taken ten minutes ago, by a collector since stopped
    MetricsCollector(moto_db, clock=clock).sample()
    queue.submit({})
    before = writes_by_this_process()
    with meter.measure() as seen:
        text = supervisor_client.get("/metrics").content.decode()
    assert sum(seen.calls_of(op) for op in WRITE_OPERATIONS) == 0
    assert writes_by_this_process() == before
    assert 'switchboard_queue_depth{queue="live"} 2.0' in text  # now, not the old sample's 1


@pytest.fixture
def outage(settings, aws_credentials):
    from queues_app.ddb.client import reset_default
    from queues_app.ddb.local import free_port

    settings.DYNAMODB_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}"
    settings.DYNAMODB_MAX_ATTEMPTS = 1
    settings.DYNAMODB_CONNECT_TIMEOUT = 0.5
    reset_default()
    yield settings.DYNAMODB_ENDPOINT_URL
    reset_default()


PROMETHEUS_ACCEPT = "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1"
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


def test_an_outage_is_a_text_503_with_retry_after_for_a_token_scraper(client, supervisor, outage):
    token = ApiToken.issue(supervisor, "prometheus")[1]
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}", HTTP_ACCEPT=PROMETHEUS_ACCEPT)
    assert response.status_code == 503
    assert response["Content-Type"].startswith("text/plain")
    assert int(response["Retry-After"]) > 0
    body = response.content.decode()
    assert body.startswith("503 DynamoDB unavailable")
    assert "<" not in body and outage not in body and "Traceback" not in body


@pytest.mark.parametrize("accept", [None, BROWSER_ACCEPT, "application/json"])
def test_an_outage_is_a_json_503_with_retry_after_for_a_logged_in_person(supervisor_client, outage, accept):
    headers = {"HTTP_ACCEPT": accept} if accept else {}
    response = supervisor_client.get("/metrics", **headers)
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/json")
    assert int(response["Retry-After"]) > 0
    body = response.json()
    assert body["error"] == "DynamoDB unavailable" and body["trace_id"] == response["X-Trace-Id"]
    assert outage not in response.content.decode()


def test_a_scraper_without_a_token_is_told_in_text_when_it_reads_text(client, db):
    response = client.get("/metrics", HTTP_ACCEPT=PROMETHEUS_ACCEPT)
    assert response.status_code == 401
    assert response["Content-Type"].startswith("text/plain") and response["WWW-Authenticate"].startswith("Bearer")
