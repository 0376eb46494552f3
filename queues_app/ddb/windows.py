"""Fixed-window counting shared by every process and host: one conditional ADD per event
in the metrics table, refused once the window holds its quota (a token's API requests,
a tenant's shipments); or, for a busy key, one per block of events a process takes of the
quota at once (`Blocks`)."""

from __future__ import annotations

import threading
import weakref
from datetime import datetime

from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal
from queues_app.ddb.errors import Conflict

KEEP_SECONDS = 3600  # a window's item outlives it by this long (DynamoDB TTL)


def window_start(moment: datetime, seconds: int) -> int:
    epoch = int(moment.timestamp())
    return epoch - epoch % seconds


def count_in_window(db: Dynamo, key: str, quota: int, seconds: int, moment: datetime, amount: int = 1) -> int:
    """Count `amount` events under `key` in the window of `seconds` that holds `moment`.
    Returns 0 when they were counted, else the seconds until the window ends (it had no
    room for them within `quota`)."""
    epoch = int(moment.timestamp())
    start = window_start(moment, seconds)
    try:
        db.call(
            "update_item",
            TableName=db.table("metrics"),
            Key=marshal({"pk": key, "sk": str(start)}),
            UpdateExpression="ADD n :amount SET expires_at = :expires",
            ConditionExpression="attribute_not_exists(n) OR n <= :most",
            ExpressionAttributeValues=marshal(
                {":amount": amount, ":most": quota - amount, ":expires": start + seconds + KEEP_SECONDS}
            ),
        )
    except Conflict:
        return max(1, start + seconds - epoch)
    return 0


class Blocks:
    """What each process (each DynamoDB client) has taken of windows' quotas and not spent
    yet. An event is counted from the process's block when it has one left; else the
    process takes a block (`quota // 100`, at least 1) with one conditional ADD, or what
    is left of the quota one event at a time. A busy key costs a write per block, not per
    event; the price is that a window may refuse up to a block less per process than its
    quota, when blocks taken are not spent by its end."""

    def __init__(self) -> None:
        self._left: weakref.WeakKeyDictionary[Dynamo, dict[tuple[str, int], int]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def count(self, db: Dynamo, key: str, quota: int, seconds: int, moment: datetime) -> int:
        """As `count_in_window` for one event: 0 when counted, else the seconds to wait."""
        start = window_start(moment, seconds)
        with self._lock:
            left = self._left.setdefault(db, {})
            if left.get((key, start), 0) > 0:
                left[(key, start)] -= 1
                return 0
        block = max(1, quota // 100)
        wait = count_in_window(db, key, quota, seconds, moment, block)
        if wait and block > 1:  # no room for a block: what is left, one at a time
            block, wait = 1, count_in_window(db, key, quota, seconds, moment)
        if wait:
            return wait
        with self._lock:
            left = self._left.setdefault(db, {})
            for old in [k for k in left if k[1] < start]:
                del left[old]
            left[(key, start)] = left.get((key, start), 0) + block - 1
        return 0
