"""/metrics under `manage.py serve` (what `make serve` calls): gunicorn with two workers
that share their counters (prometheus_client's multiprocess mode), scraped again and
again while requests that reach DynamoDB land on both workers and one worker is
replaced. No counter or histogram series ever goes down, and the totals are every
worker's: the latency histogram counts exactly the requests sent, per route."""

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
from pathlib import Path

from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from queues_app.ddb.local import free_port
from tests.helpers.commands import manage_env, start_manage
from tests.helpers.threads import wait_for

ROOT = Path(__file__).resolve().parents[2]
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


def get(url, token=None):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


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


def test_every_scrape_adds_up_every_worker_and_no_counter_goes_down(tmp_path):
    port = free_port()
    env = manage_env(
        DYNAMODB_ENDPOINT_URL=f"http://127.0.0.1:{free_port()}",
        DYNAMODB_TABLE_PREFIX="scrape-",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        STATIC_ROOT=str(tmp_path / "static"),
        CACHE_URL=f"filecache://{tmp_path / 'cache'}",
        API_RATE_LIMIT="",  # the rounds' requests are not what is measured here
        PORT=str(port),
    )
    shared = ROOT / "var" / f"prometheus-{port}"
    log_path = tmp_path / "serve.log"
    log = open(log_path, "w")
    process = start_manage(["serve", "--workers", "2", "--data-dir", str(tmp_path / "dynamodb")], env, log)
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        assert wait_for(lambda: _answers(f"{base}/healthz"), timeout=180, step=0.5), log_path.read_text()
        print(f"serve answered /healthz after {time.monotonic() - started:.1f} s")
        master = int(re.search(r"started gunicorn \(pid (\d+)\)", log_path.read_text()).group(1))
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

        sent = Counter()
        ids = []
        scrape()
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

        os.killpg(process.pid, signal.SIGTERM)
        assert process.wait(timeout=90) == 0, log_path.read_text()
    finally:
        if process.poll() is None:  # a failure above: serve still stops what it started
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        log.close()
    assert not shared.exists()  # serve removes its directory once everything has stopped


def _answers(url):
    try:
        return get(url)[0] == 200
    except OSError:
        return False
