"""Backpressure, tenant rate limits, sidelining and the fair consumer."""

from datetime import timedelta
from types import SimpleNamespace

import pytest

from queues_app.admission import BacklogBounds, BackpressureGate, ShipmentAdmission
from queues_app.ddb import meter
from queues_app.ddb.errors import Backpressure
from queues_app.figures import counters
from queues_app.shipments import fairness
from queues_app.shipments.fairness import FairConsumer, FairnessPolicy, SweepSchedule, TenantLimiter
from queues_app.shipments.queue import DEFAULT_QUEUE, SPILLOVER_QUEUE, ShipmentQueue, ShipmentState


@pytest.fixture(autouse=True)
def fresh_gate():
    BackpressureGate.forget()
    yield
    BackpressureGate.forget()


def policy(**overrides) -> FairnessPolicy:
    return FairnessPolicy(**overrides)


def test_submit_queues_a_shipment_in_one_request_visible_at_once(moto_db):
    queue = ShipmentQueue(moto_db)
    with meter.measure() as seen:
        shipment = queue.submit({"to": "Oslo"}, priority=3, tenant="acme", trace_id="t-1")
    assert seen.calls_of("PutItem") == 1
    assert shipment.state == ShipmentState.QUEUED
    lease = queue.receive()
    assert lease.shipment.shipment_id == shipment.shipment_id
    assert lease.shipment.trace_id == "t-1" and lease.shipment.tenant == "acme"


def test_submit_with_a_delay_is_invisible_until_then(moto_db, clock):
    queue = ShipmentQueue(moto_db, clock=clock)
    shipment = queue.submit({}, delay_seconds=30)
    assert shipment.state == ShipmentState.DELAYED
    assert queue.receive() is None
    clock.advance(31)
    assert queue.receive().shipment.shipment_id == shipment.shipment_id


def test_backpressure_refuses_past_the_bound_with_a_retry_after(moto_db):
    bounds = BacklogBounds({"live": 2}, retry_after_seconds=7, depth_cache_seconds=0)
    admission = ShipmentAdmission(moto_db, policy(), bounds)
    for _ in range(3):
        admission.submit({})  # 0, 1, 2 queued before each: the third still fits (depth 2 is not past 2)
    with pytest.raises(Backpressure) as refused:
        admission.submit({})
    assert refused.value.retry_after == 7
    assert "past its bound of 2" in refused.value.message
    assert ShipmentQueue(moto_db).count_queued() == 3


def test_a_tenant_over_its_rate_is_sidelined_and_others_are_not(moto_db, clock):
    rules = policy(tenant_rate=2, tenant_rates={"big": 1})
    admission = ShipmentAdmission(moto_db, rules)
    admission.limiter = TenantLimiter(moto_db, rules, clock=clock)
    queues = [admission.submit({}, tenant="small").shipment.queue for _ in range(3)]
    assert queues == [DEFAULT_QUEUE, DEFAULT_QUEUE, SPILLOVER_QUEUE]
    big = [admission.submit({}, tenant="big") for _ in range(2)]
    assert [a.sidelined for a in big] == [False, True]
    clock.advance(1.0)  # a new one-second window
    assert admission.submit({}, tenant="small").sidelined is False


def test_slow_rates_use_longer_windows(moto_db):
    limiter = TenantLimiter(moto_db, policy(tenant_rate=0.2))
    assert limiter.window("x") == (5, 1)


def test_stale_live_work_is_sidelined_and_fresh_work_is_served_first(moto_db, clock):
    queue = ShipmentQueue(moto_db, clock=clock)
    old = [queue.submit({"n": n}, priority=n % 3).shipment_id for n in range(4)]
    clock.advance(400)
    fresh = queue.submit({"n": "fresh"}).shipment_id
    consumer = FairConsumer(queue, policy(spillover_after_seconds=300), sweep_seconds=0, schedule=SweepSchedule())
    first = consumer.receive()
    assert first.shipment.shipment_id == fresh  # the old ones went to the spillover queue
    assert sorted(s.shipment_id for s in queue.list_queue(SPILLOVER_QUEUE).items) == sorted(old)
    # Live is caught up: the spillover queue is worked, in its own priority order.
    taken = [consumer.receive().shipment for _ in range(4)]
    assert sorted(s.shipment_id for s in taken) == sorted(old)
    assert [s.priority for s in taken] == sorted((s.priority for s in taken), reverse=True)
    assert consumer.receive() is None


def test_sidelining_counts_in_the_metrics(moto_db, clock):
    queue = ShipmentQueue(moto_db, clock=clock)
    queue.submit({})
    clock.advance(600)
    assert len(queue.sideline_stale(300)) == 1
    counters.MetricsStore(moto_db).flush()
    totals = counters.MetricsStore(moto_db).totals()
    assert totals[DEFAULT_QUEUE]["sidelined"] >= 1
    assert totals[DEFAULT_QUEUE]["enqueued"] >= 1


def test_sideline_reads_only_stale_entries(moto_db, clock):
    queue = ShipmentQueue(moto_db, clock=clock)
    for _ in range(3):
        queue.submit({})
    clock.advance(timedelta(seconds=10).total_seconds())
    assert queue.sideline_stale(300) == []
    assert queue.count_queued() == 3


def test_consumers_of_one_process_take_turns_to_sweep(moto_db, clock, monkeypatch):
    # The schedule's monotonic clock moves only when the test says so: however slow the
    # machine, the second receive comes before the next sweep is due.
    moment = [1000.0]
    monkeypatch.setattr(fairness, "time", SimpleNamespace(monotonic=lambda: moment[0]))
    queue = ShipmentQueue(moto_db, clock=clock)
    schedule = SweepSchedule()
    rules = policy(spillover_after_seconds=8)
    first = FairConsumer(queue, rules, sweep_seconds=0.5, schedule=schedule)
    second = FairConsumer(queue, rules, sweep_seconds=0.5, schedule=schedule)
    assert first.idle_seconds == 2.0  # a quarter of the bound
    with meter.measure() as seen:
        first.receive()  # sweeps: nothing stale, so the next sweep is two seconds off
        second.receive()  # does not sweep again
    # one sweep (a Query per priority level), then two receives of two queues (due, then ready)
    assert seen.calls_of("Query") == 10 + 4 + 4
    moment[0] += 2.0  # two seconds later: the next sweep is due, whichever consumer comes
    with meter.measure() as seen:
        second.receive()
    assert seen.calls_of("Query") == 10 + 4
