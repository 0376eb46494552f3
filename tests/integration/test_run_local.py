"""`manage.py run_local` (what `make run` calls) prepares everything and keeps data across restarts."""

import os
import re
import subprocess
import sys
from pathlib import Path

from queues_app.ddb.local import free_port
from tests.helpers.commands import start_manage

ROOT = Path(__file__).resolve().parents[2]


def run(args, env):
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def test_run_local_prepares_keeps_data_across_restarts_and_stops_everything_on_sigterm(tmp_path):
    """Run once to prepare (no server), then again on the same data the way a script or a
    process manager starts it (SIGINT ignored, as a non-interactive shell does for
    background jobs): it finds everything made, and SIGTERM still stops everything, here
    `make demo`'s run, with the demo load."""
    import signal
    import time
    import urllib.request

    port = free_port()
    env = {
        **os.environ,
        "DYNAMODB_ENDPOINT_URL": f"http://127.0.0.1:{free_port()}",
        "DYNAMODB_TABLE_PREFIX": "runlocal-",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    data = tmp_path / "dynamodb"
    first = run(["run_local", "--no-server", "--agents", "5", "--data-dir", str(data)], env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "created runlocal-callcenter" in first.stdout
    assert "Created supervisor login: supervisor /" in first.stdout
    assert "Created viewer login: viewer /" in first.stdout
    assert "5 agents written" in first.stdout

    log = open(tmp_path / "run_local.log", "w")
    args = ["run_local", "--agents", "5", "--addrport", f"127.0.0.1:{port}"]
    process = start_manage([*args, "--data-dir", str(data), "--demo-load"], env, log)
    try:
        # Until the dashboard answers (its login page), the demo load runs and the simulated day
        # plays through the API with its token: nine processes and DynamoDB Local start at once,
        # which takes minutes on a loaded 2-core machine.
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=1) as answer:
                    said = (tmp_path / "run_local.log").read_text()
                    if answer.status == 200 and "Demo load: on average" in said and "A weekday: " in said:
                        break
            except OSError:
                pass
            time.sleep(0.1)
        else:
            raise AssertionError((tmp_path / "run_local.log").read_text())
        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(timeout=180) == 0
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()
    output = (tmp_path / "run_local.log").read_text()
    # Everything the first run made was kept.
    assert "exists  runlocal-callcenter" in output
    assert "agents exist already, nothing loaded" in output
    assert "Demo supervisor login: supervisor (exists" in output
    assert "DynamoDB Local stopped" in output
    names = (
        "run_matcher",
        "collect_metrics",
        "run_task_processor",
        "escalate_callers",
        "run_shipment_worker",
        "demo_load",
        "simulate_day",
        "run_webhook_worker",
        "server",
    )
    for name in names:
        assert re.search(rf"^started {name} \(pid \d+\)$", output, re.M), output
    # The demo load stops on SIGTERM by itself (not killed after the timeout).
    assert re.search(r"^demo_load \(pid \d+\) exited with code 0$", output, re.M), output
    assert "Demo load stopped:" in output
    assert re.search(r"^simulate_day \(pid \d+\) exited with code 0$", output, re.M), output
    # Nothing it started is left: no dashboard, no sampler, no DynamoDB Local on its data.
    # (`ps eww` also shows each process's environment, which names this test's folder.)
    table = subprocess.run(["ps", "eww", "-A", "-o", "pid=,args="], capture_output=True, text=True).stdout
    left = [line for line in table.splitlines() if str(tmp_path) in line and "pytest" not in line]
    assert left == [], output + "\n".join(left)
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/login/", timeout=1)
        raise AssertionError("the dashboard still answers")
    except OSError:
        pass
