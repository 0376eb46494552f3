"""Load test: the production shape under a phone system, supervisors and a shipment
producer at once, the call rate stepped up until the API slows down or fails.

    .venv/bin/python -m bench.load [--json] [--rates 5,10,20,40,80,160] [--step-seconds 60]
                                   [--supervisors 20[,200]] [--list-rate 1] [--shipment-rate 5] [--agents 400]
                                   [--handle-seconds 4] [--web-workers 4] [--web-threads 8]
                                   [--shipment-workers 2]
                                   [--p95-limit 1.0] [--no-meter] [--seed 7] [--warmup 1]
                                   [--endpoint URL] [--smoke]

What runs, as `manage.py serve` runs it (DEBUG off, a generated SECRET_KEY, static files
collected and served by WhiteNoise), on fresh tables under a prefix of their own and a
Django database of its own (SQLite in a temporary folder; users, sessions, API tokens):

- gunicorn with `--web-workers` workers of `--web-threads` threads (gthread; 1: sync
  workers), which send their new callers to `run_matcher` (the matching dispatcher, as
  `serve` runs it: the load starts once it holds its lease), `escalate_callers` and
  `--shipment-workers` `run_shipment_worker` processes, each in a process group of its
  own (`queues_app.management.children`), all stopped at the end, on Ctrl-C or failure;
- `--agents` agents (one to three languages, one gender), made available before the run.

Then, at once, from this process (threads, httpx):

- the phone system: callers arriving at the step's rate (a Poisson stream) through
  `POST /api/calls` with random preferences (`switchboard_client.Switchboard` when the
  module is importable, else the same calls made here); an assigned call's agent is
  released after a handle time drawn uniformly from 0.5x to 1.5x `--handle-seconds`
  (`POST /api/agents/<id>/release` naming the call, with `then: wrap_up`), then made
  available again after a wrap-up of up to a second (`POST /api/agents/<id>/available`
  naming the version the release answered with, which may hand them a waiting caller at
  once); a waiting call is read again (`GET /api/calls/<id>`)
  about every two seconds until an agent has it (the escalation loop may assign it);
- `--supervisors` supervisors, each logged in with a session of their own, with the
  overview open as a browser has it: the page, then its live stream (`GET /live/`), each
  event a panel shown; when the stream is refused (204: the web workers' stream threads
  are taken) every panel is asked for (`/?panel=<name>`, as htmx does) every 2 s instead;
  now and then a list page (`--list-rate` a second, 1, all of them together: with 20
  supervisors one each 20 s on average, with 200 one each 200 s). A GET whose kept-alive connection the
  server closed as it went out is sent again once, as a browser does
  (`retried_after_reset`). Several counts (`--supervisors 20,200`) run the rates again
  with each, and the report compares them at each rate: panels shown a second, the
  `POST /api/calls` p95, whether held, the web tier's CPU and DynamoDB's requests a second,
  and what each extra panel shown cost of both;
- a shipment producer at `--shipment-rate` a second through `POST /api/shipments`.

The call rate goes through `--rates` one step of `--step-seconds` each (after
`--warmup` x 10 s at the first rate, not measured) and stops after the first step that
is not held. Callers are sent from a pool of their own threads (and connections), so
that nothing else the driver does holds them back; each is recorded by the moment it was
due, with how late the driver sent it and the time the server took from then. A step
counts every caller due in it: it waits for the last ones' answers (up to 35 s) before
it is counted. A step is held unless one of these, each named as its cause: latency (the
p95 of `POST /api/calls` over `--p95-limit` seconds, or a caller with no answer),
limits (429s: `API_RATE_LIMIT`, at its production default, or backpressure), failures
(another status than the expected ones, or no answer), or the driver falling
behind (callers sent more than 0.25 s after they were due, p95). Reported per step and
endpoint: count, p50/p95/p99, failures and 5xx; how late callers were sent; the causes;
the highest rate held; the machine's CPU use and load average, and the CPU seconds each
process used in the step as the kernel accounts them (the web tier with its workers, the
matcher, escalation, the shipment workers, DynamoDB Local, the meter, the driver), per
call answered and per panel shown.

DynamoDB's side is metered between the servers and DynamoDB: every process's requests
go through a small counting proxy (a separate process, in Python: it adds latency and
takes CPU from the servers, so `--no-meter` gives the latencies and the rate held), which adds up, per second,
requests by operation and the capacity units DynamoDB returns (the clients ask for
them), by table, read or write. DynamoDB Local reports capacity for queries, scans and
transactions only; single-item reads and writes are counted as real DynamoDB would
charge items under 1 KB (1 WCU a write, 1 RCU a strongly consistent read, 0.5 an
eventually consistent one) and reported apart as `estimated`. Per call means the whole
step's DynamoDB traffic (supervisors, shipments and workers included) over the calls
placed in it; `python -m bench.scale` measures each operation on its own.

At the end `manage.py check_invariants` checks the stored data (0 violations expected).
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import json
import multiprocessing
import os
import random
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx

from bench import harness
from queues_app.management.children import stop_on_sigterm

PANELS = ("calls", "shipments", "tasks", "grid", "history", "capacity")
LIST_PAGES = ("/agents/", "/calls/", "/shipments/", "/queues/", "/tasks/", "/audit/")
CREATE_CALL = "POST /api/calls"
GET_CALL = "GET /api/calls/<id>"
RELEASE = "POST /api/agents/<id>/release"
AVAILABLE = "POST /api/agents/<id>/available"
SHIPMENT = "POST /api/shipments"
PANEL = "GET /?panel=<name>"
LIVE = "GET /live/"
PUSHED = "panel pushed on /live/"
OVERVIEW = "GET /"
LIST = "GET <list page>"
ENDPOINTS = (CREATE_CALL, GET_CALL, RELEASE, AVAILABLE, SHIPMENT, OVERVIEW, LIVE, PUSHED, PANEL, LIST)
LIVE_STREAMS = 120  # each web worker's threads for open overviews, as `serve` gives them (LIVE_STREAMS_PER_PROCESS)
CALLER_THREADS = 64  # callers in flight at once, each on a connection of its own
CLIENT_TIMEOUT = 30.0  # seconds the driver's clients wait for an answer
SIGN_IN_TIMEOUT = 4 * CLIENT_TIMEOUT  # seconds a supervisor waits for the first page
ANSWER_WAIT = CLIENT_TIMEOUT + 5  # seconds a step's last callers may take
DRIVER_LATE_LIMIT = 0.25  # seconds: a driver sending callers later than this fell behind
SUPERVISOR_PASSWORD = "load-test-supervisor"  # throwaway users in a throwaway database
READS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"})
SINGLE_ITEM = frozenset({"GetItem", "PutItem", "UpdateItem", "DeleteItem"})


@dataclass
class LoadParameters:
    rates: tuple[int, ...] = (5, 10, 20, 40, 80, 160)
    step_seconds: float = 60.0
    supervisors: tuple[int, ...] = (20,)  # one pass of the rates for each count, in this order
    list_rate: float = 1.0  # list pages a second, all the supervisors together
    shipment_rate: float = 5.0
    agents: int = 400
    handle_seconds: float = 4.0
    web_workers: int = 4
    web_threads: int = 8  # more than 1: gunicorn's gthread workers (as deployed), each serving this many at once
    shipment_workers: int = 2
    p95_limit: float = 1.0
    meter: bool = True
    seed: int = 7
    warmup: int = 1


# One short step, and two web workers and one shipment worker: still several web workers
# handing callers to the matcher, with fewer processes to start on a small machine.
SMOKE = dict(
    rates=(2,),
    step_seconds=4.0,
    supervisors=(1, 3),
    shipment_rate=1.0,
    agents=12,
    warmup=0,
    web_workers=2,
    shipment_workers=1,
)


# --- the DynamoDB meter between the servers and DynamoDB --------------------------------------


HOP_BY_HOP = ("content-length", "connection", "transfer-encoding", "date", "server")
THROTTLED = json.dumps(
    {
        "__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
        "message": "Rate of requests exceeds the allowed throughput.",
    }
).encode()


class MeterProxy(ThreadingHTTPServer):
    """Forwards DynamoDB's JSON protocol to `upstream` and adds up, per second, what went
    through: {second: {"ops": {op: [requests, errors]}, "cu": {"table|read": units},
    "estimated": {"table|write": units}, "origins": {process: requests}}}, a process named by
    the `app/<name>` of its User-Agent. `GET /__meter__` answers the lot as JSON.
    `GET /__throttle__?seconds=S&share=F` throttles a share F of the requests for S seconds
    (DynamoDB's ThrottlingException, which botocore retries), as a hot partition would."""

    daemon_threads = True

    def __init__(self, port: int, upstream: str, prefix: str):
        super().__init__(("127.0.0.1", port), _MeterHandler)
        url = urlparse(upstream)
        self.upstream_host, self.upstream_port = url.hostname or "127.0.0.1", url.port or 80
        self.prefix = prefix
        self.lock = threading.Lock()
        self.seconds: dict[int, dict] = {}
        self.local = threading.local()
        self.throttle_until, self.throttle_share = 0.0, 0.0
        self.dice = random.Random(0)

    def throttled(self) -> bool:
        return time.time() < self.throttle_until and self.dice.random() < self.throttle_share

    def connection(self, fresh: bool = False) -> http.client.HTTPConnection:
        if fresh or getattr(self.local, "conn", None) is None:
            self.local.conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        return self.local.conn

    def table(self, name: str | None) -> str:
        return (name or "?").removeprefix(self.prefix)

    def record(self, operation: str, request: bytes, status: int, answer: bytes, origin: str = "?") -> None:
        kind = "read" if operation in READS else "write"
        measured: dict[str, float] = defaultdict(float)
        estimated: dict[str, float] = defaultdict(float)
        try:
            sent = json.loads(request or b"{}")
            received = json.loads(answer or b"{}")
        except ValueError:
            sent, received = {}, {}
        entries = received.get("ConsumedCapacity") or []
        for entry in [entries] if isinstance(entries, dict) else entries:
            measured[f"{self.table(entry.get('TableName'))}|{kind}"] += float(entry.get("CapacityUnits") or 0)
        if not entries and status < 400 and operation in SINGLE_ITEM:
            # DynamoDB Local leaves it out for single items: what DynamoDB charges for one under 1 KB.
            units = 1.0 if kind == "write" or sent.get("ConsistentRead") else 0.5
            estimated[f"{self.table(sent.get('TableName'))}|{kind}"] += units
        second = int(time.time())
        with self.lock:
            bucket = self.seconds.setdefault(
                second, {"ops": {}, "cu": defaultdict(float), "estimated": {}, "origins": defaultdict(int)}
            )
            bucket["origins"][origin] += 1
            counts = bucket["ops"].setdefault(operation, [0, 0])
            counts[0] += 1
            counts[1] += 1 if status >= 400 else 0
            for key, units in measured.items():
                bucket["cu"][key] += units
            for key, units in estimated.items():
                bucket["estimated"][key] = bucket["estimated"].get(key, 0.0) + units

    def dump(self) -> bytes:
        with self.lock:
            return json.dumps({str(k): v for k, v in self.seconds.items()}).encode()


class _MeterHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's pool expects
    server: MeterProxy

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/__throttle__":
            asked = {k: float(v[0]) for k, v in parse_qs(url.query).items()}
            self.server.throttle_until = time.time() + asked.get("seconds", 60.0)
            self.server.throttle_share = asked.get("share", 1.0)
        body = self.server.dump() if self.path == "/__meter__" else b"{}"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        request = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        operation = (self.headers.get("X-Amz-Target") or "?").rpartition(".")[2]
        if self.server.throttled():
            self._answer(400, THROTTLED, [("Content-Type", "application/x-amz-json-1.0")])
            self.server.record(f"{operation} (throttled)", request, 400, THROTTLED)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length")}
        for attempt in (0, 1):
            try:
                conn = self.server.connection(fresh=attempt == 1)
                conn.request("POST", self.path, request, headers)
                answer = conn.getresponse()
                data = answer.read()
                break
            except (OSError, http.client.HTTPException):
                if attempt:
                    self.close_connection = True
                    return
        kept = [(n, v) for n, v in answer.getheaders() if n.lower() not in HOP_BY_HOP]
        self._answer(answer.status, data, kept)
        agent = re.search(r"\bapp/([\w.-]+)", self.headers.get("User-Agent") or "")
        self.server.record(operation, request, answer.status, data, agent.group(1) if agent else "?")

    def _answer(self, status: int, data: bytes, headers: list[tuple[str, str]]) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve_meter(port: int, upstream: str, prefix: str) -> None:
    """The proxy's process: serves until terminated."""
    MeterProxy(port, upstream, prefix).serve_forever(poll_interval=0.2)


def meter_figures(buckets: dict, began: float, ended: float) -> dict:
    """What the proxy counted in the seconds [began, ended)."""
    ops: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    cu: dict[str, float] = defaultdict(float)
    estimated: dict[str, float] = defaultdict(float)
    origins: dict[str, int] = defaultdict(int)
    for second, bucket in buckets.items():
        if int(began) <= int(second) < int(ended):
            for origin, n in bucket.get("origins", {}).items():
                origins[origin] += n
            for op, (n, errors) in bucket["ops"].items():
                ops[op][0] += n
                ops[op][1] += errors
            for key, units in bucket["cu"].items():
                cu[key] += units
            for key, units in bucket["estimated"].items():
                estimated[key] += units
    return {"ops": dict(ops), "cu": dict(cu), "estimated": dict(estimated), "origins": dict(origins)}


# --- the phone system's client ----------------------------------------------------------------


class ApiFailure(Exception):
    """A refusal or failure of the API: `status` (0 when nothing answered)."""

    def __init__(self, status: int, message: str = ""):
        super().__init__(f"{status} {message}".strip())
        self.status = status


class HttpPhone:
    """The phone system's calls, made here: the interface of `switchboard_client.Switchboard`
    (create_call, get_call, make_available, release, create_shipment), answers as dicts."""

    def __init__(self, base_url: str, token: str, *, client: httpx.Client):
        self.base_url = base_url.rstrip("/")
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"}

    def _send(self, method: str, path: str, body: dict | None = None) -> dict:
        try:
            answer = self.client.request(method, self.base_url + path, json=body, headers=self.headers)
        except httpx.HTTPError as exc:
            raise ApiFailure(0, type(exc).__name__) from exc
        if answer.status_code >= 300:
            raise ApiFailure(answer.status_code, answer.text[:200])
        return answer.json()

    def create_call(self, preferences: dict, priority: int = 0) -> dict:
        return self._send("POST", "/api/calls", {"preferences": preferences, "priority": priority})

    def get_call(self, call_id: str) -> dict:
        return self._send("GET", f"/api/calls/{call_id}")

    def make_available(self, agent_id: str, version: int) -> dict:
        return self._send("POST", f"/api/agents/{agent_id}/available", {"version": version})

    def release(self, agent_id: str, call_id: str, then: str = "queue") -> dict:
        return self._send("POST", f"/api/agents/{agent_id}/release", {"call_id": call_id, "then": then})

    def create_shipment(self, data: dict, tenant: str | None = None, priority: int = 0) -> dict:
        return self._send("POST", "/api/shipments", {"data": data, "tenant": tenant, "priority": priority})


# The clients here talk to gunicorn itself, which closes a connection idle for 2 s
# (its keep-alive): a client that kept one longer (httpx: 5 s) would now and then send on
# a connection the server is closing, and get "connection reset". In production a proxy
# sits in between and keeps idle connections far longer.
CONNECTIONS = httpx.Limits(max_connections=200, max_keepalive_connections=200, keepalive_expiry=1.5)


def phone_client(base_url: str, token: str, client: httpx.Client) -> Any:
    """`switchboard_client.Switchboard` when the repository has it, else `HttpPhone`."""
    try:
        from switchboard_client import Switchboard
    except ImportError:
        return HttpPhone(base_url, token, client=client)
    # No retries: a refusal is counted, not hidden in a longer latency.
    transport = httpx.HTTPTransport(limits=CONNECTIONS)
    return Switchboard(base_url, token, timeout=CLIENT_TIMEOUT, max_retries=0, transport=transport)


def is_timeout(error: str) -> bool:
    """Whether `describe_failure`'s words say the client stopped waiting (httpx's timeouts)."""
    return error.split(":", 1)[0].endswith("Timeout")


def describe_failure(exc: BaseException) -> str:
    """What came instead of an answer, in a few words: the exception behind it, if any."""
    cause = exc.__cause__ or exc
    return f"{type(cause).__name__}: {str(cause)[:80]}".rstrip(": ")


def failure_status(exc: BaseException) -> int:
    """The HTTP status a client's exception carries (0: no answer, or unknown)."""
    for name in ("status", "status_code"):
        value = getattr(exc, name, None)
        if isinstance(value, int):
            return value
    response = getattr(exc, "response", None)
    return int(getattr(response, "status_code", 0) or 0)


# --- what the driver records -----------------------------------------------------------------


@dataclass
class Sample:
    endpoint: str
    at: float  # when it was due (arrivals) or sent (the rest), time.time()
    seconds: float  # from sending the request to its answer
    status: int  # the HTTP status; 0 when nothing answered
    error: str = ""  # what came instead of an answer, or the refusal's words
    late: float = 0.0  # arrivals: how long after it was due the driver sent it


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.samples: list[Sample] = []
        self.retries: list[tuple[str, float]] = []  # (endpoint, when): GETs sent again after a reset
        self.lag_max = 0.0

    def add(self, endpoint: str, at: float, seconds: float, status: int, error: str = "", late: float = 0.0) -> None:
        with self.lock:
            self.samples.append(Sample(endpoint, at, seconds, status, error, late))

    def retried(self, endpoint: str) -> None:
        with self.lock:
            self.retries.append((endpoint, time.time()))

    def between(self, began: float, ended: float) -> list[Sample]:
        with self.lock:
            return [s for s in self.samples if began <= s.at < ended]


def endpoint_figures(samples: list[Sample]) -> dict:
    """Per endpoint: count, p50/p95/p99 (ms), failures (no answer, 5xx or an unexpected
    4xx), 5xx, statuses."""
    figures = {}
    for endpoint in ENDPOINTS:
        mine = [s for s in samples if s.endpoint == endpoint]
        if not mine:
            continue
        times = [s.seconds for s in mine]
        statuses: dict[str, int] = defaultdict(int)
        for s in mine:
            statuses[str(s.status)] += 1
        figures[endpoint] = {
            "count": len(mine),
            **{f"p{p}_ms": round(1000 * (harness.percentile(times, p / 100) or 0), 1) for p in (50, 95, 99)},
            "failures": sum(1 for s in mine if s.status == 0 or s.status >= 400),
            "5xx": sum(1 for s in mine if s.status >= 500),
            "statuses": dict(statuses),
        }
        unanswered = Counter(s.error or "unknown" for s in mine if s.status == 0)
        if unanswered:
            figures[endpoint]["no_answer"] = dict(unanswered)
        unavailable = Counter(s.error or "unknown" for s in mine if s.status == 503)
        if unavailable:  # what each 503 said: DynamoDB slow or busy under the load, or a fault
            figures[endpoint]["unavailable"] = dict(unavailable)
    return figures


# --- the workload ---------------------------------------------------------------------------


class Dues:
    """When each request of a stream (callers, shipments) was due, and which of them are
    still unanswered: a step counts those due in it and waits for their answers."""

    def __init__(self, lock: threading.Lock | threading.Condition):
        self.lock = lock
        self.due: list[float] = []  # in order
        self.unanswered: Counter[float] = Counter()

    def sent(self, due: float) -> None:
        with self.lock:
            self.due.append(due)
            self.unanswered[due] += 1

    def answered(self, due: float) -> None:
        with self.lock:
            self.unanswered[due] -= 1
            if not self.unanswered[due]:
                del self.unanswered[due]

    def between(self, began: float, ended: float) -> int:
        with self.lock:
            return sum(1 for due in self.due if began <= due < ended)

    def answered_by(self, ended: float, timeout: float) -> bool:
        """Waits until every request due before `ended` has its answer (or `timeout`
        seconds passed); True when none is left without one."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if not any(due < ended for due in self.unanswered):
                    return True
            time.sleep(0.05)
        return False


class PhoneSystem:
    """Callers arriving, agents released and made available again, waiting calls followed.

    Callers are sent from a pool of their own, so that releases and reads never hold
    them back; each is recorded by the moment it was due, with how late it was sent and
    how long the server took from then."""

    def __init__(self, phone: Any, recorder: Recorder, params: LoadParameters, rng: random.Random, catalog):
        self.phone, self.recorder, self.params, self.rng = phone, recorder, params, rng
        self.dimensions = list(catalog.dimensions)
        self.rate = 0.0
        self.stopping = threading.Event()
        self.callers = ThreadPoolExecutor(max_workers=CALLER_THREADS, thread_name_prefix="caller")
        self.pool = ThreadPoolExecutor(max_workers=160, thread_name_prefix="phone")
        self.timers: list[tuple[float, int, str, str]] = []  # (due, seq, action, agent or call id)
        self.timers_lock = threading.Condition()
        self.seq = 0
        self.handled_calls: set[str] = set()
        self.waiting: dict[str, float] = {}  # call id -> when to read it again
        self.dues = Dues(self.timers_lock)  # the callers'
        self.threads = [
            threading.Thread(target=self._arrivals, name="arrivals", daemon=True),
            threading.Thread(target=self._timers, name="agents", daemon=True),
            threading.Thread(target=self._follow_waiting, name="waiting", daemon=True),
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        with self.timers_lock:
            self.timers_lock.notify_all()
        for thread in self.threads:
            if thread.is_alive():
                thread.join(timeout=30)
        self.callers.shutdown(wait=True, cancel_futures=True)
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _timed(self, endpoint: str, due: float, action):
        """The answer to `action()`, recorded by `due`, its time counted from sending it."""
        sent = time.time()
        late = max(0.0, sent - due)
        try:
            answer = action()
        except Exception as exc:  # the API's refusal or no answer: recorded, the load goes on
            status, error = failure_status(exc), describe_failure(exc)
            self.recorder.add(endpoint, due, time.time() - sent, status, error, late)
            return None
        self.recorder.add(endpoint, due, time.time() - sent, 200, late=late)
        return answer

    def _preferences(self) -> dict:
        prefs = {}
        for name, values in self.dimensions:
            any_share = 0.25 if name.startswith("language") else 0.6
            prefs[name] = "any" if self.rng.random() < any_share else self.rng.choice(list(values))
        return prefs

    def _arrivals(self) -> None:
        due = time.time()
        while not self.stopping.is_set():
            rate = self.rate
            if rate <= 0:
                time.sleep(0.05)
                due = time.time()
                continue
            due += self.rng.expovariate(rate)
            delay = due - time.time()
            if delay > 0:
                self.stopping.wait(delay)
            else:
                self.recorder.lag_max = max(self.recorder.lag_max, -delay)
            if self.stopping.is_set():
                break
            self.dues.sent(due)
            self.callers.submit(self._place, due, self._preferences())

    def _place(self, due: float, preferences: dict) -> None:
        try:
            call = self._timed(CREATE_CALL, due, lambda: self.phone.create_call(preferences))
        finally:
            self.dues.answered(due)
        if call:
            self._follow(call)

    def _follow(self, call: dict) -> None:
        """An assigned call's agent is released after a handle time; a waiting one is read again."""
        call_id = call.get("call_id")
        if not call_id:
            return
        if call.get("status") == "assigned" and call.get("agent_id"):
            with self.timers_lock:
                if call_id in self.handled_calls:
                    return
                self.handled_calls.add(call_id)
                self.waiting.pop(call_id, None)
            handle = self.params.handle_seconds * self.rng.uniform(0.5, 1.5)
            self._later(handle, "release", (call["agent_id"], call_id))
        elif call.get("status") == "waiting":
            with self.timers_lock:
                if call_id not in self.handled_calls:
                    self.waiting.setdefault(call_id, time.time() + 2.0)

    def _later(self, seconds: float, action: str, target: tuple[str, Any]) -> None:
        with self.timers_lock:
            self.seq += 1
            heapq.heappush(self.timers, (time.time() + seconds, self.seq, action, target))
            self.timers_lock.notify()

    def _timers(self) -> None:
        while not self.stopping.is_set():
            with self.timers_lock:
                while not self.stopping.is_set() and (not self.timers or self.timers[0][0] > time.time()):
                    wait = self.timers[0][0] - time.time() if self.timers else 1.0
                    self.timers_lock.wait(max(0.001, min(wait, 1.0)))
                if self.stopping.is_set():
                    return
                due, _, action, target = heapq.heappop(self.timers)
            self.pool.submit(self._agent_step, action, target)

    def _agent_step(self, action: str, target: tuple[str, Any]) -> None:
        """A release names the call it ends; making the agent available names the version
        the release answered with."""
        sent = time.time()  # due when sent: an agent's step is not an arrival
        agent_id, named = target
        if action == "release":
            released = self._timed(RELEASE, sent, lambda: self.phone.release(agent_id, named, then="wrap_up"))
            if released is not None:
                self._later(self.rng.uniform(0.0, 1.0), "available", (agent_id, released["agent"]["version"]))
            return
        answer = self._timed(AVAILABLE, sent, lambda: self.phone.make_available(agent_id, named))
        if answer and answer.get("call"):
            self._follow(answer["call"])

    def _follow_waiting(self) -> None:
        while not self.stopping.is_set():
            now = time.time()
            with self.timers_lock:
                due = [call_id for call_id, at in self.waiting.items() if at <= now][:50]
                for call_id in due:
                    self.waiting[call_id] = now + 2.0
            for call_id in due:
                self.pool.submit(self._read_call, call_id)
            self.stopping.wait(0.5)

    def _read_call(self, call_id: str) -> None:
        call = self._timed(GET_CALL, time.time(), lambda: self.phone.get_call(call_id))
        if call:
            self._follow(call)


class Supervisor(threading.Thread):
    """A logged-in supervisor with the overview open, as a browser has it: its panels
    pushed on the live stream (polled every 2 s when the stream is refused), a list page
    now and then."""

    def __init__(self, base_url: str, username: str, recorder: Recorder, seed: int, list_every: float):
        super().__init__(name=f"supervisor-{username}", daemon=True)
        self.base_url, self.username, self.recorder = base_url, username, recorder
        self.list_every = list_every  # seconds between this supervisor's list pages, on average
        self.stopping = threading.Event()  # the tab closed
        self.watching = threading.Event()  # the overview is open and its panels come (pushed or polled)
        self.rng = random.Random(seed)
        self.client = httpx.Client(
            base_url=base_url, timeout=CLIENT_TIMEOUT, follow_redirects=False, limits=CONNECTIONS
        )

    def log_in(self) -> None:
        """Signed in as the login form signs in (Django's `login()`: a session in the run's
        database), without the form's password hashing: slow on purpose, it would take
        minutes of the servers' CPU for 200 supervisors before any figure is measured."""
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.test import Client

        signer = Client()
        signer.force_login(get_user_model().objects.get(username=self.username))
        self.client.cookies.set(settings.SESSION_COOKIE_NAME, signer.cookies[settings.SESSION_COOKIE_NAME].value)
        # The servers' first page is their slowest (a cold worker): waited for as a person would.
        if self.client.get("/", timeout=SIGN_IN_TIMEOUT).status_code != 200:
            raise RuntimeError(f"{self.username} could not sign in")

    def _get(self, endpoint: str, path: str, **headers: str) -> None:
        sent = time.time()
        error = ""
        for attempt in (1, 2):
            try:
                status = self.client.get(path, headers=headers).status_code
                break
            except (httpx.ReadError, httpx.RemoteProtocolError) as exc:
                # The server closed an idle kept-alive connection as the poll went out: a
                # browser sends such a GET again on a new connection, and so does the
                # supervisor here, once.
                status, error = 0, describe_failure(exc)
                if attempt == 1:
                    self.recorder.retried(endpoint)
            except httpx.HTTPError as exc:
                status, error = 0, describe_failure(exc)
                break
        self.recorder.add(endpoint, sent, time.time() - sent, status, error)

    def run(self) -> None:
        self.stopping.wait(self.rng.uniform(0, 2.0))  # tabs opened at different moments
        self._get(OVERVIEW, "/")
        next_list = self._next_list()
        polling_until = 0.0
        while not self.stopping.is_set():
            # The overview's live stream, as the browser opens it: each event is a panel
            # shown. Refused (204: the workers' stream threads are taken) or broken, the
            # page polls every panel every 2 s, and tries the stream again 30 s on.
            polling = time.monotonic() < polling_until
            if polling or not self._watch_live(next_list):
                if not polling:
                    polling_until = time.monotonic() + 30.0
                began = time.monotonic()
                for panel in PANELS:
                    self._get(PANEL, f"/?panel={panel}", **{"HX-Request": "true"})
                self.watching.set()
                self.stopping.wait(max(0.0, 2.0 - (time.monotonic() - began)))
            if time.monotonic() >= next_list:
                self._get(LIST, self.rng.choice(LIST_PAGES))
                next_list = self._next_list()
        self.client.close()

    def _next_list(self) -> float:
        """When this supervisor next opens a list page: the supervisors together open
        `--list-rate` a second whatever their number (people act at the centre's pace;
        watching costs nothing more)."""
        if self.list_every <= 0:
            return float("inf")
        return time.monotonic() + self.rng.expovariate(1.0 / self.list_every)

    def stop(self) -> None:
        self.stopping.set()

    def _watch_live(self, next_list: float) -> bool:
        """Read the stream until it ends, it is time for a list page, or the run stops;
        False when the server refused it or it broke."""
        sent = time.time()
        try:
            with self.client.stream("GET", "/live/") as answer:
                self.recorder.add(LIVE, sent, time.time() - sent, answer.status_code)
                if answer.status_code != 200:
                    return False
                self.watching.set()
                for line in answer.iter_lines():
                    if line.startswith("event: "):
                        self.recorder.add(PUSHED, time.time(), 0.0, 200)
                    if self.stopping.is_set() or time.monotonic() >= next_list:
                        break
            return True
        except httpx.HTTPError as exc:
            if not self.stopping.is_set():
                self.recorder.add(LIVE, sent, time.time() - sent, 0, describe_failure(exc))
            return False


class ShipmentProducer(threading.Thread):
    def __init__(self, phone: Any, recorder: Recorder, rate: float, stopping: threading.Event, seed: int):
        super().__init__(name="shipments", daemon=True)
        self.phone, self.recorder, self.rate, self.stopping = phone, recorder, rate, stopping
        self.rng = random.Random(seed)
        self.pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="shipments")
        self.dues = Dues(threading.Lock())

    def run(self) -> None:
        due = time.time()
        index = 0
        while self.rate > 0 and not self.stopping.is_set():
            due += self.rng.expovariate(self.rate)
            self.stopping.wait(max(0.0, due - time.time()))
            index += 1
            data = {"to": self.rng.choice(("Porto", "Lyon", "Kraków", "Gent")), "parcels": index % 4 + 1}
            tenant = self.rng.choice(("acme", "globex", "initech"))
            self.dues.sent(due)
            self.pool.submit(self._send, due, data, tenant)
        self.pool.shutdown(wait=True, cancel_futures=True)

    def _send(self, due: float, data: dict, tenant: str) -> None:
        sent = time.time()
        status, error = 201, ""
        try:
            self.phone.create_shipment(data, tenant=tenant)
        except Exception as exc:  # recorded; the load goes on
            status, error = failure_status(exc), describe_failure(exc)
        self.recorder.add(SHIPMENT, due, time.time() - sent, status, error, max(0.0, sent - due))
        self.dues.answered(due)


# --- the servers ------------------------------------------------------------------------------


class LoggedChildren:
    """The servers, each in a process group of its own with its output in a log file;
    stopped together (`queues_app.management.children.Children`)."""

    def __init__(self, logs: Path):
        from queues_app.management.children import Children

        self.children = Children()
        self.logs = logs

    def start(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = open(self.logs / f"{name}.log", "wb")  # noqa: SIM115 - the child keeps it open
        # botocore names the process in its User-Agent (`app/<name>`): the meter counts each one's requests.
        env = {**env, "AWS_SDK_UA_APP_ID": name.partition("-")[0]}
        process = subprocess.Popen(
            args, cwd=harness.ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        self.children.processes[name] = process
        return process

    def exited(self) -> list[str]:
        return [f"{n} (exit {p.returncode})" for n, p in self.children.processes.items() if p.poll() is not None]

    def stop(self) -> None:
        self.children.stop(timeout=35)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(base_url: str, children: LoggedChildren, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if children.exited():
            raise RuntimeError(f"a server exited while starting: {', '.join(children.exited())}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(base_url + "/healthz", timeout=2).status_code == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"the web server did not answer {base_url}/healthz within {timeout:.0f} s")


def wait_for_matcher(db, children: LoggedChildren, timeout: float = 90.0) -> None:
    """Until the matcher process holds the matching dispatcher's lease (the web workers
    send it their callers from then on)."""
    from queues_app.routing import dispatch

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if children.exited():
            raise RuntimeError(f"a server exited while starting: {', '.join(children.exited())}")
        holder = dispatch.current_holder(db)
        if holder and holder.address and holder.live(time.time()):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the matcher did not take the lease within {timeout:.0f} s")


def matched_by_the_matcher(db) -> int:
    """How many callers the matcher process matched, as its last heartbeat (written as it
    stopped) says."""
    from queues_app.figures import heartbeats

    return sum(w.handled for w in heartbeats.workers(db) if w.kind == heartbeats.MATCHER)


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as stat:
        parts = [int(x) for x in stat.readline().split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    return sum(parts) - idle, sum(parts)


def dynamodb_local_pids(endpoint: str) -> list[int]:
    """The DynamoDB Local serving `endpoint` on this machine (none for a remote endpoint)."""
    port = endpoint.rsplit(":", 1)[-1].strip("/")
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                command = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                if any(b"DynamoDBLocal" in part for part in command) and port.encode() in command:
                    found.append(int(entry))
    return found


def process_cpu(roots: dict[str, int]) -> dict[str, float]:
    """CPU seconds (user + system) each named process and its children have used so far,
    as the kernel accounts them (/proc/<pid>/stat), and this driver's own."""
    ticks: dict[int, int] = {}
    children: dict[int, list[int]] = defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                text = Path(f"/proc/{entry}/stat").read_text()
                fields = text[text.rindex(")") + 2 :].split()
                ticks[int(entry)] = int(fields[11]) + int(fields[12])
                children[int(fields[1])].append(int(entry))

    def tree(pid: int) -> int:
        return ticks.get(pid, 0) + sum(tree(child) for child in children.get(pid, ()))

    per_second = os.sysconf("SC_CLK_TCK")
    spent = {name: tree(pid) / per_second for name, pid in roots.items()}
    spent["driver"] = time.process_time()
    return spent


def cpu_spent(before: dict[str, float], after: dict[str, float], step: dict) -> dict:
    """A step's CPU seconds by process (the shipment workers together), per call answered and
    per panel shown."""
    spent: dict[str, float] = defaultdict(float)
    for name, seconds in after.items():
        kind = "run_shipment_worker" if name.startswith("run_shipment_worker") else name
        kind = "web" if kind == "gunicorn" else kind
        spent[kind] += seconds - before.get(name, 0.0)
    calls = step["endpoints"].get(CREATE_CALL, {}).get("count", 0)
    return {
        "seconds": {name: round(value, 2) for name, value in spent.items()},
        "web_per_call": round(spent["web"] / calls, 4) if calls else None,
        "web_per_panel_view": round(spent["web"] / step["panel_views"], 5) if step["panel_views"] else None,
    }


def viewers_compared(steps: list[dict]) -> list[dict]:
    """At each rate run with several numbers of supervisors: what the more watching cost
    beyond the fewer, in DynamoDB requests a second and web CPU, and each extra panel
    shown's share of it (amortized)."""
    compared = []
    by_rate: dict[int, list[dict]] = defaultdict(list)
    for step in steps:
        by_rate[step["rate"]].append(step)
    for rate, runs in sorted(by_rate.items()):
        runs.sort(key=lambda step: step["supervisors"])
        for few, many in zip(runs, runs[1:], strict=False):
            views = [step["panel_views"] / step["seconds"] for step in (few, many)]
            web = [step["cpu_seconds"]["seconds"].get("web", 0.0) / step["seconds"] for step in (few, many)]
            extra_views = views[1] - views[0]
            row: dict[str, Any] = {
                "rate": rate,
                "supervisors": [few["supervisors"], many["supervisors"]],
                "panel_views_per_s": [round(v, 1) for v in views],
                "create_call_p95_ms": [step["endpoints"].get(CREATE_CALL, {}).get("p95_ms") for step in (few, many)],
                "held": [few["held"], many["held"]],
                "web_cpu_s_per_s": [round(w, 3) for w in web],
                "web_cpu_ms_per_extra_panel_view": round(1000 * (web[1] - web[0]) / extra_views, 3)
                if extra_views > 0
                else None,
            }
            if few["dynamodb"] and many["dynamodb"]:
                rates = [few["dynamodb"]["requests_per_s"], many["dynamodb"]["requests_per_s"]]
                row["dynamodb_requests_per_s"] = rates
                row["dynamodb_requests_per_extra_panel_view"] = (
                    round((rates[1] - rates[0]) / extra_views, 4) if extra_views > 0 else None
                )
            compared.append(row)
    return compared


@dataclass
class LoadRun:
    parameters: LoadParameters
    tables_prefix: str = ""
    client: str = ""
    machine: dict = field(default_factory=dict)
    steps: list[dict] = field(default_factory=list)
    highest_rate_held: int | None = None
    held_by_supervisors: dict[int, int] = field(default_factory=dict)  # supervisors -> highest rate held
    viewers: list[dict] = field(default_factory=list)  # the same rate with fewer and more supervisors
    # The supervisors' overviews, live streams and panels pushed on them over the whole run, in or between steps.
    overviews: dict = field(default_factory=dict)
    matched_by_the_matcher: int | None = None  # callers run_matcher matched (its last heartbeat)
    audit: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict:
        return {
            "parameters": {
                **asdict(self.parameters),
                "rates": list(self.parameters.rates),
                "supervisors": list(self.parameters.supervisors),
            },
            "tables_prefix": self.tables_prefix,
            "client": self.client,
            "machine": self.machine,
            "steps": self.steps,
            "highest_rate_held": self.highest_rate_held,
            "held_by_supervisors": self.held_by_supervisors,
            "viewers": self.viewers,
            "overviews": self.overviews,
            "matched_by_the_matcher": self.matched_by_the_matcher,
            "audit": self.audit,
            "problems": self.problems,
            "seconds": round(self.seconds, 1),
        }


def prepare_database() -> str:
    """This run's Django database, migrated; the phone system's API token (a supervisor's)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group
    from django.core.management import call_command

    from queues_app.http.roles import SUPERVISORS
    from queues_app.models import ApiToken

    call_command("migrate", "--noinput", verbosity=0)
    group, _ = Group.objects.get_or_create(name=SUPERVISORS)
    User = get_user_model()
    phone_user = User.objects.create_user("phone-system", password=uuid.uuid4().hex)
    phone_user.groups.add(group)
    return ApiToken.issue(phone_user, "load test")[1]


def create_supervisors(count: int) -> list[str]:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import Group

    from queues_app.http.roles import SUPERVISORS

    group = Group.objects.get(name=SUPERVISORS)
    User = get_user_model()
    hashed = make_password(SUPERVISOR_PASSWORD)  # hashed once: the hasher is slow on purpose
    names = [f"supervisor-{i:02d}" for i in range(count)]
    for name in names:
        user = User.objects.create(username=name, password=hashed, is_staff=True)
        user.groups.add(group)
    return names


def seed_agents(db, count: int, rng: random.Random) -> None:
    """`count` agents (one to three languages, one gender), every one made available."""
    from queues_app.agents.roster import Agents
    from queues_app.centre.call_center import CallCenter

    agents = Agents(db)
    dims = dict(agents.catalog.dimensions)
    built = []
    for index in range(count):
        skills = {}
        for name, values in dims.items():
            size = rng.randint(1, min(3, len(values))) if name.startswith("language") else 1
            skills[name] = rng.sample(list(values), size)
        built.append(agents.build(f"Agent {index:04d}", skills, agent_id=f"a{index:04d}"))
    agents.create_many(built)
    router = CallCenter(db)
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda agent: router.make_available(agent.agent_id), built))


def run_audit(manage: list[str], env: dict[str, str]) -> dict:
    began = time.perf_counter()
    finished = subprocess.run(
        [*manage, "check_invariants"], cwd=harness.ROOT, env=env, capture_output=True, text=True, timeout=900
    )
    lines = (finished.stdout + finished.stderr).strip().splitlines()
    return {
        "ok": finished.returncode == 0,
        "summary": lines[-1] if lines else "",
        "violations": [line for line in lines[:-1] if line.strip()][:20],
        "seconds": round(time.perf_counter() - began, 1),
    }


def step_figures(
    rate: int, began: float, ended: float, recorder: Recorder, due: tuple[int, int], buckets: dict | None, cpu: tuple
) -> dict:
    """`due`: the callers and the shipments due in the step."""
    samples = recorder.between(began, ended)
    endpoints = endpoint_figures(samples)
    with recorder.lock:
        retried = Counter(endpoint for endpoint, at in recorder.retries if began <= at < ended)
    for endpoint, count in retried.items():
        if endpoint in endpoints:
            endpoints[endpoint]["retried_after_reset"] = count
    seconds = ended - began
    calls = endpoints.get(CREATE_CALL, {}).get("count", 0)
    late = [s.late for s in samples if s.endpoint == CREATE_CALL]
    figures: dict[str, Any] = {
        "rate": rate,
        "seconds": round(seconds, 1),
        "calls_due": due[0],
        "shipments_due": due[1],
        "calls_per_s": round(calls / seconds, 2),
        "endpoints": endpoints,
        "panel_views": sum(endpoints.get(name, {}).get("count", 0) for name in (PUSHED, PANEL)),
        "failures": sum(e["failures"] for e in endpoints.values()),
        "5xx": sum(e["5xx"] for e in endpoints.values()),
        "cpu_busy": cpu[0],
        "load_average": cpu[1],
        "driver": {
            f"late_{name}_ms": round(1000 * (harness.percentile(late, p) or 0), 1)
            for name, p in (("p50", 0.5), ("p95", 0.95), ("max", 1.0))
        },
        "dynamodb": None,
    }
    if buckets is not None:
        metered = meter_figures(buckets, began, ended)
        requests = sum(n for n, _ in metered["ops"].values())
        per = max(calls, 1)

        def units(kind: str, which: str = "cu") -> float:
            return sum(v for k, v in metered[which].items() if k.endswith("|" + kind))

        by_table: dict[str, dict[str, float]] = defaultdict(dict)
        for which in ("cu", "estimated"):
            for key, value in metered[which].items():
                table, _, kind = key.partition("|")
                name = f"{kind}_cu" if which == "cu" else f"{kind}_cu_estimated"
                by_table[table][name] = round(by_table[table].get(name, 0) + value / per, 3)
        figures["dynamodb"] = {
            "requests_per_s": round(requests / seconds, 1),
            "requests_per_call": round(requests / per, 2),
            "read_cu_per_call": round(units("read") / per, 2),
            "write_cu_per_call": round(units("write") / per, 2),
            "read_cu_estimated_per_call": round(units("read", "estimated") / per, 2),
            "write_cu_estimated_per_call": round(units("write", "estimated") / per, 2),
            "by_operation_per_call": {op: round(n / per, 2) for op, (n, _) in sorted(metered["ops"].items())},
            "errors": {op: e for op, (_, e) in metered["ops"].items() if e},
            "by_table_per_call": dict(by_table),
            # Whose requests: each server process by its name, the driver's own set-up apart.
            "by_process_per_s": {
                origin: round(n / seconds, 1) for origin, n in sorted(metered["origins"].items(), key=lambda o: -o[1])
            },
        }
    return figures


def not_held_because(step: dict, p95_limit: float) -> list[str]:
    """Why a step is not held, each cause named: the server's latency, failures, or the
    driver falling behind (sending callers late, which is not the server's doing)."""
    calls = step["endpoints"].get(CREATE_CALL, {})
    causes = []
    if not calls:
        causes.append("latency: no call was answered")
    elif calls["p95_ms"] / 1000 > p95_limit:
        causes.append(f"latency: POST /api/calls p95 {calls['p95_ms']:.0f} ms, over {p95_limit:g} s")
    refused = sum(e.get("statuses", {}).get("429", 0) for e in step["endpoints"].values())
    if refused:  # a limit, not a fault: API_RATE_LIMIT or backpressure
        causes.append(f"limits: {refused} answers were 429 (API_RATE_LIMIT or backpressure)")
    # A request the client gave up waiting for is the server's latency; any other missing answer is a failure.
    timed_out = sum(
        n for e in step["endpoints"].values() for error, n in e.get("no_answer", {}).items() if is_timeout(error)
    )
    if timed_out:
        causes.append(f"latency: {timed_out} requests had no answer within the client's {CLIENT_TIMEOUT:g} s")
    # DynamoDB slow or busy under the load: the servers said so (503 and Retry-After), as they should.
    unavailable = sum(e.get("statuses", {}).get("503", 0) for e in step["endpoints"].values())
    if unavailable:
        causes.append(f"outage: {unavailable} answers were 503 (DynamoDB did not answer in time, or was busy)")
    if step["failures"] - refused - timed_out - unavailable:
        causes.append(f"failures: {step['failures'] - refused - timed_out - unavailable} ({step['5xx']} 5xx)")
    unanswered = step["calls_due"] - calls.get("count", 0)
    if unanswered > 0:
        causes.append(f"latency: {unanswered} of {step['calls_due']} calls due had no answer {ANSWER_WAIT:g} s on")
    shipped = step["endpoints"].get(SHIPMENT, {}).get("count", 0)
    if step.get("shipments_due", 0) > shipped:
        causes.append(
            f"latency: {step['shipments_due'] - shipped} of {step['shipments_due']} shipments due had no answer "
            f"{ANSWER_WAIT:g} s on"
        )
    if step.get("supervisors") and not step["panel_views"]:
        # Open overviews shown nothing for the whole step: the panels' reads were that slow.
        causes.append(f"latency: no panel was shown to the {step['supervisors']} supervisors watching")
    if step["driver"]["late_p95_ms"] / 1000 > DRIVER_LATE_LIMIT:
        causes.append(f"driver: callers sent {step['driver']['late_p95_ms']:.0f} ms after they were due (p95)")
    return causes


def load_test(endpoint: str, params: LoadParameters, workdir: Path, *, log=harness.progress) -> LoadRun:
    """The whole run; `workdir` holds this run's Django database (DATABASE_URL), static
    files and the servers' logs, and is removed at the end."""
    from queues_app.agents.skills import SkillCatalog
    from queues_app.ddb import schema
    from queues_app.ddb.client import Dynamo
    from queues_app.management.children import BACKGROUND
    from queues_app.management.commands.serve import production_env

    run = LoadRun(params)
    began = time.perf_counter()
    rng = random.Random(params.seed)
    prefix = run.tables_prefix = f"load-{uuid.uuid4().hex[:8]}-"
    db = Dynamo(prefix=prefix, endpoint_url=endpoint, region="us-east-1", read_timeout=60)
    children = LoggedChildren(workdir)
    meter_process = None
    stopping = threading.Event()
    phone_system: PhoneSystem | None = None
    threads: list[threading.Thread] = []
    manage = [sys.executable, str(harness.ROOT / "manage.py")]
    # One secret key for the servers and this driver, whose sessions the servers read.
    secret_key = secrets.token_urlsafe(50)
    env = production_env(dict(os.environ), secret_key)
    from django.conf import settings

    settings.SECRET_KEY = secret_key
    env.update(
        STATIC_ROOT=str(workdir / "static"),
        CACHE_URL=f"filecache://{workdir / 'cache'}",  # one panel cache for the workers, as `serve` has
        DYNAMODB_ENDPOINT_URL=endpoint,
        DYNAMODB_TABLE_PREFIX=prefix,
        LOG_LEVEL="WARNING",
    )
    try:
        schema.create_tables(db)
        token = prepare_database()
        supervisors = create_supervisors(max(params.supervisors, default=0))
        log(f"seeding {params.agents} agents ...")
        seed_agents(db, params.agents, rng)

        served_endpoint = endpoint
        if params.meter:
            meter_port = free_port()
            meter_process = multiprocessing.get_context("spawn").Process(
                target=serve_meter, args=(meter_port, endpoint, prefix), daemon=True, name="dynamodb-meter"
            )
            meter_process.start()
            served_endpoint = f"http://127.0.0.1:{meter_port}"
            for _ in range(100):
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", meter_port), timeout=0.2):
                    break
                time.sleep(0.1)

        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        env["DYNAMODB_ENDPOINT_URL"] = served_endpoint
        subprocess.run([*manage, "collectstatic", "--noinput", "-v", "0"], cwd=harness.ROOT, env=env, check=True)
        gunicorn = [sys.executable, "-m", "gunicorn", "callcenter.wsgi:application", "--bind", f"127.0.0.1:{port}"]
        gunicorn += ["--workers", str(params.web_workers), "--no-control-socket", "--timeout", "60"]
        gunicorn += ["--config", str(harness.ROOT / "callcenter" / "gunicorn_config.py")]
        # As `serve` runs them: each open overview holds a thread besides the requests' threads.
        gunicorn += ["--worker-class", "gthread", "--threads", str(params.web_threads + LIVE_STREAMS)]
        env["WEB_THREADS"] = str(params.web_threads)
        children.start("gunicorn", gunicorn, env)
        children.start("run_matcher", [*manage, *BACKGROUND["run_matcher"]], env)
        children.start("escalate_callers", [*manage, *BACKGROUND["escalate_callers"]], env)
        for index in range(params.shipment_workers):
            children.start(f"run_shipment_worker-{index + 1}", [*manage, *BACKGROUND["run_shipment_worker"]], env)
        wait_until_up(base_url, children)
        wait_for_matcher(db, children)
        per_worker = f" ({params.web_threads} threads each and {LIVE_STREAMS} for open overviews)"
        log(
            f"serving at {base_url}: gunicorn x{params.web_workers}{per_worker}, the matcher, escalation, "
            f"{params.shipment_workers} shipment worker(s)"
        )

        recorder = Recorder()
        http = httpx.Client(timeout=60, limits=CONNECTIONS)
        phone = phone_client(base_url, token, http)
        run.client = type(phone).__module__ + "." + type(phone).__name__
        phone_system = PhoneSystem(phone, recorder, params, rng, SkillCatalog.from_settings())
        shipments = ShipmentProducer(phone, recorder, params.shipment_rate, stopping, params.seed)
        threads.append(shipments)
        run.machine = {"cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in os.getloadavg()]}
        phone_system.start()
        for thread in threads:
            thread.start()
        watching: list[Supervisor] = []
        processes = {name: process.pid for name, process in children.children.processes.items()}
        for pid in dynamodb_local_pids(endpoint)[:1]:
            processes["dynamodb_local"] = pid
        if meter_process is not None and meter_process.pid:
            processes["meter"] = meter_process.pid
        for count in params.supervisors:
            # The same call rates again with this many supervisors watching (more are logged in
            # and open the overview; fewer are closed).
            while len(watching) < count:
                every = count / params.list_rate if params.list_rate > 0 else 0.0
                seed = params.seed + len(watching)
                supervisor = Supervisor(base_url, supervisors[len(watching)], recorder, seed, every)
                supervisor.log_in()
                supervisor.start()
                watching.append(supervisor)
            while len(watching) > count:
                watching.pop().stop()
            # A step measures this many supervisors watching: it starts once each has the overview
            # open (on a busy machine the page itself can take seconds).
            deadline = time.monotonic() + 60
            late = [s.username for s in watching if not s.watching.wait(max(0.0, deadline - time.monotonic()))]
            if late:
                run.problems.append(f"not watching 60 s after they opened the overview: {', '.join(late)}")
            log(f"{count} supervisors watching")
            plan = [(params.rates[0], 10.0 * params.warmup, False)] if params.warmup else []
            plan += [(rate, params.step_seconds, True) for rate in params.rates]
            for rate, seconds, measured in plan:
                phone_system.rate = rate
                cpu_before, processes_before = cpu_times(), process_cpu(processes)
                step_began = time.time()
                stopping.wait(seconds)
                step_ended = time.time()
                cpu_after, processes_after = cpu_times(), process_cpu(processes)
                if children.exited():
                    run.problems.append(f"a server exited during the load: {', '.join(children.exited())}")
                    break
                if not measured:
                    log(f"warm-up at {rate} calls/s done")
                    continue
                # Every caller due in the step is counted with its answer, however late it came.
                phone_system.dues.answered_by(step_ended, timeout=ANSWER_WAIT)
                shipments.dues.answered_by(step_ended, timeout=ANSWER_WAIT)
                time.sleep(1.5)  # answers to the supervisors' last requests of the step
                busy = (cpu_after[0] - cpu_before[0]) / max(1, cpu_after[1] - cpu_before[1])
                buckets = None
                if meter_process is not None:
                    buckets = json.loads(httpx.get(f"{served_endpoint}/__meter__", timeout=30).content)
                step = step_figures(
                    rate,
                    step_began,
                    step_ended,
                    recorder,
                    (phone_system.dues.between(step_began, step_ended), shipments.dues.between(step_began, step_ended)),
                    buckets,
                    (round(busy, 2), round(os.getloadavg()[0], 2)),
                )
                step["supervisors"] = count
                step["cpu_seconds"] = cpu_spent(processes_before, processes_after, step)
                step["causes"] = not_held_because(step, params.p95_limit)
                step["held"] = not step["causes"]
                run.steps.append(step)
                calls = step["endpoints"].get(CREATE_CALL, {})
                log(
                    f"{count} supervisors, {rate} calls/s: {calls.get('count', 0)} of {step['calls_due']} calls due, "
                    f"p50 {calls.get('p50_ms')} ms, p95 {calls.get('p95_ms')} ms, {step['panel_views']} panels shown, "
                    f"{step['failures']} failures ({step['5xx']} 5xx), CPU {busy:.0%}, "
                    f"sent late p95 {step['driver']['late_p95_ms']} ms"
                    + ("" if step["held"] else "  -> not held: " + "; ".join(step["causes"]))
                )
                if step["held"]:
                    run.highest_rate_held = max(run.highest_rate_held or 0, rate)
                    run.held_by_supervisors[count] = rate
                else:
                    break
        for supervisor in watching:
            supervisor.stop()
        threads += watching
        run.viewers = viewers_compared(run.steps)
        opened = endpoint_figures(recorder.between(0, float("inf")))
        run.overviews = {name: figures for name, figures in opened.items() if name in (OVERVIEW, LIVE, PUSHED)}
        run.machine["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
        run.machine["driver_lag_max_s"] = round(recorder.lag_max, 3)
    finally:
        stopping.set()
        try:
            if phone_system is not None:
                phone_system.stop()
            for thread in threads:
                if thread.is_alive():
                    thread.join(timeout=30)
        finally:
            # Whatever went wrong above, no server outlives the run.
            children.stop()
            if meter_process is not None:
                meter_process.terminate()
                meter_process.join(10)
            if sys.exc_info()[0] is not None:  # failed or interrupted: nothing to audit, drop the tables
                with contextlib.suppress(Exception):
                    schema.delete_tables(db)
                shutil.rmtree(workdir, ignore_errors=True)
    try:
        run.matched_by_the_matcher = matched_by_the_matcher(db)
        env["DYNAMODB_ENDPOINT_URL"] = endpoint
        log("check_invariants ...")
        run.audit = run_audit(manage, env)
        if not run.audit["ok"]:
            run.problems.append(f"check_invariants: {run.audit['summary']}")
    finally:
        schema.delete_tables(db)
        shutil.rmtree(workdir, ignore_errors=True)
    run.problems += faults(run.steps)
    run.seconds = time.perf_counter() - began
    return run


def faults(steps: list[dict]) -> list[str]:
    """What no load explains: a 500, a 503 for a missing table, no step at all. (A 429 or a
    503 for DynamoDB slow or busy sheds load on purpose.)"""
    endpoints = [e for step in steps for e in step["endpoints"].values()]
    found = []
    internal = sum(e["statuses"].get("500", 0) for e in endpoints)
    if internal:
        found.append(f"{internal} answers were 500 (internal error)")
    missing = sum(n for e in endpoints for said, n in e.get("unavailable", {}).items() if "table missing" in said)
    if missing:
        found.append(f"{missing} answers were 503 for a missing table")
    if not steps:
        found.append("no step was measured")
    return found


# --- the report ---------------------------------------------------------------------------------


def report(run: LoadRun, where: str) -> str:
    p = run.parameters
    lines = [
        f"Load test on {where}: gunicorn x{p.web_workers}, run_matcher, escalate_callers, "
        f"{p.shipment_workers} shipment workers; {p.agents} agents, {'/'.join(map(str, p.supervisors))} supervisors, "
        f"{p.shipment_rate:g} shipments/s, "
        f"handle time {p.handle_seconds:g} s, steps of {p.step_seconds:g} s; client {run.client}",
        f"Machine: {run.machine.get('cpus')} CPUs, load average before {run.machine.get('load_average_before')}, "
        f"after {run.machine.get('load_average_after')}; driver lag at most {run.machine.get('driver_lag_max_s')} s",
        "",
    ]
    for step in run.steps:
        lines.append(
            f"{step['supervisors']} supervisors, {step['rate']} calls/s ({step['calls_due']} due, "
            f"{step['calls_per_s']} answered/s, {step['panel_views']} panels shown, CPU "
            f"{step['cpu_busy']:.0%}, load {step['load_average']}; callers sent late p50 / p95 / max "
            f"{step['driver']['late_p50_ms']} / {step['driver']['late_p95_ms']} / {step['driver']['late_max_ms']} ms): "
            + ("held" if step["held"] else "NOT held: " + "; ".join(step["causes"]))
        )
        lines.append(
            f"  {'endpoint':<32} {'count':>6} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'fail':>5} {'5xx':>4}"
        )
        for name, e in step["endpoints"].items():
            lines.append(
                f"  {name:<32} {e['count']:>6} {e['p50_ms']:>8} {e['p95_ms']:>8} {e['p99_ms']:>8} "
                f"{e['failures']:>5} {e['5xx']:>4}"
            )
        d = step["dynamodb"]
        if d:
            lines.append(
                f"  DynamoDB: {d['requests_per_s']} requests/s, {d['requests_per_call']} per call; per call "
                f"{d['read_cu_per_call']} RCU + {d['write_cu_per_call']} WCU reported, "
                f"{d['read_cu_estimated_per_call']} RCU + {d['write_cu_estimated_per_call']} WCU estimated"
            )
            lines.append(f"  by operation per call: {d['by_operation_per_call']}")
        cpu = step["cpu_seconds"]
        lines.append(
            "  CPU seconds: "
            + ", ".join(f"{name} {value:g}" for name, value in sorted(cpu["seconds"].items()))
            + f"; web per call {cpu['web_per_call']}, per panel shown {cpu['web_per_panel_view']}"
        )
        lines.append("")
    for row in run.viewers:
        few, many = row["supervisors"]
        lines.append(
            f"{few} -> {many} supervisors at {row['rate']} calls/s: panels shown {row['panel_views_per_s'][0]} -> "
            f"{row['panel_views_per_s'][1]}/s, POST /api/calls p95 {row['create_call_p95_ms'][0]} -> "
            f"{row['create_call_p95_ms'][1]} ms, held {row['held'][0]} -> {row['held'][1]}, web CPU "
            f"{row['web_cpu_s_per_s'][0]} -> {row['web_cpu_s_per_s'][1]} s/s "
            f"({row['web_cpu_ms_per_extra_panel_view']} ms per extra panel shown)"
            + (
                f", DynamoDB {row['dynamodb_requests_per_s'][0]} -> {row['dynamodb_requests_per_s'][1]} requests/s "
                f"({row['dynamodb_requests_per_extra_panel_view']} per extra panel shown)"
                if "dynamodb_requests_per_s" in row
                else ""
            )
        )
    if run.viewers:
        lines.append("")
    lines.append(f"Highest rate held: {run.highest_rate_held} calls/s")
    if len(run.held_by_supervisors) > 1 or len(p.supervisors) > 1:
        lines.append(
            "Highest rate held by supervisors watching: "
            + ", ".join(f"{count}: {run.held_by_supervisors.get(count)}" for count in p.supervisors)
        )
    lines.append(f"Callers matched by the matcher process: {run.matched_by_the_matcher}")
    lines.append(f"check_invariants: {run.audit.get('summary')}")
    lines += harness.checks(run.problems)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__ or "", "load", seed=7)
    parser.add_argument("--rates", type=harness.int_list, default=LoadParameters.rates, help="calls/s of each step")
    parser.add_argument("--step-seconds", type=float, default=LoadParameters.step_seconds)
    parser.add_argument(
        "--supervisors",
        type=harness.int_list,
        default=LoadParameters.supervisors,
        help="supervisors watching the overview; several (20,200): the rates again with each",
    )
    parser.add_argument(
        "--list-rate",
        type=float,
        default=LoadParameters.list_rate,
        help="list pages a second, all supervisors together",
    )
    parser.add_argument("--shipment-rate", type=float, default=LoadParameters.shipment_rate)
    parser.add_argument("--agents", type=int, default=LoadParameters.agents)
    parser.add_argument("--handle-seconds", type=float, default=LoadParameters.handle_seconds)
    parser.add_argument("--web-workers", type=int, default=LoadParameters.web_workers)
    parser.add_argument(
        "--web-threads", type=int, default=LoadParameters.web_threads, help="threads per web worker (gthread)"
    )
    parser.add_argument("--shipment-workers", type=int, default=LoadParameters.shipment_workers)
    parser.add_argument("--p95-limit", type=float, default=LoadParameters.p95_limit)
    parser.add_argument("--no-meter", dest="meter", action="store_false", help="no DynamoDB meter between the servers")
    args = harness.parse(parser, argv, smoke=SMOKE)
    if not args.rates or min(args.rates) <= 0 or args.step_seconds <= 0 or args.agents < 1:
        parser.error("--rates takes positive integers, --step-seconds and --agents positive numbers")
    if (
        not args.supervisors
        or min(args.supervisors) < 0
        or args.shipment_rate < 0
        or args.list_rate < 0
        or not 1 <= args.web_workers <= 64
    ):
        parser.error("--supervisors and --shipment-rate take zero or more, --web-workers 1 to 64")
    if not 1 <= args.web_threads <= 64:
        parser.error("--web-threads takes 1 to 64")
    params = harness.from_args(LoadParameters, args)
    workdir = Path(tempfile.mkdtemp(prefix="switchboard-load-"))
    # This run's own Django database: users, sessions and tokens of the load, nobody else's.
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'django.sqlite3'}"
    # The servers' settings here too (not a test run's), so that both see the same users.
    os.environ["DJANGO_SETTINGS_MODULE"] = "callcenter.settings"
    stop_on_sigterm()  # SIGTERM stops the servers as Ctrl-C does
    return harness.execute(
        args, lambda endpoint: load_test(endpoint, params, workdir), report=report, as_json=LoadRun.as_json
    )


if __name__ == "__main__":
    sys.exit(main())
