"""BatchWriteItem in chunks of 25, resending what DynamoDB leaves unprocessed."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from . import errors
from .client import Dynamo
from .records import marshal

BATCH_SIZE = 25


def put_items(db: Dynamo, table: str, items: Iterable[dict], *, on_batch: Callable[[int], None] | None = None,
              max_rounds: int = 8) -> int:
    """Write plain-Python items; returns how many were written."""
    written = 0
    chunk: list[dict] = []

    def flush():
        nonlocal written
        requests = {table: [{"PutRequest": {"Item": marshal(item)}} for item in chunk]}
        for attempt in range(max_rounds):
            response = db.call("batch_write_item", RequestItems=requests)
            requests = response.get("UnprocessedItems") or {}
            if not requests:
                break
            time.sleep(min(0.05 * 2**attempt, 2.0))
        else:
            raise errors.Throttled(f"{sum(len(v) for v in requests.values())} items stayed unprocessed")
        written += len(chunk)
        if on_batch:
            on_batch(len(chunk))
        chunk.clear()

    for item in items:
        chunk.append(item)
        if len(chunk) == BATCH_SIZE:
            flush()
    if chunk:
        flush()
    return written
