"""`run_shipment_worker --concurrency N`: its bounds (the threads themselves are tested
on DynamoDB Local, tests/integration/test_worker_concurrency_local.py)."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError


@pytest.mark.parametrize("value", ["0", "65", "-1", "two", "1.5"])
def test_concurrency_is_a_whole_number_from_1_to_64(moto_db, value):
    with pytest.raises(CommandError) as caught:
        call_command("run_shipment_worker", "--until-empty", "--concurrency", value, stdout=io.StringIO())
    assert "argument --concurrency: expected a whole number from 1 to 64" in str(caught.value)


def test_one_thread_is_the_default_and_drains_the_queue(moto_db):
    from queues_app.shipments.queue import ShipmentQueue

    queue = ShipmentQueue(moto_db)
    queue.submit({}, shipment_id="a")
    out = io.StringIO()
    call_command("run_shipment_worker", "--until-empty", "--fail-share", "0", "--work-seconds", "0.01", stdout=out)
    assert "at once" not in out.getvalue() and "1 completed" in out.getvalue()
