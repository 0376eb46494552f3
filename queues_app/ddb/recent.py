"""What each DynamoDB client last read of one kind of settings (the lines, the shipment
queues), kept a few seconds: so routing, counting and workers read settings once in a
while, not once a request. Kept per client (`ddb.client.default`, a test's, a new
endpoint's), so another client starts afresh."""

from __future__ import annotations

import threading
import time
import weakref

from queues_app.ddb.client import Dynamo


class RecentReads[T]:
    def __init__(self, max_age_seconds: float):
        self.max_age_seconds = max_age_seconds
        self._kept: weakref.WeakKeyDictionary[Dynamo, tuple[float, T]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    def get(self, db: Dynamo) -> T | None:
        """What `db` read at most `max_age_seconds` ago, or None."""
        with self._lock:
            kept = self._kept.get(db)
        if kept is None or time.monotonic() - kept[0] > self.max_age_seconds:
            return None
        return kept[1]

    def keep(self, db: Dynamo, value: T) -> T:
        with self._lock:
            self._kept[db] = (time.monotonic(), value)
        return value

    def forget(self, db: Dynamo) -> None:
        """Read again at the next use (after this process changed what was read)."""
        with self._lock:
            self._kept.pop(db, None)
