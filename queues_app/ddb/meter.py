"""A request meter: counts DynamoDB calls, consumed capacity and errors per operation.

It hooks botocore's event system on every client the package builds, asks DynamoDB
for consumed capacity on every operation that can report it, and adds what comes back
to the process-wide meter and to any meters opened with `measure()` (a benchmark, a
test checking that a page makes a bounded number of requests).
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from contextlib import contextmanager
from dataclasses import dataclass, field


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
    """How many writes this process has made so far: cached figures read before the
    last write may be out of date, whichever page, API call or worker made it."""
    return _writes


process_meter = RequestMeter()
recent_meter = TimedMeter()
_open_meters: set[RequestMeter] = set()
_open_lock = threading.Lock()
_housekeeping = threading.local()


@contextmanager
def housekeeping():
    """Requests made in the block (writing the metrics themselves) count in the process
    totals and per-minute figures, but not in meters opened with `measure()`, which
    measure the queue operations under test; their cost is by time, not per operation."""
    _housekeeping.active = True
    try:
        yield
    finally:
        _housekeeping.active = False


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
    if getattr(_housekeeping, "active", False):
        return
    global _writes
    with _open_lock:
        if model.name in WRITES and not error_code:
            _writes += 1
        meters = list(_open_meters)
    for meter in meters:
        meter.record(model.name, **fields)


def install(client) -> None:
    """Attach the meter to a botocore DynamoDB client (once)."""
    if getattr(client, "_switchboard_metered", False):
        return
    events = client.meta.events
    events.register("provide-client-params.dynamodb", _ask_for_capacity)
    events.register("after-call.dynamodb", _after_call)
    client._switchboard_metered = True
