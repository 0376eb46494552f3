"""Everything `make run` does after installing: DynamoDB Local, tables, users, demo data, server."""

import sys
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from queues_app.management.children import Children, start_local_dynamodb, stop_on_sigterm


class Command(BaseCommand):
    help = "Start DynamoDB Local (data under var/), prepare tables, users and demo data, and serve the dashboard."

    def add_arguments(self, parser):
        parser.add_argument("--addrport", default="127.0.0.1:8000")
        parser.add_argument("--agents", type=int, default=40, help="demo agents to load into empty tables")
        parser.add_argument("--no-server", action="store_true", help="prepare everything, then stop (for scripts)")
        parser.add_argument(
            "--data-dir", default=None, help="where DynamoDB Local keeps its data (default var/dynamodb)"
        )

    def handle(self, addrport, agents, no_server, data_dir=None, **options):
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
            self.stdout.write(self.style.SUCCESS(f"\nSwitchboard: http://{addrport}/   (Ctrl-C stops both servers)\n"))
            # The metrics collector fills the overview's charts.
            children.start(
                "collector", [sys.executable, "manage.py", "collect_metrics", "--every", "15"], cwd=settings.BASE_DIR
            )
            server = children.start(
                "server", [sys.executable, "manage.py", "runserver", addrport], cwd=settings.BASE_DIR
            )
            server.wait()
        except KeyboardInterrupt:
            self.stdout.write("\nStopping ...")
        finally:
            children.stop()
            if local:
                local.stop()
                self.stdout.write(f"DynamoDB Local stopped; its data stays in {local.db_path}.")
