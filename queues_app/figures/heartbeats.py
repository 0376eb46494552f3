"""Liveness of the long-running processes: each writes one small item every ~10 seconds
into the metrics table, and the System page, /metrics and /readyz list them.

Item: pk `WORKER`, sk `<kind>#<host>#<pid>`; kind, host, pid, started_at, last_beat
(ISO timestamps), state ("running", "holding the lease", "standing by", "stopping",
"stopped"), handled, beat_every (seconds; a loop that turns more slowly beats more
slowly, and is stale only after three of its own beats), and `expires_at` (TTL a few
minutes after the beat, so that a dead process's item goes away). A beat is one
UpdateItem (the same grant as the counters), made at most once per `BEAT_SECONDS`
however often the loop calls `beat()`; it is housekeeping (`meter.housekeeping()`),
and a failed beat is logged, never raised.
Reading is one Query of pk `WORKER`; expired items are left out (DynamoDB deletes TTL
items late), and a beat older than `STALE_AFTER_BEATS` beats is stale.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from queues_app.ddb import errors, meter
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import from_iso, now, to_iso
from queues_app.ddb.codec import marshal, unmarshal

log = logging.getLogger(__name__)

PK = "WORKER"
SHIPMENT_WORKER, TASK_PROCESSOR, COLLECTOR, ESCALATOR = "shipment-worker", "task-processor", "collector", "escalator"
CALLBACK_WORKER, MATCHER = "callback-worker", "matcher"
KINDS = (SHIPMENT_WORKER, TASK_PROCESSOR, COLLECTOR, ESCALATOR, CALLBACK_WORKER, MATCHER)
BEAT_SECONDS = 10.0
STALE_AFTER_BEATS = 3
EXPIRES_AFTER = timedelta(minutes=5)
RUNNING, HOLDING, STANDING_BY, STOPPING, STOPPED = (
    "running",
    "holding the lease",
    "standing by",
    "stopping",
    "stopped",
)


def _table(db: Dynamo) -> str:
    return db.table("metrics")


class Heartbeat:
    """One process's heartbeat. Call `beat()` from the main loop as often as it turns:
    it writes only when `every` seconds have passed since the last write (or a state
    change asks for it with `force`)."""

    def __init__(
        self,
        kind: str,
        db: Dynamo | None = None,
        *,
        clock: Callable[[], datetime] = now,
        every: float = BEAT_SECONDS,
        host: str | None = None,
        pid: int | None = None,
    ):
        self.kind = kind
        self._db = db
        self.clock = clock
        self.every = every
        self.host = host or socket.gethostname()
        self.pid = os.getpid() if pid is None else pid
        self.started_at = clock()
        self.state = RUNNING
        self.handled = 0
        self.writes = 0
        self._last: datetime | None = None
        self._failing = False
        self._parts: dict[int, int] = {}  # handled counts of the threads sharing this heartbeat
        self._lock = threading.Lock()

    @property
    def db(self) -> Dynamo:
        if self._db is None:
            self._db = default()
        return self._db

    @property
    def sk(self) -> str:
        return f"{self.kind}#{self.host}#{self.pid}"

    def beat(self, state: str | None = None, handled: int | None = None, *, force: bool = False, part: int = 0) -> bool:
        """Note the state and count; write them if a beat is due. True when written.
        Threads of one process that share the heartbeat each give their own `part`; the
        count written is their sum."""
        with self._lock:
            if state is not None:
                self.state = state
            if handled is not None:
                self._parts[part] = handled
                self.handled = sum(self._parts.values())
            moment = self.clock()
            if not force and self._last is not None and (moment - self._last).total_seconds() < self.every:
                return False
            self._last = moment  # a failed beat waits for the next interval too: no hammering
        return self._write(moment)

    def stopped(self, handled: int | None = None, *, part: int = 0) -> bool:
        """The last beat of a graceful exit."""
        return self.beat(STOPPED, handled, force=True, part=part)

    def _write(self, moment: datetime) -> bool:
        values = {
            ":kind": self.kind,
            ":host": self.host,
            ":pid": self.pid,
            ":started": to_iso(self.started_at),
            ":beat": to_iso(moment),
            ":state": self.state,
            ":handled": self.handled,
            ":expires": int((moment + EXPIRES_AFTER).timestamp()),
            ":every": self.every,
        }
        try:
            with meter.housekeeping():
                self.db.call(
                    "update_item",
                    TableName=_table(self.db),
                    Key=marshal({"pk": PK, "sk": self.sk}),
                    UpdateExpression=(
                        "SET kind = :kind, host = :host, pid = :pid, started_at = :started, last_beat = :beat, "
                        "#state = :state, handled = :handled, beat_every = :every, expires_at = :expires"
                    ),
                    ExpressionAttributeNames={"#state": "state"},
                    ExpressionAttributeValues=marshal(values),
                )
        except errors.DynamoError as exc:
            if not self._failing:  # once per outage, not once per beat
                log.warning(
                    "heartbeat of %s not written (%s); trying again every %g s", self.sk, exc.message, self.every
                )
            self._failing = True
            return False
        if self._failing:
            log.info("heartbeat of %s written again", self.sk)
            self._failing = False
        self.writes += 1
        return True


@dataclass
class WorkerBeat:
    kind: str
    host: str
    pid: int
    state: str
    started_at: datetime | None
    last_beat: datetime
    handled: int
    age_seconds: float
    stale: bool

    @property
    def name(self) -> str:
        return f"{self.host}:{self.pid}"

    @property
    def alive(self) -> bool:
        """Reporting: not stale and not stopped."""
        return not self.stale and self.state != STOPPED

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "host": self.host,
            "pid": self.pid,
            "state": self.state,
            "last_beat": to_iso(self.last_beat),
            "last_beat_age_seconds": round(self.age_seconds, 1),
            "stale": self.stale,
            "handled": self.handled,
        }


def workers(
    db: Dynamo | None = None, *, clock: Callable[[], datetime] = now, every: float = BEAT_SECONDS
) -> list[WorkerBeat]:
    """The processes that reported lately, by kind, host and pid (one Query)."""
    db = db or default()
    moment = clock()
    response = db.call(
        "query",
        TableName=_table(db),
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": PK}},
    )
    found = []
    for item in (unmarshal(raw) for raw in response.get("Items", [])):
        if int(item.get("expires_at", 0)) <= moment.timestamp():
            continue  # expired: DynamoDB has not deleted it yet
        last = from_iso(item.get("last_beat"))
        if last is None:
            continue
        age = max((moment - last).total_seconds(), 0.0)
        interval = max(float(item.get("beat_every", every)), every)  # a loop slower than a beat beats slower
        state = str(item.get("state", ""))
        found.append(
            WorkerBeat(
                kind=str(item.get("kind", "")),
                host=str(item.get("host", "")),
                pid=int(item.get("pid", 0)),
                state=state,
                started_at=from_iso(item.get("started_at")),
                last_beat=last,
                handled=int(item.get("handled", 0)),
                age_seconds=age,
                stale=state != STOPPED and age > STALE_AFTER_BEATS * interval,
            )
        )
    return sorted(found, key=lambda w: (w.kind, w.host, w.pid))
