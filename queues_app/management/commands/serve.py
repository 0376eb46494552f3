"""`make serve`: the production shape on this machine.

DEBUG off with production-like values set in the children's environment (a generated
SECRET_KEY, ALLOWED_HOSTS=127.0.0.1,localhost; no HTTPS redirect and no secure-only
cookies, since there is no TLS locally), collectstatic (compressed, hashed files that
WhiteNoise serves), migrations, DynamoDB Local with the tables, gunicorn with workers,
and the background processes a deployment runs: the matcher (which the web workers send
their new callers to), the metrics collector, a shipment worker, the task processor, the
caller escalation and the callback worker. Ctrl-C or SIGTERM stops them all.

gunicorn's workers share their /metrics counters through prometheus_client's
multiprocess mode: PROMETHEUS_MULTIPROC_DIR is a directory of this run's own
(var/prometheus-<port>), emptied before gunicorn starts, since files left by an earlier
run would be added in, and removed once everything has stopped.

Several hosts on one machine: instances on different ports with the same DATABASE_URL
(PostgreSQL), CACHE_URL (Redis), DynamoDB and SERVE_SECRET_KEY (else each makes a key of
its own, and a session of one is refused by the others); `--web-only` for all but one, as
hosts whose background processes are another's (tests/integration/test_several_hosts.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

from django.conf import settings
from django.core.management.base import CommandError, CommandParser

from callcenter.security import LOCAL_HOSTS, production_problems
from queues_app.management.arguments import CheckedCommand, int_range
from queues_app.management.children import (
    Children,
    deployment_processes,
    start_local_dynamodb,
    stop_on_sigterm,
    wait_for_port_to_free,
)

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def production_env(base: dict[str, str], secret_key: str = "") -> dict[str, str]:
    """`base` with the values a production process has, for this machine without TLS:
    `secret_key`, or a new random key."""
    return {
        **base,
        "DJANGO_SETTINGS_MODULE": "callcenter.settings",
        "DEBUG": "false",
        "SECRET_KEY": secret_key or secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        "SECURE_SSL_REDIRECT": "false",
        "SESSION_COOKIE_SECURE": "false",
        "CSRF_COOKIE_SECURE": "false",
        "PYTHONUNBUFFERED": "1",
    }


def gunicorn_command(root: Path, port: int, workers: int, threads: int) -> list[str]:
    command = [sys.executable, "-m", "gunicorn", "callcenter.wsgi:application"]
    command += ["--bind", f"127.0.0.1:{port}", "--workers", str(workers)]
    # The access log in the application's format, with each request's trace id.
    command += ["--access-logfile", "-", "--logger-class", "callcenter.gunicorn_logging.AccessLogger"]
    # Each open overview holds a thread while the page is open (queues_app/views/live.py): the
    # workers get that many more than the requests' `threads` (WEB_THREADS tells the hook).
    command += ["--worker-class", "gthread", "--threads", str(threads + settings.LIVE_STREAMS_PER_PROCESS)]
    # No control socket: its default path is one per user, shared by every gunicorn.
    command += ["--no-control-socket"]
    # The hook that tidies a dead worker's metric files (child_exit).
    return command + ["--config", str(root / "callcenter" / "gunicorn_config.py")]


class Command(CheckedCommand):
    help = (
        "Serve the dashboard as in production (DEBUG off, gunicorn, static files by WhiteNoise, the workers) "
        "on a local DynamoDB; Ctrl-C or SIGTERM stops everything."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        for option, variable, default, most, about in (
            ("--port", "PORT", 8000, 65535, "the port to serve on"),
            ("--workers", "WEB_CONCURRENCY", 2, 64, "gunicorn workers"),
            (
                "--threads",
                "WEB_THREADS",
                8,
                64,
                "requests each worker serves at once: a request mostly waits on DynamoDB",
            ),
        ):
            parser.add_argument(
                option,
                type=int_range(1, most),
                default=int(os.environ.get(variable) or default),
                help=f"{about} ({variable}, else {default})",
            )
        parser.add_argument(
            "--data-dir", default=None, help="where DynamoDB Local keeps its data (default var/dynamodb)"
        )
        parser.add_argument(
            "--web-only",
            action="store_true",
            help="gunicorn without the background processes: another host's web server, beside a serve that runs them",
        )

    def handle(
        self,
        *,
        port: int,
        workers: int,
        threads: int,
        data_dir: str | None = None,
        web_only: bool = False,
        **options,
    ) -> None:
        endpoint = self._check(port)
        root = Path(settings.BASE_DIR)
        var = root / "var"
        var.mkdir(exist_ok=True)
        env = self._environment(var)
        manage = [sys.executable, str(root / "manage.py")]
        local = None
        children = Children()
        metrics_dir = var / f"prometheus-{port}"  # the port is ours while we run
        stop_on_sigterm()
        try:
            data = Path(data_dir) if data_dir else var / "dynamodb"
            local = start_local_dynamodb(endpoint, data, var / "dynamodb-local.log", self.stdout.write)
            for step in (["collectstatic", "--noinput", "-v", "0"], ["migrate", "--noinput", "-v", "0"]):
                self._run(manage + step, root, env)
            self._run(manage + ["dynamo_tables", "create"], root, env)

            gunicorn = gunicorn_command(root, port, workers, threads)
            shutil.rmtree(metrics_dir, ignore_errors=True)
            metrics_dir.mkdir()
            web_env = {**env, "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir), "WEB_THREADS": str(threads)}
            children.start("gunicorn", gunicorn, cwd=root, env=web_env)
            for name, args in () if web_only else deployment_processes(settings.SWITCHBOARD_MATCHING_SHARDS).items():
                children.start(name, manage + args, cwd=root, env=env)
            for name, process in children.processes.items():
                self.stdout.write(f"started {name} (pid {process.pid})")
            self.stdout.write(
                self.style.SUCCESS(
                    f"\nSwitchboard (DEBUG off, gunicorn with {workers} workers of {threads} threads"
                    f" and {settings.LIVE_STREAMS_PER_PROCESS} live overviews each"
                    f"{', no background processes' if web_only else ''}): "
                    f"http://127.0.0.1:{port}/"
                    "   (Ctrl-C stops everything)\n"
                )
            )
            name, code = children.first_exit()
            raise CommandError(f"{name} exited with code {code}; stopping everything.")
        except KeyboardInterrupt:
            self.stdout.write("\nStopping ...")
        finally:
            children.stop(timeout=35)  # gunicorn gives its workers 30 s to finish requests
            for name, process in children.processes.items():
                self.stdout.write(f"{name} (pid {process.pid}) exited with code {process.returncode}")
            if local:
                local.stop()
                self.stdout.write(f"DynamoDB Local stopped; its data stays in {local.db_path}.")
            shutil.rmtree(metrics_dir, ignore_errors=True)

    @staticmethod
    def _check(port: int) -> str:
        """The local DynamoDB's endpoint, once it and the port are fit to serve on."""
        endpoint = settings.DYNAMODB_ENDPOINT_URL
        if not endpoint:
            raise CommandError("DYNAMODB_ENDPOINT_URL is empty (real AWS); serve runs on the local DynamoDB.")
        url = urlparse(endpoint)
        if url.hostname not in LOOPBACK or not url.port:
            raise CommandError(f"serve starts DynamoDB Local on loopback; {endpoint} is not a loopback address.")
        if not wait_for_port_to_free("127.0.0.1", port, attempts=1):
            raise CommandError(f"Port {port} is busy; choose another with PORT=... or --port.")
        return endpoint

    @staticmethod
    def _environment(var: Path) -> dict[str, str]:
        """The processes' environment: production settings (DEBUG off), with the secret key
        several hosts share when SERVE_SECRET_KEY gives one."""
        shared_key = os.environ.get("SERVE_SECRET_KEY", "")
        if shared_key and (problems := production_problems(shared_key, LOCAL_HOSTS)):
            raise CommandError(f"SERVE_SECRET_KEY: {'; '.join(problems)}")
        env = production_env(dict(os.environ), shared_key)
        # Only gunicorn's workers share counters; the other processes keep their own.
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        # The workers share the overview's cached figures, as the systemd unit has them.
        env.setdefault("CACHE_URL", f"filecache://{var / 'cache'}")
        return env

    def _run(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.stdout.write("$ manage.py " + " ".join(args[2:]))
        self.stdout.flush()
        result = subprocess.run(args, cwd=cwd, env=env)
        if result.returncode != 0:
            raise CommandError(f"manage.py {args[2]} failed (exit code {result.returncode}).")
