"""Commands that did not do all they were asked exit non-zero and say what is missing on
one line; DynamoDB trouble in a one-shot run is a one-line error, not a traceback."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.ddb.tables import TABLES
from queues_app.shipments.queue import ShipmentQueue, ShipmentState
from queues_app.tasks.processor import LEASE_NAME
from queues_app.tasks.processor_lease import processor_lease
from queues_app.tasks.queue import TaskQueue, TaskStatus


def fails(name, *args, error=CommandError, **options):
    """Run a command that must fail; its error message and what it wrote."""
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(error) as caught:
        call_command(name, *args, stdout=out, stderr=err, **options)
    message = str(caught.value)
    assert "\n" not in message, message
    return message, out.getvalue()


# --- restore_shipments ------------------------------------------------------------------


@pytest.fixture
def shipments(moto_db):
    queue = ShipmentQueue(moto_db)
    for sid in ("dead1", "dead2", "waiting"):
        queue.create({}, shipment_id=sid, ready=True)
        queue.enqueue(sid)
    for sid in ("dead1", "dead2"):
        queue.send_to_dlq(sid, "bad address")
    return queue


def test_restoring_an_unknown_id_exits_non_zero_and_names_it(shipments):
    message, out = fails("restore_shipments", "nosuchid")
    assert message == "Restored 0 of 1 shipment(s); not restored: nosuchid (No shipment with id 'nosuchid')."
    assert "skipped nosuchid" in out


def test_restoring_some_names_each_one_left_and_why(shipments):
    message, _ = fails("restore_shipments", "dead1", "waiting", "nosuchid", "dead1")
    assert message.startswith("Restored 1 of 3 shipment(s); not restored: ")  # dead1 once, as given first
    assert "waiting (not in the DLQ (queued))" in message
    assert "nosuchid (No shipment with id 'nosuchid')" in message
    assert shipments.get("dead1").state == ShipmentState.QUEUED
    assert shipments.get("dead2").state == ShipmentState.IN_DLQ


def test_restoring_all_of_them_exits_zero(shipments):
    out = io.StringIO()
    call_command("restore_shipments", "dead1", "dead2", "--rate", "100", stdout=out)
    assert "Restored 2 of 2 shipment(s)." in out.getvalue()


def test_a_dry_run_with_ids_says_which_would_be_skipped(shipments):
    message, out = fails("restore_shipments", "dead1", "waiting", "--dry-run")
    assert "Would restore 1 shipment(s): dead1" in out
    assert "would skip waiting: not in the DLQ (queued)" in out
    assert message == "1 of 2 could not be restored: waiting (not in the DLQ (queued))."
    assert shipments.get("dead1").state == ShipmentState.IN_DLQ  # nothing changed


def test_a_filter_that_matches_nothing_is_not_a_failure(shipments):
    out = io.StringIO()
    call_command("restore_shipments", "--reason", "customs", stdout=out)
    assert "No shipment in the 'live' DLQ matches; nothing to restore." in out.getvalue()


def test_many_left_are_counted_on_the_one_line(shipments):
    ids = [f"ghost{i}" for i in range(8)]
    message, _ = fails("restore_shipments", *ids, "--rate", "1000")
    assert "ghost4 (No shipment with id 'ghost4') and 3 more." in message
    assert "ghost5" not in message


# --- dynamo_tables ----------------------------------------------------------------------


def test_a_delete_that_is_not_confirmed_exits_non_zero(moto_db, monkeypatch):
    from queues_app.management.commands import dynamo_tables

    monkeypatch.setattr(dynamo_tables.Command, "stdin_isatty", staticmethod(lambda: True))
    monkeypatch.setattr("builtins.input", lambda prompt: "no")
    message, _ = fails("dynamo_tables", "delete")
    assert message == "Nothing deleted: not confirmed."
    out = io.StringIO()
    call_command("dynamo_tables", "describe", stdout=out)  # every table still there: exit 0
    assert "missing" not in out.getvalue()


def test_describe_names_the_missing_tables(moto_empty):
    message, _ = fails("dynamo_tables", "describe")
    assert message.startswith(f"{len(TABLES)} table(s) missing: test-")
    assert message.endswith("create them with `python manage.py dynamo_tables create`.")


# --- DynamoDB trouble in one-shot runs ---------------------------------------------------


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("check_invariants", ["--once"]),
        ("collect_metrics", ["--once"]),
        ("escalate_callers", ["--once"]),
        ("escalate_callers", []),
        ("restore_shipments", ["x"]),
        ("restore_shipments", ["--reason", "x"]),
        ("seed_demo", ["--agents", "1"]),
        ("run_shipment_worker", ["--until-empty"]),
        ("run_task_processor", ["--until-empty", "--no-streams"]),
    ],
)
def test_a_missing_table_is_one_line_naming_it(moto_empty, name, args):
    message, _ = fails(name, *args)
    assert "does not exist. (endpoint: AWS DynamoDB (us-east-1))" in message
    assert "create the tables with `python manage.py dynamo_tables create`" in message


def test_collect_metrics_once_shows_the_sample(moto_db):
    out = io.StringIO()
    call_command("collect_metrics", "--once", stdout=out)
    assert "live: depth 0" in out.getvalue()


# --- run_task_processor --until-empty ----------------------------------------------------


def test_a_processor_that_never_held_the_lease_exits_non_zero(moto_db):
    tasks = TaskQueue(moto_db)
    tasks.create(task_id="waits")
    assert processor_lease(moto_db, name=LEASE_NAME, holder="elsewhere", duration=60).acquire()
    message, out = fails(
        "run_task_processor",
        "--until-empty",
        "--time-box",
        "1",
        "--no-streams",
        "--holder",
        "me",
    )
    assert message == "The processor lease was never held (elsewhere holds it); no task was processed."
    assert "0 leases held" in out
    assert tasks.get("waits").status == TaskStatus.PENDING


def test_a_processor_that_emptied_the_queue_exits_zero(moto_db):
    TaskQueue(moto_db).create(task_id="one")
    out = io.StringIO()
    call_command(
        "run_task_processor", "--until-empty", "--no-streams", "--rate", "100", "--fail-share", "0", stdout=out
    )
    assert "1 processed" in out.getvalue()
