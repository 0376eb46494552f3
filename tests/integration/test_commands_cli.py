"""The commands as a shell runs them (`manage.py ...` in a subprocess): exit statuses,
one line of reason on stderr, never a traceback. The command lines that share an
environment run in one process each, forked from one started Django
(tests/helpers/manage_cases.py): each still exits and writes as `manage.py` would."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from queues_app.ddb.local import free_port
from queues_app.shipments.queue import ShipmentQueue, ShipmentState
from tests.helpers.manage_cases import run_cases

ROOT = Path(__file__).resolve().parents[2]


def environment(**overrides):
    env = {**os.environ, "DYNAMODB_MAX_ATTEMPTS": "1", "DYNAMODB_CONNECT_TIMEOUT": "1", **overrides}
    env.pop("DJANGO_SETTINGS_MODULE", None)  # manage.py's own, with the tests' DEBUG and key from the environment
    return env


def manage(*args, env):
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def reason(result):
    """The one line a failing command wrote to stderr (nothing else, no traceback)."""
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    return lines


UNREACHABLE = [
    ["check_invariants", "--once"],
    ["dynamo_tables", "describe"],
    ["dynamo_tables", "create"],
    ["escalate_callers", "--once"],
    ["collect_metrics", "--once"],
    ["restore_shipments", "some-id"],
    ["seed_demo", "--agents", "1"],
    ["run_shipment_worker", "--until-empty"],
    ["run_shipment_worker", "--queue", "returns"],  # a named queue is looked up first
    ["run_task_processor", "--until-empty"],
]
BAD_OPTIONS = [
    (["run_shipment_worker", "--visibility", "-5"], 2, "argument --visibility: expected a number from 1 to 43200"),
    (["run_shipment_worker", "--queue", "no spaces"], 2, "argument --queue: expected a queue name: 1 to 64"),
    (["run_shipment_worker", "--fail-share", "7"], 2, "argument --fail-share: expected a number from 0 to 1"),
    (["run_task_processor", "--rate", "0"], 2, "argument --rate: expected a number above 0"),
    (["run_task_processor", "--lease", "-1"], 2, "argument --lease: expected a number from 1 to 3600"),
    (["collect_metrics", "--every", "0"], 2, "argument --every: expected a number from 1 to 3600"),
    (["escalate_callers", "--every", "nan"], 2, "argument --every: expected a number"),
    (["check_invariants", "--pause", "-1"], 2, "argument --pause: expected a number from 0 to 60"),
    (["seed_demo", "--tasks", "-3"], 2, "argument --tasks: expected a whole number from 0 to 100000"),
    (["restore_shipments", "--limit", "0", "--reason", "x"], 2, "argument --limit: expected a whole number"),
    (["dynamo_tables", "drop"], 2, "argument action: invalid choice: 'drop'"),
    (["demo_users", "--bogus"], 2, "unrecognized arguments: --bogus"),
    (["run_shipment_worker", "--fair", "--queue", "live"], 1, "CommandError: --fair takes the live queue"),
    (["restore_shipments"], 1, "CommandError: Name the shipments to restore, or give a filter"),
]
HELP = ["run_shipment_worker", "--help"]


@pytest.fixture(scope="module")
def unreachable():
    return environment(DYNAMODB_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}", DYNAMODB_TABLE_PREFIX="nowhere-")


@pytest.fixture(scope="module")
def answered(unreachable):
    """What each command line of this module run with `unreachable` answered, by its arguments."""
    return run_cases([*UNREACHABLE, *(args for args, _, _ in BAD_OPTIONS), HELP], unreachable)


@pytest.mark.parametrize("args", UNREACHABLE, ids=lambda args: " ".join(args))
def test_an_unreachable_dynamodb_is_one_line_and_exit_status_1(unreachable, answered, args):
    result = answered[tuple(args)]
    assert result.returncode == 1, result.stdout + result.stderr
    lines = reason(result)
    assert len(lines) == 1, lines
    endpoint = unreachable["DYNAMODB_ENDPOINT_URL"]
    assert lines[0].startswith(f"CommandError: DynamoDB cannot be reached. (endpoint: {endpoint})"), lines


@pytest.mark.parametrize(
    ("args", "status", "said"),
    BAD_OPTIONS,
    ids=lambda value: " ".join(value) if isinstance(value, list) else str(value),
)
def test_a_bad_option_exits_non_zero_with_its_reason(answered, args, status, said):
    result = answered[tuple(args)]  # refused before DynamoDB is asked anything
    assert result.returncode == status, result.stdout + result.stderr
    last = reason(result)[-1]
    assert said in last
    if status == 2:  # argparse's usage error: the usage, then the reason
        assert last.startswith(f"manage.py {args[0]}: error: ")
        assert result.stderr.startswith(f"usage: manage.py {args[0]}")


def test_help_shows_the_defaults(answered):
    result = answered[tuple(HELP)]
    assert result.returncode == 0
    shown = " ".join(result.stdout.split())
    assert (
        "lease length in seconds (heartbeats renew it every third); the queue's own by default (a number from 1 to "
        "43200)" in shown
    )
    assert "seconds to finish after a stop request (a number from 0 to 86400; default: 10.0)" in shown


def test_restoring_an_unknown_shipment_exits_1_and_names_it(local_db, settings):
    queue = ShipmentQueue(local_db)
    queue.create({}, shipment_id="dead", ready=True)
    queue.enqueue("dead")
    queue.send_to_dlq("dead", "address not found")
    env = environment(
        DYNAMODB_ENDPOINT_URL=settings.DYNAMODB_ENDPOINT_URL, DYNAMODB_TABLE_PREFIX=settings.DYNAMODB_TABLE_PREFIX
    )
    result = manage("restore_shipments", "dead", "nosuchid", env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    assert reason(result) == [
        "CommandError: Restored 1 of 2 shipment(s); not restored: nosuchid (No shipment with id 'nosuchid')."
    ]
    assert "skipped nosuchid: No shipment with id 'nosuchid'." in result.stdout
    assert queue.get("dead").state == ShipmentState.QUEUED

    again = manage("restore_shipments", "--reason", "address", env=env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "nothing to restore" in again.stdout


def test_demo_users_before_the_migrations_is_one_line(tmp_path):
    env = environment(DATABASE_URL=f"sqlite:///{tmp_path / 'empty.sqlite3'}")
    result = manage("demo_users", env=env)
    assert result.returncode == 1, result.stdout + result.stderr
    lines = reason(result)
    assert len(lines) == 1 and lines[0].startswith("CommandError: The database is not ready (no such table: ")
    assert lines[0].endswith("run `python manage.py migrate` first.")
