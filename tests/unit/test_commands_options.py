"""Every command refuses a bad option with a one-line reason naming it, before doing
anything. Each case also bounds the run (--until-empty, --once, ...), so that were the
check to go, the test would finish and fail instead of hanging."""

import io
import threading
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.shipments.queue import ShipmentQueue

STAFFING = ["--calls-per-hour", "200", "--aht", "180", "--answer-within", "20", "--service-level", "0.8"]

BAD = [
    # command, arguments, what the error says
    ("check_invariants", ["--once", "--pause", "-1"], "argument --pause: expected a number from 0 to 60, got '-1'"),
    ("check_invariants", ["--once", "--pause", "soon"], "argument --pause: expected a number"),
    ("check_invariants", ["--once", "--pause", "nan"], "argument --pause: expected a number"),
    ("collect_metrics", ["--every", "0"], "argument --every: expected a number from 1 to 3600, got '0'"),
    ("collect_metrics", ["--every", "inf"], "argument --every: expected a number from 1 to 3600, got 'inf'"),
    ("collect_metrics", ["--once", "--every", "5"], "argument --every: not allowed with argument --once"),
    ("dynamo_tables", ["bogus"], "argument action: invalid choice: 'bogus'"),
    ("dynamo_tables", [], "the following arguments are required: action"),
    ("dynamo_tables", ["describe", "--yes"], "--yes confirms delete; it means nothing to describe."),
    ("dynamo_tables", ["create", "--exact"], "--exact counts items for describe; it means nothing to create."),
    ("demo_users", ["--bogus"], "unrecognized arguments: --bogus"),
    ("escalate_callers", ["--every", "0"], "argument --every: expected a number from 0.1 to 3600, got '0'"),
    ("escalate_callers", ["--every", "-3"], "argument --every: expected a number from 0.1 to 3600, got '-3'"),
    ("escalate_callers", ["--once", "--every", "1"], "argument --every: not allowed with argument --once"),
    ("restore_shipments", ["a", "--rate", "0"], "argument --rate: expected a number above 0 and at most 1000"),
    ("restore_shipments", ["a", "--rate", "-2"], "argument --rate: expected a number above 0"),
    ("restore_shipments", ["--reason", "x", "--limit", "0"], "argument --limit: expected a whole number from 1"),
    ("restore_shipments", ["--reason", "x", "--queue", "bogus"], "argument --queue: invalid choice: 'bogus'"),
    ("restore_shipments", ["--older-than", "-1"], "argument --older-than: expected a number from 0 to"),
    ("restore_shipments", ["--reason", "  "], "argument --reason: expected a text that is not blank"),
    ("restore_shipments", ["  "], "argument ids: expected a text that is not blank"),
    (
        "restore_shipments",
        ["--older-than", "60", "--newer-than", "30"],
        "--newer-than 30 is less than --older-than 60: nothing could match.",
    ),
    ("restore_shipments", ["a", "--reason", "x"], "Name shipments or give a filter, not both."),
    ("run_shipment_worker", ["--until-empty", "--visibility", "-5"], "argument --visibility: expected a number from 1"),
    ("run_shipment_worker", ["--until-empty", "--visibility", "0"], "argument --visibility: expected a number from 1"),
    ("run_shipment_worker", ["--until-empty", "--queue", "bogus"], "No shipment queue 'bogus': the queues are live,"),
    (
        "run_shipment_worker",
        ["--until-empty", "--fail-share", "7"],
        "argument --fail-share: expected a number from 0 to 1",
    ),
    ("run_shipment_worker", ["--until-empty", "--max", "0"], "argument --max: expected a whole number of at least 1"),
    ("run_shipment_worker", ["--until-empty", "--work-seconds", "-1"], "argument --work-seconds: expected a number"),
    ("run_shipment_worker", ["--until-empty", "--grace", "-1"], "argument --grace: expected a number from 0"),
    ("run_shipment_worker", ["--until-empty", "--fair", "--queue", "live"], "--fair takes the live queue"),
    ("run_task_processor", ["--until-empty", "--rate", "0"], "argument --rate: expected a number above 0"),
    ("run_task_processor", ["--until-empty", "--lease", "-1"], "argument --lease: expected a number from 1 to 3600"),
    ("run_task_processor", ["--until-empty", "--burst", "0.5"], "argument --burst: expected a number from 1"),
    ("run_task_processor", ["--until-empty", "--fail-share", "-0.1"], "argument --fail-share: expected a number"),
    ("run_task_processor", ["--until-empty", "--time-box", "0"], "argument --time-box: expected a number from 1"),
    ("run_task_processor", ["--until-empty", "--poll", "0"], "argument --poll: expected a number from 0.01"),
    ("run_task_processor", ["--until-empty", "--sweep-every", "0"], "argument --sweep-every: expected a number"),
    ("run_task_processor", ["--until-empty", "--holder", " "], "argument --holder: expected a text that is not blank"),
    (
        "run_task_processor",
        ["--until-empty", "--max-seconds", "0"],
        "argument --max-seconds: expected a number above 0",
    ),
    ("staffing", ["--aht", "180", "--answer-within", "20", "--service-level", "0.8"], "required: --calls-per-hour"),
    ("staffing", [*STAFFING[:1], "-5", *STAFFING[2:]], "argument --calls-per-hour: expected a number from 0"),
    ("staffing", [*STAFFING[:3], "0", *STAFFING[4:]], "argument --aht: expected a number above 0"),
    ("staffing", [*STAFFING[:5], "-1", *STAFFING[6:]], "argument --answer-within: expected a number from 0"),
    ("staffing", [*STAFFING[:7], "1"], "argument --service-level: expected a number above 0 and below 1, got '1'"),
    ("staffing", [*STAFFING[:7], "0"], "argument --service-level: expected a number above 0 and below 1"),
    ("staffing", [*STAFFING[:7], "80"], "argument --service-level: expected a number above 0 and below 1"),
    ("staffing", [*STAFFING, "--agents", "0"], "argument --agents: expected a whole number from 1"),
    ("staffing", [*STAFFING, "--agents", "-3"], "argument --agents: expected a whole number from 1"),
    ("staffing", [*STAFFING, "--agents", "12.5"], "argument --agents: expected a whole number"),
    ("staffing", [*STAFFING, "--shrinkage", "1"], "argument --shrinkage: expected a number of at least 0 and below 1"),
    ("staffing", [*STAFFING, "--shrinkage", "-0.1"], "argument --shrinkage: expected a number of at least 0"),
    ("staffing", [*STAFFING, "--max-occupancy", "0"], "argument --max-occupancy: expected a number above 0"),
    ("staffing", [*STAFFING, "--max-occupancy", "1.2"], "argument --max-occupancy: expected a number above 0"),
    ("staffing", [*STAFFING, "--agents", "9"], "Unstable queue: 9 agents for 10 erlangs"),
    ("staffing", [*STAFFING, "--agents", "10"], "at least 11 agents are needed"),
    ("seed_demo", ["--tasks", "-1"], "argument --tasks: expected a whole number from 0 to 100000, got '-1'"),
    ("seed_demo", ["--agents", "many"], "argument --agents: expected a whole number"),
    ("seed_demo", ["--shipments", "1.5"], "argument --shipments: expected a whole number"),
    ("seed_demo", ["--callers", "100001"], "argument --callers: expected a whole number from 0 to 100000"),
    ("seed_demo", ["--available", "-1"], "argument --available: expected a whole number"),
    ("seed_demo", ["--seed", "abc"], "argument --seed: expected a whole number, got 'abc'"),
]


class OnePass(threading.Event):
    """Stands in for the stop event of the looping commands: the first wait ends the loop."""

    def wait(self, timeout=None):
        self.set()
        return True


@pytest.fixture
def bounded(moto_db, monkeypatch):
    """Tables on moto, and loops that end after one pass."""
    # The loops' own Event only (collect_metrics, escalate_callers): thread pools keep threading's.
    monkeypatch.setattr("queues_app.management.loops.threading", SimpleNamespace(Event=OnePass))
    return moto_db


@pytest.mark.parametrize(("name", "args", "reason"), BAD, ids=[f"{n} {' '.join(a)}" for n, a, _ in BAD])
def test_a_bad_option_is_refused_with_its_reason(bounded, name, args, reason):
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command(name, *args, stdout=out, stderr=err)
    message = str(caught.value)
    assert reason in message
    assert "\n" not in message


def test_nothing_is_done_when_an_option_is_refused(bounded):
    with pytest.raises(CommandError):
        call_command("seed_demo", "--agents", "3", "--shipments", "4", "--tasks", "x")
    assert ShipmentQueue(bounded).counts().queued == 0


@pytest.mark.parametrize(
    ("name", "options", "reason"),
    [
        ("check_invariants", {"once": True, "pause": -1}, "argument --pause"),
        ("collect_metrics", {"every": 0}, "argument --every"),
        ("escalate_callers", {"every": -1}, "argument --every"),
        ("restore_shipments", {"reason": "x", "rate": 0}, "argument --rate"),
        ("restore_shipments", {"reason": "x", "queue": "bogus"}, "argument --queue: invalid choice"),
        ("run_shipment_worker", {"until_empty": True, "visibility": -5}, "argument --visibility"),
        ("run_task_processor", {"until_empty": True, "lease": -1}, "argument --lease"),
        ("seed_demo", {"shipments": -1}, "argument --shipments"),
        (
            "staffing",
            {"calls_per_hour": 200, "aht": 180, "answer_within": 20, "service_level": 1.5},
            "argument --service-level",
        ),
        (
            "staffing",
            {"calls_per_hour": 200, "aht": 180, "answer_within": 20, "service_level": 0.8, "agents": 0},
            "argument --agents",
        ),
    ],
)
def test_keyword_options_are_refused_too(bounded, name, options, reason):
    with pytest.raises(CommandError, match=reason):
        call_command(name, stdout=io.StringIO(), stderr=io.StringIO(), **options)


@pytest.mark.parametrize("command", ["collect_metrics", "escalate_callers"])
def test_a_background_process_starts_without_the_system_checks_an_operator_command_runs(moto_db, monkeypatch, command):
    from django.core.management import ManagementUtility
    from django.core.management.base import BaseCommand

    checked = []
    monkeypatch.setattr(BaseCommand, "check", lambda self, *args, **kwargs: checked.append(type(self).__module__))
    ManagementUtility(["manage.py", command, "--once"]).execute()  # as from the command line
    assert checked == []
    ManagementUtility(["manage.py", "check_invariants", "--once"]).execute()
    assert checked == ["queues_app.management.commands.check_invariants"]
