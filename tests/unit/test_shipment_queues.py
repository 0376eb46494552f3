"""Named shipment queues as an operations team uses them: configured through the API with
their own lease, retries, backoff and tenant rate, shipments sent to them, received and
retried by their settings, dead-lettered and restored in their own DLQ, and removed once
empty; `live` is there without any configuration."""

import io

import pytest
from django.core.management import CommandError, call_command

from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from queues_app.ddb.clock import from_iso, now
from queues_app.shipments.named import NamedQueues
from queues_app.shipments.queue import ShipmentQueue, ShipmentState, ShipmentStatus
from tests.helpers.api import assert_problem


def put_queue(api, queue_id, **settings):
    return api.put(f"/api/shipment-queues/{queue_id}", settings)


def test_live_is_there_unconfigured_with_the_deployments_settings(moto_db, api, settings):
    settings.SWITCHBOARD_SHIPMENT_RETRY = {"max_receives": 4}
    queues = api.get("/api/shipment-queues").json()["queues"]
    assert [(q["queue_id"], q["version"], q["max_receives"], q["visibility_timeout_seconds"]) for q in queues] == [
        ("live", 0, 4, 30)
    ]
    assert api.get("/api/shipment-queues/returns").status_code == 404


def test_a_queue_is_created_changed_from_its_version_replayed_and_a_stale_change_refused(moto_db, api):
    created = put_queue(api, "returns", name="Returns", visibility_timeout_seconds=120, max_receives=2)
    assert created.status_code == 201 and created["Location"] == "/api/shipment-queues/returns"
    assert (created.json()["version"], created.json()["visibility_timeout_seconds"]) == (1, 120)
    changed = put_queue(api, "returns", name="Returns", visibility_timeout_seconds=60, version=1)
    assert changed.status_code == 200 and changed.json()["version"] == 2
    again = put_queue(api, "returns", name="Returns", visibility_timeout_seconds=60, version=1)  # a retry
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true" and again.json()["version"] == 2
    stale = assert_problem(put_queue(api, "returns", name="Returns", tenant_rate=5, version=1), 409)
    assert "at version 2" in stale["message"]
    entries = AuditTrail().for_target(target("shipment-queue", "returns")).entries
    assert [entry.action for entry in entries] == ["shipment_queue.update", "shipment_queue.create"]


@pytest.mark.parametrize(
    "given, field",
    [
        ({"visibility_timeout_seconds": 0}, "visibility_timeout_seconds"),
        ({"visibility_timeout_seconds": 1.5}, "visibility_timeout_seconds"),
        ({"max_receives": 0}, "max_receives"),
        ({"backoff_base_seconds": 60, "backoff_max_seconds": 10}, "backoff_max_seconds"),
        ({"tenant_rate": -1}, "tenant_rate"),
        ({"tenant_rate": 1e-308}, "tenant_rate"),  # below a thousandth
        ({"name": "Re\u202eturns"}, "name"),
    ],
)
def test_a_bad_setting_is_a_400_naming_it_and_nothing_is_stored(moto_db, api, given, field):
    body = assert_problem(put_queue(api, "returns", **given), 400)
    assert field in body["fields"], body
    assert NamedQueues(moto_db).configured() == []


def test_the_systems_own_queues_and_bad_ids_are_refused(moto_db, api):
    assert "queue_id" in assert_problem(put_queue(api, "spillover"), 400)["fields"]
    assert "queue_id" in assert_problem(put_queue(api, "callbacks"), 400)["fields"]
    assert put_queue(api, "no%20spaces").status_code in (400, 404)


def test_a_shipment_goes_to_its_queue_and_an_unknown_queue_is_a_400_naming_it(moto_db, api):
    put_queue(api, "returns", name="Returns")
    sent = api.post("/api/shipments", {"data": {"to": "Lyon"}, "queue": "returns"})
    assert sent.status_code == 201 and sent.json()["queue"] == "returns" and sent.json()["state"] == "queued"
    assert api.get("/api/shipment-queues/returns").json()["queued"] == 1
    assert api.get("/api/shipment-queues/live").json()["queued"] == 0
    body = assert_problem(api.post("/api/shipments", {"data": {}, "queue": "outbound"}), 400)
    assert "outbound" in body["fields"]["queue"] and "live, returns" in body["fields"]["queue"]


def test_a_queue_leases_retries_and_dead_letters_by_its_own_settings(moto_db, api, clock):
    put_queue(api, "returns", visibility_timeout_seconds=120, max_receives=2, backoff_base_seconds=40)
    api.post("/api/shipments", {"data": {"to": "Lyon"}, "queue": "returns"})
    queue = ShipmentQueue(moto_db, clock=clock)
    assert queue.receive() is None  # live holds nothing
    lease = queue.receive("returns")
    assert round((lease.deadline - clock()).total_seconds()) == 120
    failed = queue.fail(lease.shipment.shipment_id, lease.receipt, "carrier down")
    retry_in = (from_iso(failed.visible_at) - clock()).total_seconds()
    assert failed.state == ShipmentState.DELAYED and 20 <= retry_in <= 40  # half to all of the first backoff
    clock.advance(41)
    lease = queue.receive("returns")
    dead = queue.fail(lease.shipment.shipment_id, lease.receipt, "carrier down again")
    assert dead.status == ShipmentStatus.IN_DLQ and "maximum 2" in dead.dlq_reason
    assert [s.shipment_id for s in queue.list_dlq("returns").items] == [dead.shipment_id]
    assert queue.list_dlq().items == []  # live's DLQ is its own
    restored = queue.restore(dead.shipment_id).item
    assert (restored.state, restored.queue) == (ShipmentState.QUEUED, "returns")


def test_a_tenant_over_a_queues_rate_is_refused_with_retry_after(moto_db, api, monkeypatch):
    import functools

    from queues_app import admission
    from queues_app.shipments.fairness import TenantLimiter

    # One moment for the three: a second ticking over between them would open a new window.
    moment = now()
    monkeypatch.setattr(admission, "TenantLimiter", functools.partial(TenantLimiter, clock=lambda: moment))
    put_queue(api, "returns", tenant_rate=2)
    sent = [api.post("/api/shipments", {"data": {}, "queue": "returns", "tenant": "acme"}) for _ in range(3)]
    assert [answer.status_code for answer in sent] == [201, 201, 429]
    assert int(sent[2]["Retry-After"]) >= 1 and "acme" in sent[2].json()["message"]
    other = api.post("/api/shipments", {"data": {}, "queue": "returns", "tenant": "globex"})
    assert other.status_code == 201  # each tenant its own share


def test_a_queue_is_removed_from_its_version_once_it_holds_nothing(moto_db, api, clock):
    put_queue(api, "returns")
    api.post("/api/shipments", {"data": {}, "queue": "returns"})
    held = assert_problem(api.delete("/api/shipment-queues/returns?version=1"), 409)
    assert "holds 1 shipment:" in held["message"]
    queue = ShipmentQueue(moto_db, clock=clock)
    lease = queue.receive("returns")
    queue.complete(lease.shipment.shipment_id, lease.receipt)
    assert_problem(api.delete("/api/shipment-queues/returns?version=2"), 409)  # not the version read
    removed = api.delete("/api/shipment-queues/returns?version=1")
    assert removed.status_code == 200 and removed.json()["queue_id"] == "returns"
    assert [q["queue_id"] for q in api.get("/api/shipment-queues").json()["queues"]] == ["live"]


def test_the_worker_takes_a_named_queue_with_its_lease_and_refuses_an_unknown_one(moto_db, api):
    put_queue(api, "returns", visibility_timeout_seconds=90)
    api.post("/api/shipments", {"data": {"to": "Oslo"}, "queue": "returns"})
    out = io.StringIO()
    call_command("run_shipment_worker", queue="returns", fail_share=0, work_seconds=0, until_empty=True, stdout=out)
    assert "Shipment worker on queue 'returns' (lease 90s)" in out.getvalue()
    assert api.get("/api/shipment-queues/returns").json()["queued"] == 0
    with pytest.raises(
        CommandError, match=r"^No shipment queue 'outbound': the queues are live, returns, spillover\.$"
    ):
        call_command("run_shipment_worker", queue="outbound", until_empty=True)


def test_the_shipments_page_has_a_tab_for_each_named_queue_and_lists_its_own(moto_db, api, supervisor_client):
    put_queue(api, "returns")
    sent = api.post("/api/shipments", {"data": {"to": "Porto"}, "queue": "returns"}).json()
    page = supervisor_client.get("/shipments/").content.decode()
    assert 'data-tab="returns"' in page and sent["shipment_id"] not in page  # live's list
    own = supervisor_client.get("/shipments/?queue=returns&view=queue").content.decode()
    assert sent["shipment_id"] in own and 'data-tab="live"' in own


def test_each_named_queue_has_its_figures_on_metrics(moto_db, api, supervisor_client):
    put_queue(api, "returns")
    api.post("/api/shipments", {"data": {}, "queue": "returns"})
    api.post("/api/shipments", {"data": {}, "queue": "returns", "delay_seconds": 60})
    text = supervisor_client.get("/metrics").content.decode()
    assert 'switchboard_queue_depth{queue="returns"} 2.0' in text  # queued and delayed
    assert 'switchboard_queue_depth{queue="live"} 0.0' in text
    assert "calls" in assert_problem(put_queue(api, "calls"), 400)["message"]  # the figures' own names


def test_seconds_are_kept_to_the_thousandth_and_a_tiny_one_is_none(moto_db, api):
    """A number DynamoDB cannot store (under 1e-130) was a 500; seconds are kept to the ms."""
    tiny = put_queue(api, "returns", name="Returns", backoff_base_seconds=1.1125369292536007e-308)
    assert tiny.status_code == 201, tiny.json()
    assert tiny.json()["backoff_base_seconds"] == 0
    fine = put_queue(api, "returns", name="Returns", backoff_base_seconds=1.23456, version=1).json()
    assert fine["backoff_base_seconds"] == 1.235
