"""Per-minute queue metrics: counters every process adds up and writes every few
seconds (one ADD per queue and minute), gauges sampled into the same items, totals,
capacity per operation. Layout and design: docs/architecture.md, "Monitoring"."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from queues_app.ddb import errors, meter
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now
from queues_app.ddb.codec import marshal, unmarshal

log = logging.getLogger(__name__)

CALLS, LIVE, SPILLOVER, TASKS = "calls", "live", "spillover", "tasks"
QUEUES = (CALLS, LIVE, SPILLOVER, TASKS)
COUNTERS = ("enqueued", "completed", "shed", "sidelined", "expired_leases", "refused")
GAUGES = ("depth", "in_flight", "dlq", "oldest_age")
RETENTION = timedelta(days=2)
FLUSH_SECONDS = 10.0
FACT_PATIENCE_SECONDS = 60.0
THROTTLE_CODES = {"ProvisionedThroughputExceededException", "ThrottlingException", "RequestLimitExceeded"}
CONFLICT_CODES = {"TransactionConflict", "TransactionConflictException"}


def minute_of(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M")


class Recorder:
    """This process's counts since the last flush, by queue and minute (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        # A flush is due this long after the last (the app sets COUNTS_FLUSH_SECONDS' value).
        self.period = FLUSH_SECONDS
        self._counts: dict[tuple[str, str, str], float] = defaultdict(float)
        self._first_attempt: dict[tuple[str, str], list[float]] = {}  # count, sum, max
        # Figures kept under a key of their own (pk, sk) rather than a queue's minute:
        # sums added up, and maxima (`peaks`) kept as the largest seen.
        self._tallies: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self._peaks: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
        # Items kept longer than RETENTION (the interval reports'): how long, by key.
        self._kept: dict[tuple[str, str], timedelta] = {}
        # Call facts this process wrote (or is writing) in a change's transaction: counted
        # at its next flush (`tally_facts_with`), by key, with when each was expected.
        self._facts: dict[tuple[str, str], float] = {}
        self._last_flush = time.monotonic()
        self._flushed_capacity_minute = int(time.time() // 60) - 1

    def count(self, queue: str, name: str, n: float = 1, moment: datetime | None = None) -> None:
        with self._lock:
            self._counts[(queue, minute_of(moment or now()), name)] += n

    def first_attempt(self, queue: str, age_seconds: float, moment: datetime | None = None) -> None:
        """A shipment taken for the first time, `age_seconds` after it was first enqueued
        (the article's AgeOfFirstAttempt: retries are left out)."""
        with self._lock:
            entry = self._first_attempt.setdefault((queue, minute_of(moment or now())), [0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += age_seconds
            entry[2] = max(entry[2], age_seconds)

    def tally(
        self,
        pk: str,
        sk: str,
        values: dict[str, float],
        peaks: dict[str, float] | None = None,
        keep: timedelta | None = None,
    ) -> None:
        """Add `values` to the item (pk, sk) and keep the largest of each of `peaks`; the
        item expires `keep` after its last write (RETENTION when not given)."""
        with self._lock:
            if keep is not None:
                self._kept[(pk, sk)] = keep
            sums = self._tallies[(pk, sk)]
            for name, value in values.items():
                sums[name] += value
            kept = self._peaks[(pk, sk)]
            for name, value in (peaks or {}).items():
                kept[name] = max(kept.get(name, value), value)

    def take_tallies(self) -> tuple[dict, dict, dict]:
        with self._lock:
            tallies = {key: dict(values) for key, values in self._tallies.items()}
            peaks = {key: dict(values) for key, values in self._peaks.items()}
            kept = dict(self._kept)
            self._tallies.clear()
            self._peaks.clear()
            self._kept.clear()
            return tallies, peaks, kept

    def give_back_tallies(self, tallies: dict, peaks: dict, kept: dict | None = None) -> None:
        """A flush failed: keep what it held for the next one."""
        for key in set(tallies) | set(peaks):
            pk, sk = key
            self.tally(pk, sk, tallies.get(key, {}), peaks.get(key), (kept or {}).get(key))

    def expect_fact(self, pk: str, sk: str) -> None:
        with self._lock:
            self._facts.setdefault((pk, sk), time.monotonic())

    def take_facts(self) -> dict[tuple[str, str], float]:
        with self._lock:
            facts, self._facts = self._facts, {}
            return facts

    def give_back_facts(self, facts: dict[tuple[str, str], float]) -> None:
        """Facts not counted by a flush and young enough to be still on their way (their
        transaction not yet done, or a conflict): kept for the next flush. Older ones
        are left to the sweep (`collect_metrics`), which finds whatever was written."""
        oldest = time.monotonic() - FACT_PATIENCE_SECONDS
        with self._lock:
            for key, since in facts.items():
                if since >= oldest:
                    self._facts.setdefault(key, since)

    def take(self) -> tuple[dict, dict]:
        with self._lock:
            counts, firsts = dict(self._counts), dict(self._first_attempt)
            self._counts.clear()
            self._first_attempt.clear()
            self._last_flush = time.monotonic()
            return counts, firsts

    def give_back(self, counts: dict, firsts: dict) -> None:
        """A flush failed: keep what it held for the next one."""
        with self._lock:
            for key, value in counts.items():
                self._counts[key] += value
            for key, (n, total, peak) in firsts.items():
                entry = self._first_attempt.setdefault(key, [0, 0.0, 0.0])
                entry[0] += n
                entry[1] += total
                entry[2] = max(entry[2], peak)

    def due(self) -> bool:
        return time.monotonic() - self._last_flush >= self.period

    def capacity_minutes_to_flush(self) -> list[tuple[int, meter.RequestMeter]]:
        """Finished minutes of the request meter not written yet."""
        current = int(time.time() // 60)
        with self._lock:
            ready = [(m, b) for m, b in meter.recent_meter.recent() if self._flushed_capacity_minute < m < current]
            if ready:
                self._flushed_capacity_minute = ready[-1][0]
        return ready


recorder = Recorder()

# Counts the call facts a flush was given, returning those it could not count (set by
# the app's `ready()` to `figures.tally.count_expected`, which knows the call records:
# the counters import nothing above the DynamoDB core).
FactTally = Callable[[Dynamo, list[tuple[str, str]]], list[tuple[str, str]]]
_fact_tally: FactTally | None = None


def tally_facts_with(tally: FactTally | None) -> None:
    global _fact_tally
    _fact_tally = tally


def note(db: Dynamo, queue: str, name: str, n: float = 1) -> None:
    """Count an event, and write the counts out if the last flush was a while ago."""
    recorder.count(queue, name, n)
    if recorder.due():
        MetricsStore(db).flush()


def flush_if_due(db: Dynamo) -> None:
    """Write the counts (and count the call facts) if the last flush was a while ago."""
    if recorder.due():
        MetricsStore(db).flush()


_flushers: dict[int, threading.Thread] = {}  # by process id: one a process, started after a fork too
_flushers_lock = threading.Lock()


def keep_flushing(db: Dynamo, every: float = FLUSH_SECONDS, stop: threading.Event | None = None) -> threading.Thread:
    """Write what this process counts at least every `every` seconds, however quiet the
    traffic: the last events of a burst (a web worker between requests, a worker between
    shipments) are not left waiting for the next event to flush them. One daemon thread a
    process; a failed flush keeps its counts and is tried again a period later."""

    stopped = stop or threading.Event()

    def flush_forever() -> None:
        while not stopped.wait(every):
            try:
                flush_if_due(db)
            except Exception:  # a flush never takes the process down; the next one tries again
                log.exception("flushing the counts failed")

    with _flushers_lock:
        running = _flushers.get(os.getpid())
        if running is not None and running.is_alive():
            return running
        thread = threading.Thread(target=flush_forever, name="counters-flush", daemon=True)
        _flushers[os.getpid()] = thread
        thread.start()
        return thread


def flush_in_background(db: Dynamo) -> None:
    """`keep_flushing` (every COUNTS_FLUSH_SECONDS), in the processes that serve or work
    (web workers, the workers, the matcher); not where SWITCHBOARD_BACKGROUND_FLUSH is off
    (the test suite, whose commands run in its own process, one test after another)."""
    from django.conf import settings

    if getattr(settings, "SWITCHBOARD_BACKGROUND_FLUSH", True):
        keep_flushing(db, recorder.period)


def note_first_attempt(db: Dynamo, queue: str, age_seconds: float) -> None:
    recorder.first_attempt(queue, age_seconds)
    if recorder.due():
        MetricsStore(db).flush()


@dataclass
class MinuteRow:
    minute: str  # the item's sort key: a minute (a queue's name for the totals)
    values: dict[str, float] = field(default_factory=dict)

    def get(self, name: str) -> float | None:
        return self.values.get(name)


class MetricsStore:
    def __init__(self, db: Dynamo | None = None, clock: Callable[[], datetime] = now):
        self.db = db or default()
        self.clock = clock

    @property
    def table_name(self) -> str:
        return self.db.table("metrics")

    def _expires(self, keep: timedelta | None = None) -> int:
        return int((self.clock() + (keep or RETENTION)).timestamp())

    # --- writing ------------------------------------------------------------------------

    def flush(self) -> int:
        """Write this process's counts: one UpdateItem per queue and minute, one for the
        totals of each queue, one per finished minute of request capacity. A failure is
        logged and the counts are kept for the next flush: metrics never break a queue
        operation. Not counted by `meter.measure()` (see `meter.housekeeping`)."""
        with meter.housekeeping():
            return self._flush()

    def _flush(self) -> int:
        counts, firsts = recorder.take()
        writes = 0
        try:
            by_item: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
            totals: dict[str, dict[str, float]] = defaultdict(dict)
            for (queue, minute, name), value in counts.items():
                by_item[(queue, minute)][name] = value
                totals[queue][name] = totals[queue].get(name, 0) + value
            for (queue, minute), (n, total, peak) in firsts.items():
                row = by_item[(queue, minute)]
                row["first_attempts"], row["first_attempt_age_sum"] = n, total
                row["first_attempt_age_max"] = peak
            for (queue, minute), values in by_item.items():
                self._add(f"SAMPLE#{queue}", minute, values, peak="first_attempt_age_max")
                writes += 1
            for queue, values in totals.items():
                self._add("TOTAL", queue, values, expires=False)
                writes += 1
        except errors.DynamoError as exc:
            recorder.give_back(counts, firsts)
            log.warning("metrics not written (%s); kept for the next flush", exc.message)
            return 0
        writes += self._flush_tallies()
        writes += self._flush_facts()
        for minute, bucket in recorder.capacity_minutes_to_flush():
            figures: dict[str, float] = {}
            for operation, stats in bucket.operations.items():
                figures[f"{operation}__calls"] = stats.calls
                figures[f"{operation}__capacity"] = round(stats.capacity, 3)
                figures[f"{operation}__throttles"] = sum(
                    n for code, n in stats.errors.items() if code in THROTTLE_CODES
                )
                figures[f"{operation}__conflicts"] = sum(
                    n for code, n in stats.errors.items() if code in CONFLICT_CODES
                ) + sum(n for code, n in stats.cancellation_reasons.items() if code in CONFLICT_CODES)
            if figures:
                stamp = datetime.fromtimestamp(minute * 60, tz=self.clock().tzinfo)
                try:
                    self._add("CAPACITY", minute_of(stamp), figures)
                    writes += 1
                except errors.DynamoError as exc:
                    log.warning("capacity figures not written (%s)", exc.message)
        return writes

    def _flush_facts(self) -> int:
        """Count the call facts this process expects (see `figures/facts.py`)."""
        facts = recorder.take_facts()
        if not facts or _fact_tally is None:
            recorder.give_back_facts(facts)
            return 0
        try:
            left = set(_fact_tally(self.db, sorted(facts)))
        except errors.DynamoError as exc:
            log.warning("call facts not counted (%s); kept for the next flush", exc.message)
            left = set(facts)
        recorder.give_back_facts({key: since for key, since in facts.items() if key in left})
        return len(facts) - len(left)

    def _flush_tallies(self) -> int:
        """One UpdateItem per tallied item (and one conditional one per maximum that grew)."""
        tallies, peaks, kept = recorder.take_tallies()
        keys = sorted(set(tallies) | set(peaks))
        for done, key in enumerate(keys):
            sums, maxima = tallies.get(key, {}), peaks.get(key, {})
            pk, sk = key
            try:
                if sums:
                    self._add(pk, sk, sums, keep=kept.get(key))
                    sums = {}
                for name, value in maxima.items():
                    self.raise_peak(pk, sk, name, value, kept.get(key))
            except errors.DynamoError as exc:
                rest = keys[done + 1 :]
                recorder.give_back_tallies(
                    {key: sums, **{k: tallies[k] for k in rest if k in tallies}},
                    {key: maxima, **{k: peaks[k] for k in rest if k in peaks}},
                    kept,
                )
                log.warning("metrics not written (%s); kept for the next flush", exc.message)
                return done
        return len(keys)

    def _add(
        self,
        pk: str,
        sk: str,
        values: dict[str, float],
        *,
        peak: str | None = None,
        expires: bool = True,
        keep: timedelta | None = None,
    ) -> None:
        """ADD every value to the item; `peak` is a maximum, so it is SET only where larger."""
        added = {k: v for k, v in values.items() if k != peak}
        action = self.add_action(pk, sk, added, expires=expires, keep=keep)["Update"]
        self.db.call("update_item", **action)
        if peak and peak in values:
            self.raise_peak(pk, sk, peak, values[peak])

    def add_action(
        self, pk: str, sk: str, values: dict[str, float], *, expires: bool = True, keep: timedelta | None = None
    ) -> dict:
        """The Update that ADDs every value to the item (for a transaction), and sets when
        it expires: RETENTION, or `keep`, after this write."""
        names = {f"#a{i}": name for i, name in enumerate(values)}
        attr_values: dict = {f":v{i}": value for i, value in enumerate(values.values())}
        expression = "ADD " + ", ".join(f"#a{i} :v{i}" for i in range(len(values)))
        if expires:
            expression = "SET expires_at = :expires " + expression
            attr_values[":expires"] = self._expires(keep)
        return {
            "Update": {
                "TableName": self.table_name,
                "Key": marshal({"pk": pk, "sk": sk}),
                "UpdateExpression": expression,
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": marshal(attr_values),
            }
        }

    def raise_peak(self, pk: str, sk: str, name: str, value: float, keep: timedelta | None = None) -> None:
        """SET a maximum only where the stored one is smaller (or missing)."""
        try:
            self.db.call(
                "update_item",
                TableName=self.table_name,
                Key=marshal({"pk": pk, "sk": sk}),
                UpdateExpression="SET #p = :v, expires_at = :expires",
                ConditionExpression="attribute_not_exists(#p) OR #p < :v",
                ExpressionAttributeNames={"#p": name},
                ExpressionAttributeValues=marshal({":v": value, ":expires": self._expires(keep)}),
            )
        except errors.Conflict:
            pass  # another process saw a larger one this minute

    def record_gauges(self, queue: str, gauges: dict[str, float | None]) -> None:
        """The current minute's gauges for one queue (the latest sample of the minute wins)."""
        present = {k: v for k, v in gauges.items() if v is not None}
        names = {f"#g{i}": k for i, k in enumerate(present)}
        sets = ["expires_at = :expires"] + [f"#g{i} = :g{i}" for i in range(len(present))]
        values = {":expires": self._expires(), **{f":g{i}": round(float(v), 3) for i, v in enumerate(present.values())}}
        params = {
            "TableName": self.table_name,
            "Key": marshal({"pk": f"SAMPLE#{queue}", "sk": minute_of(self.clock())}),
            "UpdateExpression": "SET " + ", ".join(sets),
            "ExpressionAttributeValues": marshal(values),
        }
        if names:
            params["ExpressionAttributeNames"] = names
        self.db.call("update_item", **params)

    # --- reading ------------------------------------------------------------------------

    def _rows(
        self, pk: str, *, since: str | None = None, newest_first: bool = False, limit: int | None = None
    ) -> list[MinuteRow]:
        """One partition's items as rows of figures (one Query)."""
        params: dict = {
            "TableName": self.table_name,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": pk}},
            "ScanIndexForward": not newest_first,
        }
        if since:
            params["KeyConditionExpression"] += " AND sk >= :since"
            params["ExpressionAttributeValues"][":since"] = {"S": since}
        if limit:
            params["Limit"] = limit
        response = self.db.call("query", **params)
        return [
            MinuteRow(item["sk"], {k: float(v) for k, v in item.items() if k not in ("pk", "sk", "expires_at")})
            for item in (unmarshal(raw) for raw in response.get("Items", []))
        ]

    def history(self, queue: str, minutes: int = 60) -> list[MinuteRow]:
        """The last `minutes` minutes of one queue, oldest first (one Query)."""
        return self._rows(f"SAMPLE#{queue}", since=minute_of(self.clock() - timedelta(minutes=minutes - 1)))

    def latest(self, queue: str) -> MinuteRow | None:
        """The most recent minute of one queue (one Limit-1 Query)."""
        rows = self._rows(f"SAMPLE#{queue}", newest_first=True, limit=1)
        return rows[0] if rows else None

    def capacity(self, minutes: int = 15) -> list[MinuteRow]:
        """Request figures per operation (`<operation>__<figure>`) for the last `minutes`
        finished minutes (one Query)."""
        return self._rows("CAPACITY", since=minute_of(self.clock() - timedelta(minutes=minutes)))

    def totals(self) -> dict[str, dict[str, float]]:
        """Running totals per queue (one Query)."""
        return {row.minute: row.values for row in self._rows("TOTAL")}
