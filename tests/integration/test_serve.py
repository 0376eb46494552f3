"""`manage.py serve` (what `make serve` calls): the production shape on this machine.
DEBUG off, gunicorn, static files compressed by WhiteNoise, the background processes;
SIGTERM stops every one of them."""

import gzip
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from queues_app.ddb.client import Dynamo
from queues_app.ddb.local import free_port
from queues_app.routing import dispatch
from tests.helpers.commands import manage_env, start_manage
from tests.helpers.threads import wait_for

ROOT = Path(__file__).resolve().parents[2]
CHILDREN = (
    "gunicorn",
    "run_matcher",
    "collect_metrics",
    "run_shipment_worker",
    "run_task_processor",
    "escalate_callers",
    "run_webhook_worker",
)


def fetch(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return answer.status, answer.headers, answer.read()


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is not running: its parent has not reaped it yet.
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_serve_answers_with_debug_off_serves_compressed_static_files_and_stops_everything(tmp_path):
    port = free_port()
    env = manage_env(
        DYNAMODB_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}",
        DYNAMODB_TABLE_PREFIX="serve-",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        STATIC_ROOT=str(tmp_path / "static"),
        PORT=str(port),
        WEB_CONCURRENCY="2",
    )
    log_path = tmp_path / "serve.log"
    log = open(log_path, "w")
    process = start_manage(["serve", "--data-dir", str(tmp_path / "dynamodb")], env, log)
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        for _ in range(240):  # until gunicorn answers
            try:
                status, _, _ = fetch(f"{base}/healthz")
                if status == 200:
                    break
            except OSError:
                time.sleep(0.5)
        else:
            raise AssertionError(log_path.read_text())
        print(f"serve answered /healthz after {time.monotonic() - started:.1f} s")

        status, headers, body = fetch(f"{base}/login/")
        page = body.decode()
        assert status == 200
        # DEBUG off: no debug toolbar of Django's, the security headers are there.
        assert "Strict-Transport-Security" not in headers  # plain HTTP: no HSTS
        assert headers["Content-Security-Policy"]
        css = re.search(r'href="(/static/css/switchboard\.[0-9a-f]{12}\.css)"', page)
        assert css, page[:2000]

        status, headers, plain = fetch(base + css.group(1))
        assert status == 200
        assert headers["Content-Type"].startswith("text/css")
        assert "immutable" in headers["Cache-Control"]  # WhiteNoise, for a hashed name
        assert headers.get("Content-Encoding") is None
        assert b"{" in plain

        status, headers, compressed = fetch(base + css.group(1), {"Accept-Encoding": "gzip"})
        assert status == 200
        assert headers["Content-Encoding"] == "gzip"
        assert "Accept-Encoding" in headers["Vary"]
        assert gzip.decompress(compressed) == plain
        assert len(compressed) < len(plain)
        print(f"switchboard.css: {len(plain)} bytes, {len(compressed)} gzipped")

        status, _, body = fetch(f"{base}/readyz")
        assert status == 200, body

        # The matcher holds the dispatcher's lease, listening on loopback (no setting needed).
        db = Dynamo(prefix="serve-", endpoint_url=env["DYNAMODB_ENDPOINT_URL"], region="us-east-1")
        holds = wait_for(lambda: (h := dispatch.current_holder(db)) and h.live(time.time()), timeout=30)
        assert holds, log_path.read_text()
        assert dispatch.current_holder(db).address.startswith("127.0.0.1:")

        # Without the hash, nothing is served with DEBUG off except by WhiteNoise.
        status, headers, _ = fetch(f"{base}/static/css/switchboard.css")
        assert status == 200 and headers["Content-Type"].startswith("text/css")

        output = log_path.read_text()
        pids = {name: int(re.search(rf"started {name} \(pid (\d+)\)", output).group(1)) for name in CHILDREN}
        assert all(alive(pid) for pid in pids.values()), output
        assert "Using worker: gthread" in output  # threaded: a request mostly waits on DynamoDB

        stopping = time.monotonic()
        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(timeout=90) == 0, log_path.read_text()
        print(f"SIGTERM to exit: {time.monotonic() - stopping:.1f} s")
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()
    output = log_path.read_text()
    assert "DynamoDB Local stopped" in output
    assert [pid for pid in pids.values() if alive(pid)] == [], output
    # Nothing it started is left: no gunicorn worker, no background process, no
    # DynamoDB Local (`ps eww` shows each process's environment, which names tmp_path).
    table = subprocess.run(["ps", "eww", "-A", "-o", "pid=,args="], capture_output=True, text=True).stdout
    left = [line for line in table.splitlines() if str(tmp_path) in line and "pytest" not in line]
    assert left == [], output + "\n".join(left)
    try:
        urllib.request.urlopen(f"{base}/healthz", timeout=1)
        raise AssertionError("gunicorn still answers")
    except urllib.error.URLError:
        pass
