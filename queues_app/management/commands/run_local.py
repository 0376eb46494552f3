"""Everything `make run` does after installing: DynamoDB Local, tables, users, demo data,
the background processes (a shipment worker among them) and the server; `make demo` adds demo
traffic: a weekday played ten times faster than real time through the API (`simulate_day`,
with a token of the demo supervisor's made for it), and shipments and tasks (`demo_load`)."""

import os
import sys
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from queues_app.management.children import (
    SHIPMENT_WORKER,
    Children,
    deployment_processes,
    start_local_dynamodb,
    stop_on_sigterm,
)

DEMO_TOKEN = "demo: simulated day"


def background(*, demo_load: bool = False) -> dict[str, list[str]]:
    """The `manage.py` commands started beside runserver, by name: a deployment's background
    processes (shared with `serve`), so the overview is green when nothing is wrong;
    `demo_load` adds the demo traffic."""
    processes = deployment_processes(settings.SWITCHBOARD_MATCHING_SHARDS)
    # --fair: it drains the spillover queue too, so sidelined shipments get done.
    processes[SHIPMENT_WORKER] = [SHIPMENT_WORKER, "--fair"]
    if demo_load:
        processes["demo_load"] = ["demo_load", "--rate", "0"]  # the callers are the simulated day's
        # Beside the demo data's own agents (--force), ten times faster: the weekday in an hour, again and again.
        processes["simulate_day"] = ["simulate_day", "weekday", "--speed", "10", "--repeat", "--force", "--wait", "300"]
    return processes


def demo_token(addrport: str) -> dict[str, str]:
    """The simulated day's site and API token (the demo supervisor's; the last run's revoked)."""
    from django.contrib.auth import get_user_model

    from queues_app.management.commands.demo_users import DEMO_USERS
    from queues_app.models import ApiToken

    user = get_user_model().objects.get(username=DEMO_USERS[0][0])
    ApiToken.objects.filter(user=user, name=DEMO_TOKEN, revoked=False).update(revoked=True)
    return {"SWITCHBOARD_URL": f"http://{addrport}", "SWITCHBOARD_TOKEN": ApiToken.issue(user, DEMO_TOKEN)[1]}


class Command(BaseCommand):
    help = (
        "Start DynamoDB Local (data under var/), prepare tables, users and demo data, and serve the dashboard "
        "with the background processes (the matcher, metrics collector, shipment worker, caller escalation, "
        "task processor, callback worker)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--addrport", default="127.0.0.1:8000")
        parser.add_argument("--agents", type=int, default=40, help="demo agents to load into empty tables")
        parser.add_argument("--no-server", action="store_true", help="prepare everything, then stop (for scripts)")
        parser.add_argument(
            "--data-dir", default=None, help="where DynamoDB Local keeps its data (default var/dynamodb)"
        )
        parser.add_argument(
            "--demo-load",
            action="store_true",
            help="also play a weekday through the API (simulate_day) and run demo_load: shipments, tasks",
        )

    def handle(self, addrport, agents, no_server, data_dir=None, demo_load=False, **options):
        if not settings.DEBUG:
            # Off, the development server would serve no static files and redirect to HTTPS.
            raise CommandError(
                "run_local is for local development and needs DEBUG=true (`make run` writes a .env with it)."
            )
        endpoint = settings.DYNAMODB_ENDPOINT_URL
        if not endpoint:
            raise CommandError("DYNAMODB_ENDPOINT_URL is empty (real AWS); run_local is for the local DynamoDB.")
        url = urlparse(endpoint)
        if url.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise CommandError(f"run_local starts DynamoDB Local on loopback; {endpoint} is not a loopback address.")
        var = Path(settings.BASE_DIR) / "var"
        var.mkdir(exist_ok=True)
        data = Path(data_dir) if data_dir else var / "dynamodb"
        local = start_local_dynamodb(endpoint, data, var / "dynamodb-local.log", self.stdout.write)
        children = Children()
        stop_on_sigterm()  # as on Ctrl-C
        try:
            call_command("dynamo_tables", "create")
            call_command("migrate", interactive=False, verbosity=0)
            call_command("demo_users")
            call_command("seed_demo", agents=agents, if_empty=True)
            if no_server:
                return
            manage = [sys.executable, "manage.py"]
            env = {**os.environ, **demo_token(addrport)} if demo_load else None
            for name, args in background(demo_load=demo_load).items():
                self._start(children, name, manage + args, env)
            self._start(children, "server", manage + ["runserver", addrport])
            self.stdout.write(self.style.SUCCESS(f"\nSwitchboard: http://{addrport}/   (Ctrl-C stops everything)\n"))
            # Each of them runs until stopped: one that ends is a failure, and the rest stop too.
            name, code = children.first_exit()
            raise CommandError(f"{name} exited with code {code}; stopping everything.")
        except KeyboardInterrupt:
            self.stdout.write("\nStopping ...")
        finally:
            children.stop()
            for name, process in children.processes.items():
                self.stdout.write(f"{name} (pid {process.pid}) exited with code {process.returncode}")
            if local:
                local.stop()
                self.stdout.write(f"DynamoDB Local stopped; its data stays in {local.db_path}.")

    def _start(self, children: Children, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        process = children.start(name, args, cwd=settings.BASE_DIR, env=env)
        self.stdout.write(f"started {name} (pid {process.pid})")
        self.stdout.flush()
