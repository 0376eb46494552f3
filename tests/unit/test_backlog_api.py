"""Enqueueing shipments through the API: delay, tenants over their rate sidelined,
backpressure answered 429 with Retry-After, and trace ids carried along."""

import functools
import logging

import pytest

from queues_app import admission
from queues_app.admission import BackpressureGate
from queues_app.audit.store import AuditTrail
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.shipments.fairness import TenantLimiter
from queues_app.shipments.queue import ShipmentQueue, ShipmentState
from tests.helpers.api import assert_problem
from tests.helpers.clock import ManualClock


@pytest.fixture(autouse=True)
def fresh_gate():
    BackpressureGate.forget()
    yield
    BackpressureGate.forget()


@pytest.fixture
def fairness(settings):
    def configure(**overrides):
        settings.SWITCHBOARD_FAIRNESS = {**settings.SWITCHBOARD_FAIRNESS, "depth_cache_seconds": 0, **overrides}

    configure()
    return configure


def test_a_shipment_is_enqueued_live_with_its_trace_id(api, moto_db, fairness):
    response = api.post(
        "/api/shipments", {"data": {"to": "Porto"}, "tenant": "acme", "priority": 4}, HTTP_X_TRACE_ID="order-77"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["queue"], body["sidelined"], body["state"], body["trace_id"]) == ("live", False, "queued", "order-77")
    assert response["X-Trace-Id"] == "order-77"
    shipment = ShipmentQueue().get(body["shipment_id"])
    assert shipment.trace_id == "order-77" and shipment.priority == 4
    entry = AuditTrail().for_target(f"shipment:{shipment.shipment_id}").entries[0]
    assert (entry.action, entry.source, entry.trace_id) == ("shipment.enqueue", "api", "order-77")


def test_a_trace_id_is_made_up_when_none_or_a_bad_one_is_given(api, moto_db, fairness):
    response = api.post("/api/shipments", {"data": {}}, HTTP_X_TRACE_ID="bad id with spaces")
    made_up = response["X-Trace-Id"]
    assert made_up != "bad id with spaces" and len(made_up) == 16
    assert response.json()["trace_id"] == made_up


def test_log_lines_written_during_a_request_carry_its_trace_id(rf, caplog):
    from django.http import HttpResponse

    from queues_app.tracing import TraceIdFilter, TraceIdMiddleware

    def view(request):
        logging.getLogger("queues_app.test").warning("working on it")
        return HttpResponse("ok")

    caplog.handler.addFilter(TraceIdFilter())
    with caplog.at_level(logging.WARNING, logger="queues_app"):
        response = TraceIdMiddleware(view)(rf.get("/", HTTP_X_TRACE_ID="trace-log-1"))
        logging.getLogger("queues_app.test").warning("outside any request")
    assert response["X-Trace-Id"] == "trace-log-1"
    assert [r.trace_id for r in caplog.records] == ["trace-log-1", "-"]
    # The project's log format prints it.
    handler = logging.getLogger("queues_app").handlers[0]
    assert "%(trace_id)s" in handler.formatter._fmt


def test_a_delayed_shipment_is_not_visible_before_its_time(api, moto_db, fairness):
    body = api.post("/api/shipments", {"data": {}, "delay_seconds": 60}).json()
    assert body["state"] == "delayed" and body["visible_at"]
    assert ShipmentQueue().receive() is None


@pytest.fixture
def limiter_clock(monkeypatch):
    """The tenants' rate windows on a clock the test moves: it starts on a whole second,
    and no time passes between requests unless the test says so."""
    clock = ManualClock()
    clock.moment = clock.moment.replace(microsecond=0)
    monkeypatch.setattr(admission, "TenantLimiter", functools.partial(TenantLimiter, clock=clock))
    return clock


def test_a_tenant_over_its_rate_goes_to_the_spillover_queue(api, moto_db, fairness, limiter_clock):
    fairness(tenant_rates={"noisy": 2})

    def send(tenant, n):
        body = api.post("/api/shipments", {"data": {"n": n}, "tenant": tenant}).json()
        return body["queue"], body["sidelined"]

    # Within one second, two go live and the rest are sidelined.
    assert [send("noisy", n) for n in range(4)] == [("live", False)] * 2 + [("spillover", True)] * 2
    assert send("quiet", 0) == ("live", False)  # another tenant has its own rate
    limiter_clock.advance(1)  # the next second's window lets two more through
    assert [send("noisy", n) for n in range(3)] == [("live", False)] * 2 + [("spillover", True)]


def test_backpressure_answers_429_with_retry_after_and_changes_nothing(api, moto_db, fairness):
    fairness(backlog_bounds={"live": 1, "calls": 1}, retry_after_seconds=9)
    assert api.post("/api/shipments", {"data": {}}).status_code == 201
    assert api.post("/api/shipments", {"data": {}}).status_code == 201  # depth 1 is not past 1
    refused = api.post("/api/shipments", {"data": {"n": 3}})
    assert_problem(refused, 429, "Queue backlog over its bound")
    assert refused["Retry-After"] == "9"
    assert ShipmentQueue().count_queued() == 2


def test_callers_get_429_while_too_many_wait(api, moto_db, fairness):
    fairness(backlog_bounds={"calls": 1, "live": 100})
    for _ in range(2):
        assert api.post("/api/calls", {"preferences": {}}).json()["status"] == CallStatus.WAITING
    refused = api.post("/api/calls", {"preferences": {}})
    assert_problem(refused, 429)
    assert refused["Retry-After"]
    assert CallCenter().line.count_waiting()[0] == 2


def test_the_calls_page_says_so_under_backpressure(supervisor_client, moto_db, fairness):
    fairness(backlog_bounds={"calls": 0, "live": 100})
    CallCenter().create_call({})
    response = supervisor_client.post(
        "/calls/", {"skill_language": "any", "skill_gender": "any", "priority": 0, "order": "fifo"}
    )
    assert response.status_code == 400
    assert "past its bound" in response.content.decode()
    assert CallCenter().line.count_waiting()[0] == 1


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "data"),
        ({"data": []}, "data"),
        ({"data": {}, "tenant": "a b"}, "tenant"),
        ({"data": {}, "priority": 10}, "priority"),
        ({"data": {}, "delay_seconds": 901}, "delay_seconds"),
        ({"data": {}, "colour": "red"}, "colour"),
    ],
)
def test_bad_shipment_input_is_400_naming_the_field(api, moto_db, fairness, body, field):
    response = api.post("/api/shipments", body)
    assert_problem(response, 400)
    assert field in response.json()["fields"]
    assert ShipmentQueue().count_queued() == 0


def test_an_idempotent_retry_returns_the_first_shipment(api, moto_db, fairness):
    first = api.post("/api/shipments", {"data": {"n": 1}}, HTTP_IDEMPOTENCY_KEY="ship-1")
    again = api.post("/api/shipments", {"data": {"n": 1}}, HTTP_IDEMPOTENCY_KEY="ship-1")
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["shipment_id"] == again.json()["shipment_id"]
    assert again["Idempotent-Replayed"] == "true"
    assert ShipmentQueue().count_queued() == 1


def test_the_api_shipment_can_be_read_back(api, moto_db, fairness):
    sid = api.post("/api/shipments", {"data": {"to": "Riga"}}).json()["shipment_id"]
    body = api.get(f"/api/shipments/{sid}").json()
    assert body["data"] == {"to": "Riga"} and body["state"] == ShipmentState.QUEUED
    assert_problem(api.get("/api/shipments/nope"), 404)
