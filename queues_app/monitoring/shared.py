"""Live figures read once per period for every viewer, however many there are.

A panel's figures are kept in Django's cache (`CACHE_URL`: one per host, or one Redis
for every host) with the moment they were read. Once they are older than the period,
one viewer reads them again: one thread of a process (a lock per key) and, of the
processes sharing the cache, the one that adds the key's short reading lease
(`cache.add`: atomic in Redis, the database and memory caches; the file cache's
check-then-write lets two processes through now and then, never more than there are).
Every other viewer is served the figures of the period before in the meantime, so a
read that takes a second under load does not turn into one read per viewer who asked
during that second. With nothing cached at all (the first viewer, or the cache emptied)
they wait for that read up to `WAIT_SECONDS`, then read themselves: a slow or failed
reader never leaves a viewer without an answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from django.core.cache import cache

from queues_app.ddb.clock import now

# How long figures stay in the cache to be served while someone reads newer ones, in periods.
STALE_PERIODS = 10
# How long a viewer with nothing to show waits for another's read before reading itself.
WAIT_SECONDS = 5.0
# The reading lease's own expiry: a reader that died frees the key within this.
LEASE_SECONDS = 10

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock_of(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def _fresh(cached, seconds: float) -> bool:
    return cached is not None and 0 <= now().timestamp() - cached[0] < seconds


def _refill(key: str, read: Callable[[], dict], seconds: float) -> dict:
    moment = now().timestamp()
    figures = read()
    # The cache's own expiry bounds how stale a served value may be; freshness is judged
    # on the project's clock.
    cache.set(key, (moment, figures), seconds * STALE_PERIODS + 1)
    return figures


def cached_panel(prefix: str, name: str, read: Callable[[], dict], seconds: float, *, fresh: bool = False) -> dict:
    """A panel's figures, read at most once per `seconds` per cache however many viewers
    ask for it, whatever else writes in the meantime: under a busy phone system every
    request writes, and dropping the figures on each write would make every poll read
    again. `fresh` reads now (and refills the cache for everyone): for a supervisor who
    has just changed something and expects to see it."""
    if not seconds:
        return read()
    key = f"panel:{prefix}:{name}"
    if fresh:
        return _refill(key, read, seconds)
    cached = cache.get(key)
    if _fresh(cached, seconds):
        return cached[1]
    lock = _lock_of(key)
    # With figures to show, a viewer never waits for another thread's read.
    if not lock.acquire(timeout=WAIT_SECONDS if cached is None else 0):
        return cached[1] if cached is not None else read()
    try:
        again = cache.get(key)
        if _fresh(again, seconds):
            return again[1]
        lease = f"{key}:reading"
        if cache.add(lease, 1, LEASE_SECONDS):
            try:
                return _refill(key, read, seconds)
            finally:
                cache.delete(lease)
        # Another process is reading.
        if again is not None:
            return again[1]
        return _wait_for(key) or read()
    finally:
        lock.release()


def _wait_for(key: str) -> dict | None:
    """The figures another process is reading, once they land (None past WAIT_SECONDS)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:
        time.sleep(0.05)
        cached = cache.get(key)
        if cached is not None:
            return cached[1]
    return None
