"""`manage.py run_local` (what `make run` calls) prepares everything and keeps data across restarts."""

import os
import subprocess
import sys
from pathlib import Path

from queues_app.dynamo.local import free_port

ROOT = Path(__file__).resolve().parents[2]


def run(args, env):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=180)


def test_run_local_prepares_and_keeps_data_across_restarts(tmp_path):
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

    second = run(["run_local", "--no-server", "--agents", "5", "--data-dir", str(data)], env)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "exists  runlocal-callcenter" in second.stdout
    assert "agents exist already, nothing loaded" in second.stdout
    assert "Demo supervisor login: supervisor (exists" in second.stdout
