"""`manage.py serve` (what `make serve` calls): the production shape on this machine.
DEBUG off, gunicorn with two workers, static files compressed by WhiteNoise, the background
processes; SIGTERM stops every one of them.

/metrics under it: the two workers share their counters (prometheus_client's multiprocess
mode), scraped again and again while requests that reach DynamoDB land on both workers and
one worker is replaced. No counter or histogram series ever goes down, and the totals are
every worker's: the latency histogram counts exactly the requests sent, per route.

One `serve` for the module (`serving`, started once): the tests that use it run first and
the test of SIGTERM last, in the order of this file. A test run alone starts its own.
"""

import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

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
HISTOGRAM = "switchboard_http_request_duration_seconds"
# The routes requested, each with a path that makes DynamoDB requests (ids of nothing:
# a GetItem each, then a 404), and the route label /metrics must use instead of the path.
ROUTES = {
    "/api/calls/<call_id>": lambda: f"/api/calls/call-{uuid.uuid4().hex[:12]}",
    "/api/agents/<agent_id>": lambda: f"/api/agents/agent-{uuid.uuid4().hex[:12]}",
    "/api/queues": lambda: "/api/queues",
}
ROUNDS = 6  # at least; more until two workers have answered the API
MAX_ROUNDS = 20
PER_ROUTE = 4  # requests per route and round, sent at once


@dataclass
class Serving:
    process: subprocess.Popen
    env: dict[str, str]
    base: str
    folder: Path  # its files; every process it starts has this path in its environment
    log_path: Path
    metrics_dir: Path  # where the workers share their counters

    def log(self) -> str:
        return self.log_path.read_text()

    def children(self) -> dict[str, int]:
        """The pid of each process serve started, as its log names them."""
        output = self.log()
        return {name: int(re.search(rf"started {name} \(pid (\d+)\)", output).group(1)) for name in CHILDREN}


@pytest.fixture(scope="module")
def serving(tmp_path_factory):
    """`manage.py serve` with its own DynamoDB Local (--data-dir), answering /healthz."""
    folder = tmp_path_factory.mktemp("serve")
    port = free_port()
    env = manage_env(
        DYNAMODB_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}",
        DYNAMODB_TABLE_PREFIX="serve-",
        DATABASE_URL=f"sqlite:///{folder / 'db.sqlite3'}",
        STATIC_ROOT=str(folder / "static"),
        CACHE_URL=f"filecache://{folder / 'cache'}",
        API_RATE_LIMIT="",  # the scrapes' rounds of requests are not what is measured there
        PORT=str(port),
        WEB_CONCURRENCY="2",
    )
    log_path = folder / "serve.log"
    log = open(log_path, "w")
    process = start_manage(["serve", "--workers", "2", "--data-dir", str(folder / "dynamodb")], env, log)
    served = Serving(process, env, f"http://127.0.0.1:{port}", folder, log_path, ROOT / "var" / f"prometheus-{port}")
    try:
        started = time.monotonic()
        assert wait_for(lambda: _answers(f"{served.base}/healthz"), timeout=180, step=0.5), served.log()
        print(f"serve answered /healthz after {time.monotonic() - started:.1f} s")
        yield served
    finally:
        if process.poll() is None:  # a failure, or the module run without its test of SIGTERM
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        log.close()


def fetch(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return answer.status, answer.headers, answer.read()


def get(url, token=None):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _answers(url):
    try:
        return get(url)[0] == 200
    except OSError:
        return False


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is not running: its parent has not reaped it yet.
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_serve_answers_with_debug_off_and_serves_compressed_static_files(serving):
    base = serving.base
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
    db = Dynamo(prefix="serve-", endpoint_url=serving.env["DYNAMODB_ENDPOINT_URL"], region="us-east-1")
    holds = wait_for(lambda: (h := dispatch.current_holder(db)) and h.live(time.time()), timeout=30)
    assert holds, serving.log()
    assert dispatch.current_holder(db).address.startswith("127.0.0.1:")

    # Without the hash, nothing is served with DEBUG off except by WhiteNoise.
    status, headers, _ = fetch(f"{base}/static/css/switchboard.css")
    assert status == 200 and headers["Content-Type"].startswith("text/css")

    output = serving.log()
    assert all(alive(pid) for pid in serving.children().values()), output
    assert "Using worker: gthread" in output  # threaded: a request mostly waits on DynamoDB


# --- /metrics across the workers -------------------------------------------------------


def series(text):
    """Every sample of the counters and histograms: {(name, labels): value}."""
    found = {}
    for family in text_string_to_metric_families(text):
        if family.type in ("counter", "histogram"):
            for sample in family.samples:
                found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def requests_per_route(found):
    counts = Counter()
    for (name, labels), value in found.items():
        if name == f"{HISTOGRAM}_count":
            counts[dict(labels)["route"]] += value
    return counts


def workers_of(master):
    """The pids of gunicorn's workers (the master's children)."""
    pids = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == master and fields[0] != "Z":
            pids.add(int(stat.parent.name))
    return pids


def api_requests_by_worker(directory, scratch):
    """{pid: API requests it answered}, from each worker's own histogram file."""
    answered = {}
    for path in directory.glob("histogram_*.db"):
        alone = scratch / path.stem
        alone.mkdir(exist_ok=True)
        shutil.copy(path, alone / path.name)
        total = sum(
            sample.value
            for family in MultiProcessCollector(None, path=str(alone)).collect()
            for sample in family.samples
            if sample.name == f"{HISTOGRAM}_count" and sample.labels["route"].startswith("/api/")
        )
        answered[int(path.stem.split("_")[1])] = total
    return answered


def replace_a_worker(master, answered):
    """SIGTERM to a worker that has answered the API; its pid once gunicorn has started
    another in its place (from zero, while the files of the one that left still count)."""
    candidates = [pid for pid in sorted(workers_of(master)) if answered.get(pid)]
    assert candidates, f"no worker has kept its figures in the shared directory: {answered}"
    replaced = candidates[0]
    os.kill(replaced, signal.SIGTERM)

    def replacement_started():
        workers = workers_of(master)
        return len(workers) == 2 and replaced not in workers

    assert wait_for(replacement_started, timeout=60, step=0.2)
    return replaced


def test_every_scrape_adds_up_every_worker_and_no_counter_goes_down(serving, tmp_path):
    base, env, shared = serving.base, serving.env, serving.metrics_dir
    master = serving.children()["gunicorn"]
    assert wait_for(lambda: len(workers_of(master)) == 2, timeout=60, step=0.2)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "demo_users"], cwd=ROOT, env=env, check=True, capture_output=True)
    token = subprocess.run(
        [*manage, "create_api_token", "viewer", "--name", "prometheus"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()

    scrapes, seen = [], []
    checked = 0

    def scrape():
        """One more scrape, whose every counter and histogram series is in the
        last one's, never lower."""
        nonlocal checked
        status, text = get(f"{base}/metrics", token)
        assert status == 200, text
        found = series(text)
        if seen:
            went_down = {k: (v, found.get(k)) for k, v in seen[-1].items() if found.get(k, -1) < v}
            assert went_down == {}, f"scrape {len(scrapes) + 1}: (before, now) {went_down}"
            checked += len(seen[-1])
        scrapes.append(text)
        seen.append(found)

    scrape()
    # Nothing has asked the API yet (serve empties the workers' directory before gunicorn
    # starts, and the module's other tests ask no API route).
    assert {route: requests_per_route(seen[0])[route] for route in ROUTES} == dict.fromkeys(ROUTES, 0)
    sent = Counter()
    ids = []
    replaced = None
    with ThreadPoolExecutor(max_workers=8) as pool:
        for round_ in range(MAX_ROUNDS):
            batch = [(route, make()) for route, make in ROUTES.items() for _ in range(PER_ROUTE)]
            statuses = list(pool.map(lambda job: get(base + job[1], token)[0], batch))
            assert all(s in (200, 404) for s in statuses), statuses
            sent.update(route for route, _ in batch)
            ids += [path.rsplit("/", 1)[1] for route, path in batch if "<" in route]
            scrape()
            if round_ == 2:
                replaced = replace_a_worker(master, api_requests_by_worker(shared, tmp_path))
                scrape()
            answered = api_requests_by_worker(shared, tmp_path)
            if round_ + 1 >= ROUNDS and sum(1 for n in answered.values() if n) >= 2:
                break
    scrape()

    last = seen[-1]
    # Every worker's requests, whichever worker answered the scrape: exactly those sent.
    assert {route: requests_per_route(last)[route] for route in ROUTES} == dict(sent)
    assert requests_per_route(last)["/metrics"] >= len(scrapes) - 1
    get_items = last[("switchboard_dynamodb_requests_total", (("operation", "GetItem"),))]
    assert get_items >= sent["/api/calls/<call_id>"] + sent["/api/agents/<agent_id>"]
    # The route, never the path: none of the ids requested is in a label.
    assert ids and not [i for i in ids if i in scrapes[-1]]
    # The requests were spread: at least two workers answered the API, and the one
    # replaced left its files behind, still counted.
    answered = api_requests_by_worker(shared, tmp_path)
    assert sum(1 for n in answered.values() if n) >= 2, answered
    assert answered.get(replaced)
    print(
        f"{len(scrapes)} scrapes, {checked} series compared with the next scrape "
        f"({len(last)} in the last), none lower; {sum(sent.values())} API requests answered by "
        f"{sorted(answered.items())} (pid: requests), worker {replaced} replaced"
    )


# --- stopping (the module's last test) ---------------------------------------------------


def test_sigterm_stops_everything_serve_started_and_removes_the_workers_metrics_files(serving):
    pids = serving.children()
    assert serving.metrics_dir.exists()  # the workers' counters, while they run
    stopping = time.monotonic()
    os.killpg(serving.process.pid, signal.SIGTERM)
    assert serving.process.wait(timeout=90) == 0, serving.log()
    print(f"SIGTERM to exit: {time.monotonic() - stopping:.1f} s")
    output = serving.log()
    assert "DynamoDB Local stopped" in output
    assert [pid for pid in pids.values() if alive(pid)] == [], output
    # Nothing it started is left: no gunicorn worker, no background process, no
    # DynamoDB Local (`ps eww` shows each process's environment, which names its folder).
    table = subprocess.run(["ps", "eww", "-A", "-o", "pid=,args="], capture_output=True, text=True).stdout
    left = [line for line in table.splitlines() if str(serving.folder) in line and "pytest" not in line]
    assert left == [], output + "\n".join(left)
    try:
        urllib.request.urlopen(f"{serving.base}/healthz", timeout=1)
        raise AssertionError("gunicorn still answers")
    except urllib.error.URLError:
        pass
    assert not serving.metrics_dir.exists()  # serve removes its directory once everything has stopped
