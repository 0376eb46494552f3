"""The settings fail closed: DEBUG is off unless asked for, and then the process refuses
to start without a real SECRET_KEY and ALLOWED_HOSTS; production values pass Django's
deployment checks; `make run`'s local `.env` is enough for every command."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from callcenter import local_env
from callcenter.security import MIN_SECRET_KEY_LENGTH, production_problems

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION_KEY = "x7$k2!pQ9@vL4#mZ8^rT1&wY6*hB3(nC5)jF0_dG-sA+eU=oI" * 2
# What the environment says about these is what each test decides.
DECIDED = (
    "DJANGO_SETTINGS_MODULE",
    "DJANGO_ALLOW_ASYNC_UNSAFE",  # set for the browser tests only
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
    "SECURE_HSTS_PRELOAD",
    "SESSION_HOURS",
)


def manage(args, tmp_path, **variables):
    """`manage.py ARGS` with the project's own settings, no `.env` file unless
    SWITCHBOARD_ENV_FILE names one, and only these variables of the ones decided here."""
    env = {name: value for name, value in os.environ.items() if name not in DECIDED}
    env.update(
        {
            "SWITCHBOARD_ENV_FILE": "",
            "DYNAMODB_ENDPOINT_URL": "",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
            **variables,
        }
    )
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def production(**overrides):
    return {"DEBUG": "false", "SECRET_KEY": PRODUCTION_KEY, "ALLOWED_HOSTS": "switchboard.example.com", **overrides}


def test_check_deploy_reports_nothing_with_production_values(tmp_path):
    result = manage(["check", "--deploy", "--fail-level", "DEBUG"], tmp_path, **production())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout
    assert "WARNING" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("variables", "named"),
    [
        ({"SECRET_KEY": PRODUCTION_KEY, "ALLOWED_HOSTS": "switchboard.example.com"}, None),  # DEBUG unset: off
        ({"ALLOWED_HOSTS": "switchboard.example.com"}, "SECRET_KEY is not set"),
        ({"SECRET_KEY": PRODUCTION_KEY}, "ALLOWED_HOSTS is empty"),
        ({"SECRET_KEY": PRODUCTION_KEY, "ALLOWED_HOSTS": " , "}, "ALLOWED_HOSTS is empty"),
        ({"SECRET_KEY": "s3cr3t-but-short", "ALLOWED_HOSTS": "a.example"}, "SECRET_KEY is too short"),
        ({"SECRET_KEY": "a" * 60, "ALLOWED_HOSTS": "a.example"}, "SECRET_KEY is too short or too plain"),
        # the old default and the .env.example placeholder
        ({"SECRET_KEY": "insecure-local-development-key-change-me", "ALLOWED_HOSTS": "a.example"}, "placeholder"),
        ({"SECRET_KEY": "replace-me-with-a-long-random-string", "ALLOWED_HOSTS": "a.example"}, "placeholder"),
    ],
)
def test_with_debug_unset_check_refuses_without_a_real_key_and_hosts(tmp_path, variables, named):
    result = manage(["check"], tmp_path, **variables)
    if named is None:  # the control: with both given, DEBUG unset starts (in production mode)
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode != 0
    assert "ImproperlyConfigured: Refusing to start with DEBUG off (the default)" in result.stderr
    assert named in result.stderr
    assert "DEBUG=true" in result.stderr  # and says how to develop locally
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_debug_is_off_unless_set(tmp_path):
    code = "from django.conf import settings; print(settings.DEBUG, settings.SECURE_SSL_REDIRECT)"
    result = manage(["shell", "--no-imports", "-c", code], tmp_path, **production())
    assert result.stdout.split() == ["False", "True"], result.stderr
    result = manage(["shell", "--no-imports", "-c", code], tmp_path, **production(DEBUG="true"))
    assert result.stdout.split() == ["True", "False"], result.stderr


def test_env_example_holds_production_values_that_refuse_until_replaced(tmp_path):
    example = (ROOT / ".env.example").read_text()
    assert "\nDEBUG=false\n" in example
    result = manage(["check"], tmp_path, SWITCHBOARD_ENV_FILE=str(ROOT / ".env.example"))
    assert result.returncode != 0
    assert "SECRET_KEY is a published placeholder" in result.stderr


def test_the_local_env_of_make_run_is_enough_for_any_command(tmp_path):
    path = tmp_path / ".env"
    assert local_env.write(path)
    text = path.read_text()
    assert "DEBUG=true" in text.splitlines()
    key = next(line.split("=", 1)[1] for line in text.splitlines() if line.startswith("SECRET_KEY="))
    assert len(key) >= MIN_SECRET_KEY_LENGTH and production_problems(key, ["h"]) == []
    assert path.stat().st_mode & 0o077 == 0  # readable by its owner only
    # A second `make run` keeps the developer's file as it is.
    assert not local_env.write(path)
    assert path.read_text() == text
    # Another checkout gets another key.
    other = tmp_path / "other.env"
    local_env.write(other)
    assert other.read_text() != text

    result = manage(
        ["shell", "--no-imports", "-c", "from django.conf import settings; print(settings.DEBUG, settings.SECRET_KEY)"],
        tmp_path,
        SWITCHBOARD_ENV_FILE=str(path),
    )
    assert result.stdout.split() == ["True", key], result.stderr


def test_debug_without_a_key_gets_a_random_one_per_process_never_a_known_one(tmp_path):
    code = "from django.conf import settings; print(settings.SECRET_KEY)"
    first = manage(["shell", "--no-imports", "-c", code], tmp_path, DEBUG="true")
    second = manage(["shell", "--no-imports", "-c", code], tmp_path, DEBUG="true")
    assert first.returncode == 0, first.stderr
    assert len(first.stdout.strip()) >= MIN_SECRET_KEY_LENGTH
    assert first.stdout != second.stdout


def test_hsts_subdomains_and_preload_only_when_asked_for(tmp_path):
    code = (
        "from django.conf import settings; print(settings.SECURE_HSTS_SECONDS, settings.SECURE_HSTS_INCLUDE_SUBDOMAINS,"
        " settings.SECURE_HSTS_PRELOAD)"
    )
    result = manage(["shell", "--no-imports", "-c", code], tmp_path, **production())
    assert result.stdout.split() == ["31536000", "False", "False"], result.stderr
    asked = production(SECURE_HSTS_INCLUDE_SUBDOMAINS="true", SECURE_HSTS_PRELOAD="true")
    result = manage(["shell", "--no-imports", "-c", code], tmp_path, **asked)
    assert result.stdout.split() == ["31536000", "True", "True"], result.stderr
    # Asked for, the deployment checks still pass (nothing left to silence).
    result = manage(["check", "--deploy", "--fail-level", "DEBUG"], tmp_path, **asked)
    assert result.returncode == 0 and "no issues (0 silenced)" in result.stdout, result.stdout + result.stderr


def test_a_session_lasts_a_shift(tmp_path):
    code = "from django.conf import settings; print(settings.SESSION_COOKIE_AGE)"
    assert manage(["shell", "--no-imports", "-c", code], tmp_path, **production()).stdout.strip() == str(12 * 3600)
    assert manage(
        ["shell", "--no-imports", "-c", code], tmp_path, **production(SESSION_HOURS="8")
    ).stdout.strip() == str(8 * 3600)
    refused = manage(["check"], tmp_path, **production(SESSION_HOURS="0"))
    assert refused.returncode != 0 and "SESSION_HOURS must be a positive number" in refused.stderr


def test_empty_endpoint_setting_means_real_aws(tmp_path):
    env = {**os.environ, "DYNAMODB_ENDPOINT_URL": ""}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'tests.settings');"
            "django.setup(); from django.conf import settings; print(repr(settings.DYNAMODB_ENDPOINT_URL))",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.stdout.strip() == "None", result.stderr


def test_production_problems_name_each_variable():
    assert production_problems(PRODUCTION_KEY, ["switchboard.example.com"]) == []
    both = production_problems("", [])
    assert [problem.split()[0] for problem in both] == ["SECRET_KEY", "ALLOWED_HOSTS"]
    assert "secrets.token_urlsafe(50)" in both[0]
    assert production_problems("django-insecure-" + "x" * 60, ["h"])[0].startswith("SECRET_KEY is a published")


def test_run_local_is_for_development_only(settings):
    from django.core.management import CommandError, call_command

    settings.DEBUG = False
    with pytest.raises(CommandError, match="needs DEBUG=true"):
        call_command("run_local", no_server=True)


def test_a_timer_left_empty_or_0_is_off_as_the_readme_says(tmp_path):
    timers = ("ANSWER_TIMEOUT_SECONDS", "WRAP_UP_SECONDS", "AGENT_PRESENCE_SECONDS")
    code = f"from django.conf import settings; print([getattr(settings, n) for n in {timers!r}])"
    empty = manage(["shell", "--no-imports", "-c", code], tmp_path, **production(**dict.fromkeys(timers, "")))
    assert empty.stdout.strip() == "[None, None, None]", empty.stderr
    zero = manage(["shell", "--no-imports", "-c", code], tmp_path, **production(**dict.fromkeys(timers, "0")))
    assert zero.stdout.strip() == "[None, None, None]", zero.stderr
    some = manage(["shell", "--no-imports", "-c", code], tmp_path, **production(**dict.fromkeys(timers, "30")))
    assert some.stdout.strip() == "[30.0, 30.0, 30.0]", some.stderr


@pytest.mark.parametrize(
    "variables, said",
    [
        ({"ANSWER_TIMEOUT_SECONDS": "abc"}, "ANSWER_TIMEOUT_SECONDS='abc' is not a valid float"),
        ({"ANSWER_TIMEOUT_SECONDS": "0.01"}, "ANSWER_TIMEOUT_SECONDS is 1 to 600 seconds"),
        ({"AGENT_NOT_READY_REASONS": "missed"}, "AGENT_NOT_READY_REASONS needs at least one reason"),
        ({"SHIPMENT_MAX_RECEIVES": "five"}, "SHIPMENT_MAX_RECEIVES='five' is not a valid int"),
        ({"SWITCHBOARD_MATCHING_SHARDS": "0"}, "SWITCHBOARD_MATCHING_SHARDS is 1 to 64, not 0"),
        ({"COUNTS_FLUSH_SECONDS": "0.5"}, "COUNTS_FLUSH_SECONDS is 1 to 300 seconds, not 0.5"),
    ],
)
def test_a_setting_that_cannot_be_read_is_named_with_its_value(tmp_path, variables, said):
    refused = manage(["check"], tmp_path, **production(**variables))
    assert refused.returncode != 0 and f"ImproperlyConfigured: {said}" in refused.stderr
