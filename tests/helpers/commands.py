"""`manage.py` commands started as an operator starts them, for the tests of the
long-running ones (`serve`, `run_local`): in a session of their own, so that the test
can stop the whole process group, and deaf to the terminal's Ctrl-C."""

from __future__ import annotations

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
