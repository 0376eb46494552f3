"""Batch writes and reads: BatchWriteItem through boto3's BatchWriter, BatchGetItem
100 keys at a time, each resending what DynamoDB leaves unprocessed."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from boto3.dynamodb.table import BatchWriter
from botocore.exceptions import BotoCoreError, ClientError

from queues_app.ddb import errors, parallel
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal, unmarshal

BATCH_SIZE = 25  # BatchWriteItem's limit
GET_BATCH_SIZE = 100  # BatchGetItem's limit


def put_items(db: Dynamo, table: str, items: Iterable[dict], *, on_batch: Callable[[int], None] | None = None) -> int:
    """Write plain-Python items, 25 at a time; returns how many were written.

    Each chunk goes through its own BatchWriter, which resends what DynamoDB leaves
    unprocessed until nothing is left, so `on_batch` hears of a chunk once all of it is
    written. (DynamoDB leaves items unprocessed only when it wrote some of the request;
    when it can write none it throttles the request, which botocore retries with backoff
    and `errors.translate` turns into `Throttled`.)
    """
    written = 0
    chunk: list[dict] = []

    def flush() -> None:
        nonlocal written
        try:
            with BatchWriter(table, db.client, flush_amount=BATCH_SIZE) as writer:
                for item in chunk:
                    writer.put_item(Item=marshal(item))
        except (ClientError, BotoCoreError) as exc:
            raise errors.translate(exc, table=table, endpoint=db.endpoint) from exc
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


def load_items(db: Dynamo, table: str, items: Sequence[dict], *, at_once: int = 4) -> int:
    """`put_items` for a load of many items (demo data, a benchmark's or a test's tables):
    `at_once` runs of batches at the same time, so the load waits on DynamoDB's work rather
    than on one round trip after another."""
    size = -(-len(items) // at_once) if items else 0
    runs = [items[start : start + size] for start in range(0, len(items), size)] if size else []
    return sum(parallel.each(lambda run: put_items(db, table, run), runs))


def get_items(db: Dynamo, table: str, keys: list[dict], *, consistent: bool = False, max_rounds: int = 8) -> list[dict]:
    """BatchGetItem, 100 keys at a time, asking again for what DynamoDB leaves
    unprocessed; returns the plain-Python items found, in no particular order."""
    found: list[dict] = []
    for start in range(0, len(keys), GET_BATCH_SIZE):
        request = {
            table: {"Keys": [marshal(k) for k in keys[start : start + GET_BATCH_SIZE]], "ConsistentRead": consistent}
        }
        for response in _get_until_processed(db, request, max_rounds=max_rounds):
            found += [unmarshal(raw) for raw in response.get("Responses", {}).get(table, [])]
    return found


def _get_until_processed(
    db: Dynamo, request: dict[str, Any], *, max_rounds: int, max_pause: float = 1.0
) -> Iterator[dict[str, Any]]:
    """BatchGetItem, then again for the keys each response leaves unprocessed, pausing a
    little longer each round; yields every response. Throttled when keys are still
    unprocessed after `max_rounds` requests."""
    for attempt in range(max_rounds):
        response = db.call("batch_get_item", RequestItems=request)
        yield response
        request = response.get("UnprocessedKeys") or {}
        if not request:
            return
        time.sleep(min(0.05 * 2**attempt, max_pause))
    raise errors.Throttled(f"{sum(len(v['Keys']) for v in request.values())} keys stayed unprocessed")
