"""SENTRY_DSN: errors reported to Sentry too, tagged with the request's trace id; sentry-sdk
is an optional extra, and a DSN without it is refused at start rather than ignored."""

import os
import subprocess
import sys
from pathlib import Path

from callcenter.sentry import tag_trace_id
from queues_app.tracing import traced

ROOT = Path(__file__).resolve().parents[2]
DSN = "https://public@o1.ingest.example/2"


def start(script: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "SENTRY_DSN": DSN}
    return subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)


def test_a_report_carries_the_trace_id_of_the_request_it_came_from():
    with traced("trace-9"):
        assert tag_trace_id({"tags": {"a": "b"}}, {}) == {"tags": {"a": "b", "trace_id": "trace-9"}}
    assert tag_trace_id({}, {}) == {}


def test_a_dsn_without_sentry_sdk_is_refused_with_the_extra_to_install():
    # A process where sentry-sdk cannot be imported, as where the extra is not installed.
    done = start("import sys; sys.modules['sentry_sdk'] = None; import django; django.setup()")
    assert done.returncode != 0
    assert "SENTRY_DSN is set but sentry-sdk is not installed: pip install 'switchboard[sentry]'." in done.stderr


def test_with_sentry_sdk_the_dsn_starts_it_with_the_django_integration():
    done = start(
        "import django, sentry_sdk; django.setup();"
        "client = sentry_sdk.get_client();"
        "print(client.options['dsn'], 'django' in client.integrations, client.options['before_send'].__name__)"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [DSN, "True", "tag_trace_id"]
