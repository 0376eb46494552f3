"""Requests in the logs: a fault nobody caught is one JSON line with its traceback and
the request's trace id (Django's loggers write where the application's do, DEBUG off
too); a W3C traceparent gives the trace id; gunicorn's access log is a line per request
in the same format, with the trace id."""

import io
import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from django.http import HttpResponse
from django.test import Client
from django.urls import reverse

from callcenter.log_format import JsonFormatter
from queues_app.tracing import TraceIdMiddleware
from queues_app.views import overview

ROOT = Path(__file__).resolve().parents[2]
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE}-00f067aa0ba902b7-01"


@pytest.fixture
def json_console():
    """What the settings' console handler writes, in JSON, for the test's duration."""
    handler = next(h for h in logging.getLogger("django").handlers if h.name == "console")
    written = io.StringIO()
    stream, formatter = handler.setStream(written), handler.formatter
    handler.setFormatter(JsonFormatter())
    yield lambda: [json.loads(line) for line in written.getvalue().splitlines()]
    handler.setStream(stream)
    handler.setFormatter(formatter)


def test_a_fault_nobody_caught_is_one_json_line_with_its_traceback_and_trace_id(
    supervisor, moto_db, monkeypatch, settings, json_console
):
    settings.DEBUG = False

    def broken(_dashboard):
        raise RuntimeError("a bug")

    monkeypatch.setitem(overview.PANELS, "calls", broken)
    client = Client(raise_request_exception=False)
    client.force_login(supervisor)
    response = client.get(reverse("home"), HTTP_TRACEPARENT=TRACEPARENT)
    assert response.status_code == 500 and response["X-Trace-Id"] == TRACE
    [line] = [entry for entry in json_console() if entry["logger"] == "django.request"]
    assert (line["level"], line["message"], line["status"], line["trace_id"]) == (
        "ERROR",
        "Internal Server Error: /",
        500,
        TRACE,
    )
    assert line["exc"].startswith("Traceback (most recent call last):")
    assert 'raise RuntimeError("a bug")' in line["exc"] and line["exc"].endswith("RuntimeError: a bug")


def test_a_refused_host_is_logged_by_django_security(client, settings, json_console):
    settings.DEBUG = False
    response = client.get("/", HTTP_HOST="attacker.example")
    assert response.status_code == 400
    [line] = [entry for entry in json_console() if entry["logger"] == "django.security.DisallowedHost"]
    assert "attacker.example" in line["message"]


def traced_id(rf, **headers) -> str:
    return TraceIdMiddleware(lambda request: HttpResponse())(rf.get("/", **headers))["X-Trace-Id"]


def test_a_valid_traceparent_gives_the_trace_id(rf):
    assert traced_id(rf, HTTP_TRACEPARENT=TRACEPARENT) == TRACE
    assert traced_id(rf, HTTP_TRACEPARENT=f" 00-{TRACE}-00f067aa0ba902b7-00 ") == TRACE


def test_the_callers_own_trace_id_comes_before_a_traceparent(rf):
    assert traced_id(rf, HTTP_X_TRACE_ID="order-77", HTTP_TRACEPARENT=TRACEPARENT) == "order-77"


@pytest.mark.parametrize(
    "header",
    [
        f"00-{'0' * 32}-00f067aa0ba902b7-01",  # all-zero trace id
        f"00-{TRACE}-{'0' * 16}-01",  # all-zero parent id
        f"01-{TRACE}-00f067aa0ba902b7-01",  # another version
        f"00-{TRACE.upper()}-00f067aa0ba902b7-01",  # upper case
        f"00-{TRACE[:-1]}-00f067aa0ba902b7-01",  # 31 digits
        f"00-{TRACE}-00f067aa0ba902b7",  # no flags
        f"00-{TRACE}-00f067aa0ba902b7-01-extra",
        "",
    ],
)
def test_an_invalid_traceparent_is_ignored(rf, header):
    made_up = traced_id(rf, HTTP_TRACEPARENT=header)
    assert len(made_up) == 16 and made_up not in TRACE


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_gunicorns_access_log_is_a_json_line_per_request_with_the_trace_id(tmp_path):
    port = free_port()
    env = {**os.environ, "LOG_FORMAT": "json", "DJANGO_SETTINGS_MODULE": "tests.settings"}
    args = [sys.executable, "-m", "gunicorn", "callcenter.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    args += ["--workers", "1", "--no-control-socket", "--access-logfile", "-"]
    args += ["--logger-class", "callcenter.gunicorn_logging.AccessLogger"]
    log = tmp_path / "gunicorn.log"
    with log.open("w") as out:
        server = subprocess.Popen(args, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        for _ in range(300):  # until it answers
            try:
                response = httpx.get(
                    f"http://127.0.0.1:{port}/login/?next=/",
                    headers={"traceparent": TRACEPARENT, "User-Agent": "probe/1"},
                )
                break
            except httpx.TransportError:
                assert server.poll() is None, log.read_text()
                time.sleep(0.1)
        else:
            raise AssertionError(log.read_text())
        assert response.status_code == 200
    finally:
        server.terminate()
        server.wait(timeout=30)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    [access] = [line for line in lines if line["logger"] == "gunicorn.access"]
    assert (access["level"], access["trace_id"]) == ("INFO", TRACE)
    assert access["message"].startswith("GET /login/?next=/ HTTP/1.1 200 ")
    http = access["http"]
    assert (http["method"], http["path"], http["query"], http["status"]) == ("GET", "/login/", "next=/", 200)
    assert http["bytes"] == len(response.content) and http["user_agent"] == "probe/1"
    assert http["remote_addr"] == "127.0.0.1" and isinstance(http["duration_ms"], float)
