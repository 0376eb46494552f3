"""The systemd units in deploy/: systemd accepts them, and each runs a command of this
project with options the command accepts."""

import shlex
import shutil
import subprocess
from importlib import import_module
from pathlib import Path

import pytest
from django.core.management import get_commands, load_command_class
from django.utils.module_loading import import_string

ROOT = Path(__file__).resolve().parents[2]
UNITS = sorted((ROOT / "deploy" / "systemd").glob("*.service"))
INSTALLED_AT = "/opt/switchboard"


def test_there_is_a_unit_for_the_web_and_each_background_process():
    names = {unit.stem for unit in UNITS}
    assert names == {
        "switchboard-web",
        "switchboard-matcher",
        "switchboard-shipment-worker",
        "switchboard-task-processor",
        "switchboard-collector",
        "switchboard-escalator",
        "switchboard-callback-worker",
    }


def test_systemd_accepts_every_unit(tmp_path):
    """`systemd-analyze verify` on the units as installed here (the checkout standing in for
    /opt/switchboard): no error and no warning about any of them."""
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is needed to check the units (Debian's systemd package)"
    copies = []
    for unit in UNITS:
        copy = tmp_path / unit.name
        copy.write_text(unit.read_text().replace(INSTALLED_AT, str(ROOT)))
        copies.append(str(copy))
    result = subprocess.run([analyze, "verify", *copies], capture_output=True, text=True, check=False)
    complaints = [line for line in result.stderr.splitlines() if str(tmp_path) in line or "Failed" in line]
    assert result.returncode == 0 and not complaints, result.stderr


def _exec_start(unit: Path) -> list[str]:
    line = next(line for line in unit.read_text().splitlines() if line.startswith("ExecStart="))
    return shlex.split(line.removeprefix("ExecStart="))


@pytest.mark.parametrize("unit", [u for u in UNITS if u.stem != "switchboard-web"], ids=lambda u: u.stem)
def test_a_worker_unit_runs_a_command_with_options_it_accepts(unit):
    """Through the installed `switchboard` command (the wheel's console script), not a
    checkout's manage.py: the deployment is the wheel (docs/deploy.md)."""
    args = _exec_start(unit)
    assert args[0] == f"{INSTALLED_AT}/.venv/bin/switchboard"
    name, options = args[1], args[2:]
    assert name in get_commands(), name
    parser = load_command_class(get_commands()[name], name).create_parser("switchboard", name)
    parser.parse_args(options)  # exits (SystemExit) on an option the command refuses


def test_the_web_unit_serves_the_wsgi_application_with_gunicorn():
    args = _exec_start(ROOT / "deploy" / "systemd" / "switchboard-web.service")
    assert args[0] == f"{INSTALLED_AT}/.venv/bin/gunicorn"
    assert "callcenter.wsgi:application" in args
    # Its access log in the application's format (`make serve` starts it the same way).
    logger_class = args[args.index("--logger-class") + 1]
    assert import_string(logger_class).__name__ == "AccessLogger" and "--access-logfile" in args


def test_the_web_unit_gives_the_workers_a_fresh_directory_to_add_their_metrics_up_in():
    unit = (ROOT / "deploy" / "systemd" / "switchboard-web.service").read_text()
    settings = dict(line.split("=", 1) for line in unit.splitlines() if "=" in line and not line.startswith("#"))
    # systemd makes /run/<RuntimeDirectory> at each start and removes it at each stop.
    assert settings["RuntimeDirectory"] == "switchboard-web"
    assert "Environment=PROMETHEUS_MULTIPROC_DIR=/run/switchboard-web" in unit.splitlines()
    args = _exec_start(ROOT / "deploy" / "systemd" / "switchboard-web.service")
    # The installed module (no checkout on the host): gunicorn imports python:MODULE.
    config = args[args.index("--config") + 1]
    assert config.startswith("python:")
    hooks = import_module(config.removeprefix("python:"))
    assert callable(hooks.child_exit)  # the hook that tidies a dead worker's files


def test_the_web_unit_gives_each_worker_threads_for_its_live_overviews_besides_its_requests(settings):
    unit = (ROOT / "deploy" / "systemd" / "switchboard-web.service").read_text()
    args = _exec_start(ROOT / "deploy" / "systemd" / "switchboard-web.service")
    kept = int(next(line for line in unit.splitlines() if line.startswith("Environment=WEB_THREADS=")).split("=")[-1])
    threads = int(args[args.index("--threads") + 1])
    assert threads - kept == settings.LIVE_STREAMS_PER_PROCESS
    hooks = import_module(args[args.index("--config") + 1].removeprefix("python:"))
    assert callable(hooks.post_worker_init)  # tells the app how many it may take
