"""Child processes of the commands that run several at once (`run_local`, `serve`).

Each child gets a process group of its own, so that stopping it also stops what it
started (runserver's autoreloader, gunicorn's workers), and Ctrl-C in the terminal
reaches only the parent, which then stops every child with SIGTERM (not SIGINT: a
shell may start background jobs ignoring SIGINT), waiting for each before SIGKILL.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlparse

from django.core.management.base import CommandError

from queues_app.ddb.local import DynamoDBLocal, LocalDynamoError, answers

# The processes a deployment runs beside the web server: `manage.py` commands by name.
# `serve` and `run_local` start every one (run_local's shipment worker also drains the
# spillover queue). A new kind of worker added here runs in both.
SHIPMENT_WORKER = "run_shipment_worker"
BACKGROUND: dict[str, list[str]] = {
    "run_matcher": ["run_matcher"],  # matches the web workers' new callers (one holder at a time)
    "collect_metrics": ["collect_metrics", "--every", "15"],
    SHIPMENT_WORKER: [SHIPMENT_WORKER],
    "run_task_processor": ["run_task_processor"],
    "escalate_callers": ["escalate_callers", "--every", "5"],
    "run_webhook_worker": ["run_webhook_worker"],  # the API tokens' callbacks
}


def deployment_processes(shards: int = 1) -> dict[str, list[str]]:
    """BACKGROUND with a matcher for each of the deployment's matching shards
    (SWITCHBOARD_MATCHING_SHARDS): `run_matcher-<k>` holds shard k's lease."""
    if shards <= 1:
        return dict(BACKGROUND)
    processes = {f"run_matcher-{k}": ["run_matcher", "--shard", str(k)] for k in range(shards)}
    return processes | {name: args for name, args in BACKGROUND.items() if name != "run_matcher"}


def raise_keyboard_interrupt(signum, frame):
    """A SIGTERM handler: the parent stops its children as on Ctrl-C."""
    raise KeyboardInterrupt


def stop_on_sigterm() -> None:
    signal.signal(signal.SIGTERM, raise_keyboard_interrupt)


def wait_for_port_to_free(host: str, port: int, attempts: int = 50) -> bool:
    """True once nothing listens on host:port (a server just stopped takes a moment to
    release it); False if something still does after `attempts` tenths of a second."""
    for _ in range(attempts):
        with socket.socket() as sock:
            if sock.connect_ex((host, port)) != 0:
                return True
        time.sleep(0.1)
    return False


class Children:
    """Processes started together and stopped together, in the order they were started."""

    def __init__(self) -> None:
        self.processes: dict[str, subprocess.Popen] = {}

    def start(
        self, name: str, args: Sequence[str], *, cwd: Path | str, env: Mapping[str, str] | None = None
    ) -> subprocess.Popen:
        process = subprocess.Popen(
            list(args), cwd=cwd, env=dict(env) if env is not None else None, start_new_session=True
        )
        self.processes[name] = process
        return process

    def first_exit(self, poll_seconds: float = 0.5) -> tuple[str, int]:
        """Waits until one of the children exits; its name and exit code."""
        while True:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    return name, process.returncode
            time.sleep(poll_seconds)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to every child's group at once, then waits for each (SIGKILL to the
        group of one that outlives `timeout`)."""
        running = [p for p in self.processes.values() if p.poll() is None]
        for process in running:
            _signal_group(process, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for process in running:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(process, signal.SIGKILL)
                process.wait()
        for process in self.processes.values():
            # What a child started in its group and left behind (it exited first).
            _signal_group(process, signal.SIGKILL)


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


def start_local_dynamodb(endpoint: str, data: Path, log_path: Path, say: Callable[[str], None]) -> DynamoDBLocal | None:
    """DynamoDB Local on `endpoint`'s loopback port, keeping its data in `data`; None when
    one answers there already (it is used as it is). CommandError when the port is busy
    with something else or the server does not start."""
    if answers(endpoint):
        say(f"DynamoDB Local already answers at {endpoint}; using it.")
        return None
    url = urlparse(endpoint)
    if not url.port or not wait_for_port_to_free(url.hostname or "127.0.0.1", url.port):
        raise CommandError(f"Port {url.port} is busy with something that is not DynamoDB Local.")
    local = DynamoDBLocal(port=url.port, db_path=data, log_path=log_path)
    say(f"Starting DynamoDB Local at {endpoint} (data in {data}) ...")
    try:
        local.start()
    except LocalDynamoError as exc:
        raise CommandError(str(exc)) from exc
    return local
