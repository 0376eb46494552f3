"""The article's queue layout and peek, as the baseline for bench/receive.py.

"Implementing priority queueing with Amazon DynamoDB" (AWS Database Blog) and its sample
code (aws-samples/amazon-dynamodb-implementing-priority-queuing, `QueueSdkClient.peek`):

- one sparse GSI, `queued-last_updated_timestamp-index` (partition key `queued`, a number
  set to 1 by enqueue; sort key `last_updated_timestamp`, an ISO timestamp string;
  projection ALL, as in the sample's CloudFormation template), holds every queued
  shipment, waiting and in flight alike;
- a shipment in flight keeps its place in that index: peek sets
  `system_info.queue_selected = true`, `system_info.peek_utc_timestamp` (milliseconds)
  and the status, but deliberately not the top-level `last_updated_timestamp`, "in order
  to avoid re-indexing the order";
- peek (here `ArticleQueue.receive`, after our operation) = Query that index
  (`queued = 1`, Limit 250, ScanIndexForward true), walk the page for the first
  eligible item (not selected, or selected but its visibility timeout has passed),
  follow LastEvaluatedKey 250 at a time until one is found or the index ends, then one
  UpdateItem conditioned on the version read from the index (`#sys.#v = :v`).

Deliberately charitable: the sample code also loads the shipment with a consistent
GetItem before the update and again after it (two more requests and two more item
reads per peek); they are left out here, so the figures are the article's lower bound.
A lost race (the condition fails) returns None, as the sample returns
FAILED_DYNAMO_ERROR.

The table is the benchmark's own (our `shipments` table has no `queued` index):
`create_table` builds it through `Dynamo.call`, so the request meter sees every request.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal, unmarshal

QUEUE_INDEX = "queued-last_updated_timestamp-index"
DLQ_INDEX = "DLQ-last_updated_timestamp-index"
PAGE_SIZE = 250  # the article's Limit
VISIBILITY_TIMEOUT_SECONDS = 60.0  # the sample's VISIBILITY_TIMEOUT_IN_MINUTES = 1

READY_TO_SHIP = "READY_TO_SHIP"
PROCESSING_SHIPMENT = "PROCESSING_SHIPMENT"


def create_table(db: Dynamo, name: str, *, timeout: float = 60.0) -> None:
    """The sample's table: pk `id` (S); the queue GSI on `queued` (N) +
    `last_updated_timestamp` (S) and the DLQ GSI on `DLQ` (N) + the same sort key, both
    projecting ALL; on demand instead of the template's provisioned 100/100."""
    db.call(
        "create_table",
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        AttributeDefinitions=[
            {"AttributeName": "id", "AttributeType": "S"},
            {"AttributeName": "queued", "AttributeType": "N"},
            {"AttributeName": "last_updated_timestamp", "AttributeType": "S"},
            {"AttributeName": "DLQ", "AttributeType": "N"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": QUEUE_INDEX,
                "KeySchema": [
                    {"AttributeName": "queued", "KeyType": "HASH"},
                    {"AttributeName": "last_updated_timestamp", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
            {
                "IndexName": DLQ_INDEX,
                "KeySchema": [
                    {"AttributeName": "DLQ", "KeyType": "HASH"},
                    {"AttributeName": "last_updated_timestamp", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            },
        ],
    )
    deadline = time.monotonic() + timeout
    while db.call("describe_table", TableName=name)["Table"]["TableStatus"] != "ACTIVE":
        if time.monotonic() > deadline:
            raise errors.Unavailable(f"table {name} is not active after {timeout:.0f}s", endpoint=db.endpoint)
        time.sleep(0.2)


def delete_table(db: Dynamo, name: str) -> None:
    try:
        db.call("delete_table", TableName=name)
    except errors.TableMissing:
        pass


def queued_item(
    shipment_id: str,
    data: dict,
    *,
    created: str,
    enqueued: str,
    version: int,
    peeked: str | None = None,
    peek_ms: int | None = None,
) -> dict:
    """A shipment as the sample stores it after put + enqueue (version 2), and after a
    peek as well when `peeked` is given (version 3, selected, PROCESSING_SHIPMENT).
    The top-level `last_updated_timestamp` is the enqueue time in both cases."""
    system_info = {
        "id": shipment_id,
        "creation_timestamp": created,
        "last_updated_timestamp": peeked or enqueued,
        "status": PROCESSING_SHIPMENT if peeked else READY_TO_SHIP,
        "version": version,
        "queued": 1,
        "queue_selected": bool(peeked),
        "queue_added_timestamp": enqueued,
    }
    if peeked:
        system_info["queue_peek_timestamp"] = peeked
        system_info["peek_utc_timestamp"] = peek_ms
    return {
        "id": shipment_id,
        "data": data,
        "system_info": system_info,
        "queued": 1,
        "last_updated_timestamp": enqueued,
    }


@dataclass
class ArticleReceiveResult:
    shipment_id: str
    version: int  # after the peek
    pages: int  # Query pages read to find it


class ArticleQueue:
    """The article's peek on a table laid out as above, as `receive`."""

    def __init__(
        self,
        db: Dynamo,
        table: str,
        *,
        visibility_timeout: float = VISIBILITY_TIMEOUT_SECONDS,
        page_size: int = PAGE_SIZE,
        clock_ms=lambda: int(time.time() * 1000),
    ):
        self.db = db
        self.table_name = table
        self.visibility_timeout = visibility_timeout
        self.page_size = page_size
        self.clock_ms = clock_ms
        self.last_pages = 0

    def _eligible(self, system_info: dict, now_ms: int) -> bool:
        selected = bool(system_info.get("queue_selected", False))
        if selected and "peek_utc_timestamp" in system_info:
            # a straggler: selected, but its visibility timeout has passed
            return now_ms - int(system_info["peek_utc_timestamp"]) > self.visibility_timeout * 1000
        return True

    def receive(self) -> ArticleReceiveResult | None:
        start_key = None
        selected_id, selected_version = None, None
        pages = 0
        while True:
            params = {
                "TableName": self.table_name,
                "IndexName": QUEUE_INDEX,
                "ProjectionExpression": "id, queued, system_info",
                "KeyConditionExpression": "queued = :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
                "Limit": self.page_size,
                "ScanIndexForward": True,
            }
            if start_key:
                params["ExclusiveStartKey"] = start_key
            response = self.db.call("query", **params)
            pages += 1
            start_key = response.get("LastEvaluatedKey")
            now_ms = self.clock_ms()
            for raw in response.get("Items", []):
                item = unmarshal(raw)
                system_info = item.get("system_info") or {}
                if self._eligible(system_info, now_ms):
                    selected_id, selected_version = item["id"], int(system_info["version"])
                    break
            if selected_id is not None or not start_key:
                break
        self.last_pages = pages
        if selected_id is None:
            return None  # FAILED_EMPTY_QUEUE
        now_ms = self.clock_ms()
        stamp = iso_from_ms(now_ms)
        try:
            response = self.db.call(
                "update_item",
                TableName=self.table_name,
                Key=marshal({"id": selected_id}),
                UpdateExpression="ADD #sys.#v :one SET #sys.queue_selected = :true, "
                "#sys.last_updated_timestamp = :lut, #sys.queue_peek_timestamp = :lut, "
                "#sys.peek_utc_timestamp = :ts, #sys.#st = :st",
                ExpressionAttributeNames={"#v": "version", "#st": "status", "#sys": "system_info"},
                ExpressionAttributeValues=marshal(
                    {
                        ":one": 1,
                        ":v": selected_version,
                        ":true": True,
                        ":ts": now_ms,
                        ":st": PROCESSING_SHIPMENT,
                        ":lut": stamp,
                    }
                ),
                ConditionExpression="#sys.#v = :v",
                ReturnValues="ALL_NEW",
            )
        except errors.Conflict:
            return None  # FAILED_DYNAMO_ERROR: another consumer changed it first
        attributes = unmarshal(response["Attributes"])
        return ArticleReceiveResult(selected_id, int(attributes["system_info"]["version"]), pages)


def iso_from_ms(ms: int) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
