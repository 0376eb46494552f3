import io

import pytest
from django.core.management import CommandError, call_command

from queues_app.shipments.queue import ShipmentQueue, ShipmentState


@pytest.fixture
def dead(moto_db):
    queue = ShipmentQueue(moto_db)
    for sid, reason in (("a", "bad address"), ("b", "carrier down"), ("c", "bad address")):
        queue.create({}, shipment_id=sid, ready=True)
        queue.enqueue(sid)
        queue.send_to_dlq(sid, reason)
    return queue


def test_it_restores_those_matching_the_reason(dead):
    out = io.StringIO()
    call_command("restore_shipments", "--reason", "address", "--rate", "100", stdout=out)
    assert "Restored 2 of 2" in out.getvalue()
    assert dead.get("a").state == ShipmentState.QUEUED and dead.get("c").state == ShipmentState.QUEUED
    assert dead.get("b").state == ShipmentState.IN_DLQ


def test_it_restores_named_ones_and_says_which_it_skipped(dead):
    out = io.StringIO()
    with pytest.raises(CommandError, match="Restored 1 of 2 shipment.*not restored: nope"):
        call_command("restore_shipments", "b", "nope", stdout=out)
    assert "skipped nope" in out.getvalue()


def test_a_dry_run_changes_nothing(dead):
    out = io.StringIO()
    call_command("restore_shipments", "--older-than", "0", "--dry-run", stdout=out)
    assert "Would restore 3 shipment(s)" in out.getvalue()
    assert dead.counts().dlq == 3


def test_it_needs_ids_or_a_filter(dead):
    with pytest.raises(CommandError, match="Name the shipments"):
        call_command("restore_shipments")
    with pytest.raises(CommandError, match="not both"):
        call_command("restore_shipments", "a", "--reason", "x")
