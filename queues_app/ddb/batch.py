"""BatchWriteItem in chunks of 25, resending what DynamoDB leaves unprocessed."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal, unmarshal

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


def get_items(db: Dynamo, table: str, keys: list[dict], *, consistent: bool = False,
              max_rounds: int = 8) -> list[dict]:
    """BatchGetItem, 100 keys at a time, asking again for what DynamoDB leaves
    unprocessed; returns the plain-Python items found, in no particular order."""
    found: list[dict] = []
    for start in range(0, len(keys), 100):
        request = {table: {"Keys": [marshal(k) for k in keys[start:start + 100]], "ConsistentRead": consistent}}
        for attempt in range(max_rounds):
            response = db.call("batch_get_item", RequestItems=request)
            found += [unmarshal(raw) for raw in response.get("Responses", {}).get(table, [])]
            request = response.get("UnprocessedKeys") or {}
            if not request:
                break
            time.sleep(min(0.05 * 2**attempt, 1.0))
        else:
            raise errors.Throttled(f"{sum(len(v['Keys']) for v in request.values())} keys stayed unprocessed")
    return found
