"""A deployment as docs/deploy.md makes it: the wheel built from a copy of the checkout,
installed with `--no-deps` into a new virtual environment beside the locked packages
(requirements/deploy.txt, hashes checked), then run from a directory that is not
the checkout. Its `switchboard` command checks, migrates and collects the static files;
gunicorn serves a page from the wheel's templates and a static file from the wheel's
static/ through WhiteNoise, as the systemd units run them."""

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

from queues_app.ddb.local import free_port
from tests.helpers.threads import wait_for

ROOT = Path(__file__).resolve().parents[2]
# Not the source: what is made beside it (and what a build would read by mistake).
NOT_SOURCE = shutil.ignore_patterns(
    ".*", "node_modules", "var", "build", "dist", "*.egg-info", "__pycache__", "test-results"
)
# The installed copy runs with only these of the tests' variables (none of the checkout's).
WHERE_AND_WHO = ("PATH", "HOME", "LANG", "TMPDIR")

INSIDE = """
import json
import os

import django
from django.conf import settings
from django.contrib.staticfiles import finders
from django.template.loader import get_template

os.environ["DJANGO_SETTINGS_MODULE"] = "callcenter.settings"
django.setup()
import callcenter

print(json.dumps({
    "package": callcenter.__file__,
    "template": get_template("base.html").origin.name,
    "static": finders.find("css/switchboard.css"),
    "base_dir": str(settings.BASE_DIR),
}))
"""


def run(args, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def bare(**variables):
    return {**{name: os.environ[name] for name in WHERE_AND_WHO if name in os.environ}, **variables}


def checkout_files(folder: str) -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for path in (ROOT / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Built as `make wheel` builds it (no build isolation: the locked setuptools)."""
    source = tmp_path_factory.mktemp("source") / "switchboard"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    dist = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", dist, source])
    (built,) = dist.glob("switchboard-*-py3-none-any.whl")
    return built


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel) -> Path:
    """A new virtual environment: the locked packages of a deployment, then the wheel alone."""
    venv = tmp_path_factory.mktemp("deployment") / ".venv"
    run([sys.executable, "-m", "venv", venv])
    pip = [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    run([*pip, "--require-hashes", "-r", ROOT / "requirements" / "deploy.txt"])
    run([*pip, "--no-deps", wheel])
    run([venv / "bin" / "python", "-m", "pip", "check"])  # the lock holds what the wheel asks for
    return venv


@pytest.fixture
def production(tmp_path):
    """docs/deploy.md's /opt/switchboard (the units' working directory) and
    /etc/switchboard/env, outside the checkout: production values in the file, which the
    commands read through SWITCHBOARD_ENV_FILE and systemd gives gunicorn as variables."""
    home = tmp_path / "opt-switchboard"
    home.mkdir()
    values = {
        "DEBUG": "false",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "ALLOWED_HOSTS": "127.0.0.1,switchboard.example.com",
        "BEHIND_TLS_PROXY": "true",
        "DATABASE_URL": f"sqlite:///{home / 'switchboard.sqlite3'}",
        "DYNAMODB_ENDPOINT_URL": "http://127.0.0.1:9",  # not asked: the login page and static files need none
    }
    env_file = tmp_path / "etc-switchboard-env"
    env_file.write_text("".join(f"{name}={value}\n" for name, value in values.items()))
    return home, bare(SWITCHBOARD_ENV_FILE=str(env_file)), bare(**values)


def test_the_wheel_holds_every_module_template_and_static_file_of_the_checkout(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {name for name in checkout_files("callcenter") | checkout_files("queues_app") if name.endswith(".py")}
    assert modules and modules <= names, sorted(modules - names)
    assert "switchboard_client.py" in names
    days = {name for name in checkout_files("queues_app") if name.startswith("queues_app/simulation/days/")}
    assert days and days <= names, sorted(days - names)
    for folder in ("templates", "static"):
        shipped = {f"callcenter/{name}" for name in checkout_files(folder)}
        assert shipped and shipped <= names, sorted(shipped - names)
    assert not [name for name in names if name.startswith(("tests/", "bench/", "templates/", "static/", "var/"))]
    entry_points = next(name for name in names if name.endswith(".dist-info/entry_points.txt"))
    assert "switchboard = callcenter.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_the_installed_copy_runs_from_its_own_files_outside_the_checkout(venv, production):
    home, commands, _ = production
    found = json.loads(run([venv / "bin" / "python", "-c", INSIDE], cwd=home, env=commands))
    site = str(venv / "lib")
    assert found["package"].startswith(site), found
    assert found["template"].startswith(site) and found["template"].endswith("callcenter/templates/base.html"), found
    assert found["static"].startswith(site) and found["static"].endswith("callcenter/static/css/switchboard.css")
    assert found["base_dir"] == str(home)  # var/ and .env: the working directory


def test_the_switchboard_command_checks_migrates_and_collects_then_gunicorn_serves_pages(venv, production):
    home, commands, unit = production
    switchboard = venv / "bin" / "switchboard"
    checked = run([switchboard, "check", "--deploy", "--fail-level", "WARNING"], cwd=home, env=commands)
    assert "System check identified no issues" in checked
    run([switchboard, "migrate", "--noinput", "-v", "0"], cwd=home, env=commands)
    run([switchboard, "collectstatic", "--noinput", "-v", "0"], cwd=home, env=commands)
    collected = home / "var" / "staticfiles"
    assert (collected / "staticfiles.json").is_file()
    assert sorted(p.name for p in collected.glob("css/switchboard.*.css"))  # hashed names

    port = free_port()
    metrics = home.parent / "run-switchboard-web"  # the unit's RuntimeDirectory
    metrics.mkdir()
    # The web unit's command line (deploy/systemd/switchboard-web.service), on a free port.
    gunicorn = subprocess.Popen(
        [venv / "bin" / "gunicorn", "callcenter.wsgi:application", "--bind", f"127.0.0.1:{port}"]
        + ["--access-logfile", "-", "--logger-class", "callcenter.gunicorn_logging.AccessLogger"]
        + ["--config", "python:callcenter.gunicorn_config", "--worker-class", "gthread", "--threads", "2"]
        + ["--no-control-socket"],
        cwd=home,
        env={**unit, "PROMETHEUS_MULTIPROC_DIR": str(metrics)},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:

        def get(path):
            request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers={"X-Forwarded-Proto": "https"})
            with urllib.request.urlopen(request, timeout=5) as answer:
                return answer.status, answer.read()

        def answers():
            try:
                return get("/healthz")[0] == 200
            except OSError:
                return gunicorn.poll() is not None  # stop waiting: it exited

        assert wait_for(answers, timeout=30, step=0.2) and gunicorn.poll() is None
        status, page = get("/login/")
        assert status == 200 and b"Switchboard" in page
        stylesheet = re.search(rb'href="(/static/css/switchboard\.[0-9a-f]{12}\.css)"', page)
        assert stylesheet, page[:2000]
        status, css = get(stylesheet[1].decode())
        assert status == 200 and css == (collected / stylesheet[1].decode().removeprefix("/static/")).read_bytes()
    finally:
        gunicorn.send_signal(signal.SIGTERM)
        output = gunicorn.communicate(timeout=40)[0]
        print(output)  # shown when the test fails
    assert gunicorn.returncode == 0, output
