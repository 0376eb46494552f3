"""The project's own settings (`callcenter.settings`, not the tests'), loaded in a fresh
`manage.py` process with production values and the variables a test gives: what a
process starting with them would read, or why it refuses to start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": "p" + "x7$k2!pQ9@vL4#mZ8^rT1&wY6*hB3(nC5)jF0_dG-sA+eU=oI" * 2,
    "ALLOWED_HOSTS": "switchboard.example.com",
}
# Set by tests/settings.py for the suite's own processes; decided here by each test.
DECIDED_BY_THE_TEST = ("API_RATE_LIMIT",)


def read_setting(tmp_path: Path, expression: str, **variables: str) -> subprocess.CompletedProcess:
    """`print(<expression>)` with `settings` loaded; stdout holds the value."""
    env = {name: value for name, value in os.environ.items() if name not in DECIDED_BY_THE_TEST}
    env.update(
        SWITCHBOARD_ENV_FILE="",
        DJANGO_SETTINGS_MODULE="callcenter.settings",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **PRODUCTION,
        **variables,
    )
    code = f"from django.conf import settings; print({expression})"
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
