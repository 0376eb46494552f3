"""What `run_local` (`make run`, `make demo`) starts beside runserver, and what it does
when one of them exits: says which, and stops everything."""

import io
import re

import pytest
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

from queues_app.ddb.local import free_port
from queues_app.management import children
from queues_app.management.commands import run_local, serve
from queues_app.management.commands.run_local import background


def test_make_run_starts_every_background_process_a_shipment_worker_among_them():
    assert background() == {
        "run_matcher": ["run_matcher"],
        "collect_metrics": ["collect_metrics", "--every", "15"],
        "run_shipment_worker": ["run_shipment_worker", "--fair"],
        "run_task_processor": ["run_task_processor"],
        "escalate_callers": ["escalate_callers", "--every", "5"],
        "run_webhook_worker": ["run_webhook_worker"],
    }


def test_the_demo_traffic_only_with_its_flag():
    assert "demo_load" not in background()
    assert background(demo_load=True)["demo_load"] == ["demo_load", "--rate", "0"]  # the day's callers only
    assert background(demo_load=True)["simulate_day"][:2] == ["simulate_day", "weekday"]
    both = background(demo_load=True)
    assert set(both) == {
        "run_matcher",
        "collect_metrics",
        "run_task_processor",
        "escalate_callers",
        "run_shipment_worker",
        "demo_load",
        "simulate_day",
        "run_webhook_worker",
    }


def test_serve_and_run_local_share_one_list():
    assert serve.deployment_processes is children.deployment_processes
    assert set(background()) == set(children.BACKGROUND) == set(children.deployment_processes(1))


def test_a_matcher_for_each_matching_shard(settings):
    settings.SWITCHBOARD_MATCHING_SHARDS = 3
    processes = background()
    assert {name: args for name, args in processes.items() if "matcher" in name} == {
        f"run_matcher-{k}": ["run_matcher", "--shard", str(k)] for k in range(3)
    }
    assert set(processes) - {"run_matcher-0", "run_matcher-1", "run_matcher-2"} == set(children.BACKGROUND) - {
        "run_matcher"
    }


@pytest.mark.parametrize(
    "args",
    [*background(demo_load=True).values(), *children.deployment_processes(2).values()],
    ids=lambda a: " ".join(a[:3]),
)
def test_each_process_is_a_command_that_takes_its_arguments(args):
    name, *rest = args
    parser = load_command_class("queues_app", name).create_parser("manage.py", name)
    parser.parse_args(rest)  # an unknown option would exit (SystemExit)


def test_a_process_that_exits_is_named_and_everything_stops(settings, monkeypatch):
    settings.DEBUG = True
    settings.DYNAMODB_ENDPOINT_URL = "http://127.0.0.1:8421"
    # Nothing prepared, no DynamoDB Local: only the supervision of the children runs.
    monkeypatch.setattr(run_local, "start_local_dynamodb", lambda *args: None)
    monkeypatch.setattr(run_local, "call_command", lambda *args, **kwargs: None)
    monkeypatch.setattr(run_local, "stop_on_sigterm", lambda: None)
    # A background process that ends at once (manage.py knows no such command: status 1).
    monkeypatch.setattr(run_local, "background", lambda **flags: {"quitter": ["no_such_command"]})
    out = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("run_local", addrport=f"127.0.0.1:{free_port()}", stdout=out)
    assert str(caught.value) == "quitter exited with code 1; stopping everything."
    output = out.getvalue()
    assert re.search(r"^started quitter \(pid \d+\)$", output, re.M)
    assert re.search(r"^started server \(pid \d+\)$", output, re.M)
    # The server was stopped (it runs until stopped otherwise), and each exit is shown.
    assert re.search(r"^quitter \(pid \d+\) exited with code 1$", output, re.M)
    assert re.search(r"^server \(pid \d+\) exited with code -?\d+$", output, re.M)


@pytest.mark.django_db
def test_the_simulated_days_token_is_the_demo_supervisors_and_replaces_the_last_runs():
    from queues_app.models import ApiToken

    call_command("demo_users", stdout=io.StringIO())
    first = run_local.demo_token("127.0.0.1:8000")
    second = run_local.demo_token("127.0.0.1:8000")
    assert second["SWITCHBOARD_URL"] == "http://127.0.0.1:8000"
    assert ApiToken.find(first["SWITCHBOARD_TOKEN"]) is None  # revoked
    found = ApiToken.find(second["SWITCHBOARD_TOKEN"])
    assert found is not None and found.user.username == "supervisor"
