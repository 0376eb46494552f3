"""Production settings pass Django's deployment checks."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_check_deploy_reports_nothing_with_production_values(tmp_path):
    env = {
        **os.environ,
        "DEBUG": "false",
        "SECRET_KEY": "x7$k2!pQ9@vL4#mZ8^rT1&wY6*hB3(nC5)jF0_dG-sA+eU=oI" * 2,
        "ALLOWED_HOSTS": "switchboard.example.com",
        "DYNAMODB_ENDPOINT_URL": "",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)  # set for the browser tests only
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "DEBUG"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_empty_endpoint_setting_means_real_aws(tmp_path):
    env = {**os.environ, "DYNAMODB_ENDPOINT_URL": ""}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'callcenter.settings');"
            "django.setup(); from django.conf import settings; print(repr(settings.DYNAMODB_ENDPOINT_URL))",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.stdout.strip() == "None", result.stderr
