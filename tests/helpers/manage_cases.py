"""Several `manage.py` command lines for the price of one Django start: `python -m
tests.helpers.manage_cases` reads a JSON list of argument lists on stdin, starts Django
as `manage.py` does, then runs each command line in a child forked from that process
(`callcenter.cli.main` with its own `sys.argv`, stdout and stderr), and prints a JSON
list of [exit status, stdout, stderr]. Each child exits as a `manage.py` process would:
the status of its SystemExit, a string code on stderr with status 1, and an uncaught
exception's traceback on stderr with status 1. All the command lines share the
environment the process was given."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import traceback
from importlib import import_module
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_cases(cases: list[list[str]], env: dict[str, str]) -> dict[tuple[str, ...], subprocess.CompletedProcess]:
    """Each of `cases` (arguments after `manage.py`) run as above, by its arguments."""
    driver = subprocess.run(
        [sys.executable, "-m", "tests.helpers.manage_cases"],
        cwd=ROOT,
        env=env,
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert driver.returncode == 0, driver.stdout + driver.stderr
    answers = json.loads(driver.stdout)
    return {
        tuple(args): subprocess.CompletedProcess(["manage.py", *args], code, out, err)
        for args, (code, out, err) in zip(cases, answers, strict=True)
    }


def exit_status(exc: SystemExit) -> int:
    """What Python makes of a SystemExit reaching the top of a program."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def run_in_child(args: list[str], out, err) -> int:
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    sys.argv = ["manage.py", *args]  # run from ROOT, as the tests run manage.py
    from callcenter.cli import main

    try:
        main()
        status = 0
    except SystemExit as exc:
        status = exit_status(exc)
    except BaseException:  # as the interpreter does: the traceback, status 1
        traceback.print_exc()
        status = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return status


def start_django(cases: list[list[str]]) -> None:
    """What every child would do first: Django's setup, the commands' modules, and the
    URLconf with its views (the system checks each command runs import them)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "callcenter.settings")
    import django
    from django.conf import settings
    from django.core.management import get_commands, load_command_class

    django.setup()
    import_module(settings.ROOT_URLCONF)
    commands = get_commands()
    for name in {args[0] for args in cases if args and args[0] in commands}:
        load_command_class(commands[name], name)


def main() -> None:
    cases = json.load(sys.stdin)
    start_django(cases)
    answers = []
    for args in cases:
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # the child never returns into this loop
                status = 70
                try:
                    status = run_in_child(args, out, err)
                finally:
                    os._exit(status)
            status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
            out.seek(0)
            err.seek(0)
            answers.append([status, out.read(), err.read()])
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
