"""LOG_FORMAT=json: one JSON object per log line."""

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from callcenter.log_format import JsonFormatter
from queues_app.tracing import TraceIdFilter, traced

ROOT = Path(__file__).resolve().parents[2]


def record(message, *args, exc_info=None):
    rec = logging.LogRecord("queues_app.shipments.worker", logging.INFO, __file__, 1, message, args, exc_info)
    TraceIdFilter().filter(rec)
    return rec


def test_a_record_is_one_json_object_on_one_line():
    with traced("trace-42"):
        rec = record("shipment %s completed in %.2f s", "s1\nwith a newline", 0.42)
    line = JsonFormatter().format(rec)
    assert "\n" not in line
    entry = json.loads(line)
    assert entry["message"] == "shipment s1\nwith a newline completed in 0.42 s"
    assert entry["level"] == "INFO" and entry["logger"] == "queues_app.shipments.worker"
    assert entry["trace_id"] == "trace-42"
    assert entry["time"].endswith("+00:00") and "T" in entry["time"]


def test_outside_a_trace_the_trace_id_is_null_and_a_traceback_is_kept():
    try:
        raise ValueError("boom")
    except ValueError:
        rec = record("handler crashed", exc_info=sys.exc_info())
    entry = json.loads(JsonFormatter().format(rec))
    assert entry["trace_id"] is None
    assert "ValueError: boom" in entry["exc"]


def test_the_settings_choose_it_with_log_format_json():
    script = (
        "import django, logging; django.setup();"
        "from queues_app.tracing import traced;"
        'exec(\'with traced("t-1"):\\n logging.getLogger("queues_app.x").warning("hello %s", "json")\')'
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "callcenter.settings"}
    for value, is_json in (("json", True), ("", False)):
        env["LOG_FORMAT"] = value
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        line = done.stderr.strip().splitlines()[-1]
        if is_json:
            assert json.loads(line) | {"time": None} == {
                "time": None,
                "level": "WARNING",
                "logger": "queues_app.x",
                "message": "hello json",
                "trace_id": "t-1",
            }
        else:
            assert line.endswith("WARNING queues_app.x [trace t-1] hello json")
