"""A request meter: counts DynamoDB calls, consumed capacity and errors per operation.

It hooks botocore's event system on every client the package builds, asks DynamoDB
for consumed capacity on every operation that can report it, and adds what comes back
to the process-wide meter and to any meters opened with `measure()` (a benchmark, a
test checking that a page makes a bounded number of requests).

The same figures go to prometheus_client counters (`REQUESTS`, `CAPACITY`, `THROTTLES`,
`RETRIES`, `ERRORS`) that `/metrics` shows. With PROMETHEUS_MULTIPROC_DIR set (gunicorn
under `make serve` and the web unit) every process writes its own to a file there and a
scrape adds them all up, so the totals never go down whichever worker answers; without
it they are this process's alone.

`record_access()` also notes, while open, the IAM permission every request needs (an
IAM action on a table, an index, a stream or `*`): `tests/unit/test_iam.py` checks the
generated per-role policies (`iam.py`) against what each role's code really asks for.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from prometheus_client import Counter

from queues_app.ddb.errors import THROTTLE_CODES


@dataclass
class OperationStats:
    calls: int = 0
    retries: int = 0
    capacity: float = 0.0  # capacity units, read and write, tables and indexes
    read_capacity: float = 0.0
    write_capacity: float = 0.0
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    cancellation_reasons: dict[str, int] = field(default_factory=lambda: defaultdict(int))


class RequestMeter:
    """Thread-safe totals of DynamoDB requests, by operation name."""

    def __init__(self):
        self._lock = threading.Lock()
        self.operations: dict[str, OperationStats] = defaultdict(OperationStats)

    def record(
        self,
        operation: str,
        *,
        retries: int,
        capacity: list[dict],
        error_code: str | None,
        cancellation_codes: list[str],
    ) -> None:
        with self._lock:
            stats = self.operations[operation]
            stats.calls += 1
            stats.retries += retries
            for entry in capacity:
                stats.capacity += float(entry.get("CapacityUnits") or 0)
                stats.read_capacity += float(entry.get("ReadCapacityUnits") or 0)
                stats.write_capacity += float(entry.get("WriteCapacityUnits") or 0)
            if error_code:
                stats.errors[error_code] += 1
            for code in cancellation_codes:
                stats.cancellation_reasons[code] += 1

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.operations.values())

    @property
    def capacity(self) -> float:
        return sum(s.capacity for s in self.operations.values())

    def calls_of(self, operation: str) -> int:
        return self.operations[operation].calls if operation in self.operations else 0

    def snapshot(self) -> dict:
        with self._lock:
            return {
                name: {
                    "calls": s.calls,
                    "retries": s.retries,
                    "capacity": round(s.capacity, 3),
                    "errors": dict(s.errors),
                    "cancellation_reasons": dict(s.cancellation_reasons),
                }
                for name, s in self.operations.items()
            }

    def reset(self) -> None:
        with self._lock:
            self.operations.clear()


class TimedMeter:
    """Per-minute buckets of the same figures, for the last `minutes` minutes."""

    def __init__(self, minutes: int = 15):
        self._lock = threading.Lock()
        self._buckets: deque[tuple[int, RequestMeter]] = deque(maxlen=minutes)

    def bucket(self) -> RequestMeter:
        minute = int(time.time() // 60)
        with self._lock:
            if not self._buckets or self._buckets[-1][0] != minute:
                self._buckets.append((minute, RequestMeter()))
            return self._buckets[-1][1]

    def recent(self) -> list[tuple[int, RequestMeter]]:
        with self._lock:
            return list(self._buckets)


WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
_writes = 0  # successful writes by this process, housekeeping left out


def writes_seen() -> int:
    """How many writes this process has made so far (any thread): compared before and
    after a request, whether it may have written (`ReadYourWritesMiddleware`)."""
    return _writes


process_meter = RequestMeter()

# Registered in no registry: /metrics gathers them (monitoring/prometheus.py), from this
# process or, in multiprocess mode, from every process's file.
REQUESTS = Counter("switchboard_dynamodb_requests", "DynamoDB requests made", ["operation"], registry=None)
CAPACITY = Counter(
    "switchboard_dynamodb_capacity_units",
    "Capacity units consumed (read and write, tables and indexes)",
    ["operation"],
    registry=None,
)
THROTTLES = Counter(
    "switchboard_dynamodb_throttles",
    "Requests DynamoDB still throttled after botocore's retries (a transaction: any of its items)",
    ["operation"],
    registry=None,
)
RETRIES = Counter("switchboard_dynamodb_retries", "Attempts botocore retried", ["operation"], registry=None)
ERRORS = Counter(
    "switchboard_dynamodb_errors",
    "Errors and transaction cancellation reasons, by code",
    ["operation", "code"],
    registry=None,
)
COUNTERS = (REQUESTS, CAPACITY, THROTTLES, RETRIES, ERRORS)
recent_meter = TimedMeter()
_open_meters: set[RequestMeter] = set()
_open_lock = threading.Lock()
# A context variable, not a thread-local: requests a caller hands to pool threads
# (`parallel.each`) run in a copy of its context, so they stay housekeeping too.
_housekeeping: ContextVar[bool] = ContextVar("housekeeping", default=False)


@contextmanager
def housekeeping():
    """Requests made in the block (writing the metrics themselves) count in the process
    totals and per-minute figures, but not in meters opened with `measure()`, which
    measure the queue operations under test; their cost is by time, not per operation."""
    token = _housekeeping.set(True)
    try:
        yield
    finally:
        _housekeeping.reset(token)


@contextmanager
def measure():
    """Count the DynamoDB requests made (by any thread) while the block runs."""
    meter = RequestMeter()
    with _open_lock:
        _open_meters.add(meter)
    try:
        yield meter
    finally:
        with _open_lock:
            _open_meters.discard(meter)


def _ask_for_capacity(params, model, **kwargs):
    if "ReturnConsumedCapacity" in model.input_shape.members and "ReturnConsumedCapacity" not in params:
        params["ReturnConsumedCapacity"] = "INDEXES"


def _after_call(http_response, parsed, model, **kwargs):
    capacity = parsed.get("ConsumedCapacity") or []
    if isinstance(capacity, dict):
        capacity = [capacity]
    error_code = (parsed.get("Error") or {}).get("Code")
    cancellation_codes = [
        r.get("Code") for r in parsed.get("CancellationReasons") or [] if r.get("Code") not in (None, "None")
    ]
    retries = (parsed.get("ResponseMetadata") or {}).get("RetryAttempts", 0)
    fields = dict(retries=retries, capacity=capacity, error_code=error_code, cancellation_codes=cancellation_codes)
    process_meter.record(model.name, **fields)
    recent_meter.bucket().record(model.name, **fields)
    _count(model.name, **fields)
    if _housekeeping.get():
        return
    global _writes
    with _open_lock:
        if model.name in WRITES and not error_code:
            _writes += 1
        meters = list(_open_meters)
    for meter in meters:
        meter.record(model.name, **fields)


def _count(
    operation: str, *, retries: int, capacity: list[dict], error_code: str | None, cancellation_codes: list[str]
) -> None:
    # Every operation gets all four series at once (zero until something happens), so
    # a rate over them has a start rather than a series that appears out of nowhere.
    REQUESTS.labels(operation).inc()
    CAPACITY.labels(operation).inc(sum(float(entry.get("CapacityUnits") or 0) for entry in capacity))
    RETRIES.labels(operation).inc(retries)
    throttled = error_code in THROTTLE_CODES or bool(THROTTLE_CODES.intersection(cancellation_codes))
    THROTTLES.labels(operation).inc(1 if throttled else 0)
    for code in ([error_code] if error_code else []) + cancellation_codes:
        ERRORS.labels(operation, code).inc()


def install(client) -> None:
    """Attach the meter to a botocore DynamoDB client (once)."""
    if getattr(client, "_switchboard_metered", False):
        return
    events = client.meta.events
    events.register("provide-client-params.dynamodb", _ask_for_capacity)
    events.register("after-call.dynamodb", _after_call)
    events.register("provide-client-params.dynamodb", _note_access)
    client._switchboard_metered = True
    client._switchboard_access_recorded = True


# --- which IAM permissions the requests need ---------------------------------------


@dataclass(frozen=True)
class Access:
    """One IAM permission a request needed: `table` is the logical name (the physical
    one when it lacks the recorder's prefix), or None for `*` (ListTables, ListStreams);
    `index` an index of it; `stream` True for the table's stream (`table/<name>/stream/*`)."""

    action: str
    table: str | None
    index: str | None = None
    stream: bool = False


class AccessLog:
    """The permissions needed by the requests made while it was open, and how often."""

    def __init__(self, prefix: str | None):
        self.prefix = prefix
        self._lock = threading.Lock()
        self.counts: dict[Access, int] = defaultdict(int)
        self._stream_table: str | None = None  # the last stream a shard iterator was asked for

    def logical(self, physical: str | None) -> str | None:
        if physical and self.prefix and physical.startswith(self.prefix):
            return physical[len(self.prefix) :]
        return physical

    def add(self, access: Access) -> None:
        with self._lock:
            self.counts[access] += 1

    @property
    def accesses(self) -> set[Access]:
        with self._lock:
            return set(self.counts)


_open_logs: set[AccessLog] = set()


@contextmanager
def record_access(prefix: str | None = None) -> Iterator[AccessLog]:
    """Note the IAM permission of every request any client with the recorder installed
    makes (by any thread) while the block runs. Table names lose `prefix`."""
    log = AccessLog(prefix)
    with _open_lock:
        _open_logs.add(log)
    try:
        yield log
    finally:
        with _open_lock:
            _open_logs.discard(log)


# Transactions are authorised item by item, by the permission of the single-item action.
_TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
    "Get": "GetItem",
}
_STREAM_OPERATIONS = frozenset({"DescribeStream", "GetShardIterator", "GetRecords"})


def _stream_table(arn: str | None) -> str | None:
    """`arn:aws:dynamodb:r:a:table/NAME/stream/LABEL...` -> NAME (shard iterators on AWS
    and moto start with the stream's ARN too)."""
    if not arn or ":table/" not in arn:
        return None
    return arn.split(":table/", 1)[1].split("/", 1)[0]


def accesses_of(operation: str, params: dict, logical=lambda name: name) -> list[Access]:
    """The IAM permissions one request needs (see the AWS service authorization reference
    for DynamoDB: transactions need the underlying item actions; batches their own)."""
    found: list[Access] = []
    if operation in ("TransactWriteItems", "TransactGetItems"):
        for item in params.get("TransactItems") or []:
            for kind, body in item.items():
                found.append(Access(f"dynamodb:{_TRANSACT_ACTIONS[kind]}", logical(body.get("TableName"))))
    elif operation in ("BatchWriteItem", "BatchGetItem"):
        for name in params.get("RequestItems") or {}:
            found.append(Access(f"dynamodb:{operation}", logical(name)))
    elif operation in ("ListTables", "ListStreams"):
        found.append(Access(f"dynamodb:{operation}", None))
    elif operation in ("DescribeStream", "GetShardIterator"):
        found.append(Access(f"dynamodb:{operation}", logical(_stream_table(params.get("StreamArn"))), stream=True))
    elif operation == "GetRecords":
        found.append(Access("dynamodb:GetRecords", logical(_stream_table(params.get("ShardIterator"))), stream=True))
    else:
        found.append(Access(f"dynamodb:{operation}", logical(params.get("TableName")), params.get("IndexName")))
    return found


def _note_access(params, model, **kwargs):
    with _open_lock:
        logs = list(_open_logs)
    for log in logs:
        for access in accesses_of(model.name, params, log.logical):
            if access.stream and access.table is None:  # an iterator that names no stream
                access = replace(access, table=log._stream_table)
            elif access.stream:
                log._stream_table = access.table
            log.add(access)


def install_access_recorder(client) -> None:
    """Let `record_access()` see the requests of a client `install` did not meter: a
    DynamoDB Streams client (`tasks/streams.py` builds its own)."""
    if getattr(client, "_switchboard_access_recorded", False):
        return
    service = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register(f"provide-client-params.{service}", _note_access)
    client._switchboard_access_recorded = True
