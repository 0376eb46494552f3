"""Requests of one caller sent at once from a few threads: the reads of a queue's
sub-queues, whose round trips would otherwise add up.

Each request runs in a copy of the caller's context, so what the caller's context says
about its requests (the meter's `housekeeping`, the trace id) holds for them too; the
request meter counts requests of any thread.
"""

from __future__ import annotations

import contextvars
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

# At most this many requests in flight for all callers of a process together; the
# client keeps 64 connections (client.py), and callers send one request themselves.
THREADS = 32

_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    """One pool per process (a forked child does not inherit the parent's threads)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="ddb-parallel"))
        return _pool[1]


def each[A, R](request: Callable[[A], R], args: Sequence[A]) -> list[R]:
    """`[request(a) for a in args]`, the first in this thread and the others on the pool
    meanwhile; the first failure is raised once every request has ended."""
    if len(args) <= 1:
        return [request(a) for a in args]
    pool = _executor()
    futures = [pool.submit(contextvars.copy_context().run, request, a) for a in args[1:]]
    try:
        first = request(args[0])
    finally:
        for future in futures:
            future.exception()  # wait: no request of this caller outlives the call
    return [first, *(future.result() for future in futures)]
