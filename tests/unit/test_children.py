"""The children of `serve` (and the helper it shares): started in their own groups,
stopped together; the production-like environment it gives them."""

import secrets
import sys
import time
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.ddb.local import free_port
from queues_app.management.children import Children
from queues_app.management.commands.serve import production_env

# Says so (a file in its folder) once SIGTERM is ignored: a slow machine may take longer
# than any fixed pause to start Python.
IGNORES_SIGTERM = (
    "import pathlib, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "pathlib.Path('ignoring').touch(); time.sleep(60)"
)


def test_production_env_turns_debug_off_without_tls_and_keeps_the_rest():
    env = production_env({"DEBUG": "true", "SECRET_KEY": "old", "DYNAMODB_TABLE_PREFIX": "x-"})
    assert env["DEBUG"] == "false" and env["DJANGO_SETTINGS_MODULE"] == "callcenter.settings"
    assert env["SECRET_KEY"] != "old" and len(env["SECRET_KEY"]) >= 50
    assert env["SECRET_KEY"] != production_env({})["SECRET_KEY"]
    assert env["ALLOWED_HOSTS"] == "127.0.0.1,localhost"
    assert env["SECURE_SSL_REDIRECT"] == env["SESSION_COOKIE_SECURE"] == env["CSRF_COOKIE_SECURE"] == "false"
    assert env["DYNAMODB_TABLE_PREFIX"] == "x-"


def test_instances_given_one_key_share_it_and_a_weak_one_is_refused(monkeypatch):
    key = secrets.token_urlsafe(50)
    assert production_env({"SECRET_KEY": "old"}, key)["SECRET_KEY"] == key
    monkeypatch.setenv("SERVE_SECRET_KEY", "short")
    with pytest.raises(CommandError, match="SERVE_SECRET_KEY: SECRET_KEY is too short"):
        call_command("serve", "--port", str(free_port()), stdout=StringIO())


def test_first_exit_names_the_child_that_stopped_and_stop_ends_the_others(tmp_path):
    children = Children()
    children.start("sleeper", [sys.executable, "-c", "import time; time.sleep(60)"], cwd=tmp_path)
    children.start("quitter", [sys.executable, "-c", "raise SystemExit(3)"], cwd=tmp_path)
    try:
        assert children.first_exit(poll_seconds=0.05) == ("quitter", 3)
    finally:
        children.stop(timeout=5)
    assert children.processes["sleeper"].returncode == -15  # SIGTERM


def test_a_child_ignoring_sigterm_is_killed_after_the_timeout(tmp_path):
    children = Children()
    child = children.start("stubborn", [sys.executable, "-c", IGNORES_SIGTERM], cwd=tmp_path)
    for _ in range(1200):  # its handler is in place (60 s at most)
        if (tmp_path / "ignoring").exists() or child.poll() is not None:
            break
        time.sleep(0.05)
    assert (tmp_path / "ignoring").exists()
    started = time.monotonic()
    children.stop(timeout=1)
    assert child.returncode == -9 and time.monotonic() - started < 30  # killed, not waited for (60 s)
