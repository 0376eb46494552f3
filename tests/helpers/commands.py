"""`manage.py` commands started as an operator starts them, for the tests of the
long-running ones (`serve`, `run_local`): in a session of their own, so that the test
can stop the whole process group, and deaf to the terminal's Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[2]


def start_manage(args: list[str], env: dict[str, str], log: IO[str]) -> subprocess.Popen:
    """`python manage.py <args>` from the repository root, its output into `log`."""
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )


def child_env(**values: str) -> dict[str, str]:
    """This process's environment without what tells a pytest it is an xdist worker (a test
    database would be named after it), with `values`."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("PYTEST_")}
    return {**env, **values}


def manage_env(**values: str) -> dict[str, str]:
    """The environment of a `manage.py` command as an operator runs it: `child_env` without
    the tests' settings module and this process's metrics directory, with `values`."""
    env = child_env(**values)
    for name in ("DJANGO_SETTINGS_MODULE", "PROMETHEUS_MULTIPROC_DIR"):
        if name not in values:
            env.pop(name, None)
    return env
