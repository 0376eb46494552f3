"""Wake-ups from the tasks table's DynamoDB stream: `StreamWaker.wait` returns as soon as
a PENDING task is written, and just sleeps where the endpoint has no streams. Details
in docs/architecture.md.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo, default

log = logging.getLogger(__name__)

WAKE_STATUS = "PENDING"
REFRESH_SHARDS_SECONDS = 60.0  # look for new shards (they roll over every few hours on AWS)


def build_streams_client(db: Dynamo):
    """A `dynamodbstreams` client for the same endpoint, region and credentials as `db`'s
    client (DynamoDB Local serves both APIs on one endpoint; AWS picks the streams
    endpoint of the region itself)."""
    session = boto3.session.Session()
    config = Config(
        region_name=db.region,
        retries={"mode": "standard", "max_attempts": 2},
        connect_timeout=db.connect_timeout,
        read_timeout=db.read_timeout,
    )
    kwargs: dict[str, Any] = {"config": config, "region_name": db.region}
    if db.endpoint_url:
        kwargs["endpoint_url"] = db.endpoint_url
        if session.get_credentials() is None:
            kwargs["aws_access_key_id"] = "local"
            kwargs["aws_secret_access_key"] = "local"
    return session.client("dynamodbstreams", **kwargs)


def wakes(record: dict) -> bool:
    """True for a stream record that may mean a task is waiting to be processed."""
    if record.get("eventName") not in ("INSERT", "MODIFY"):
        return False
    image = (record.get("dynamodb") or {}).get("NewImage") or {}
    return (image.get("task_status") or {}).get("S") == WAKE_STATUS


class StreamWaker:
    def __init__(
        self, db: Dynamo | None = None, *, logical_table: str = "tasks", step: float = 0.25, client: Any | None = None
    ):
        self.db = db or default()
        self.table_name = self.db.table(logical_table)
        self.step = step  # pause between GetRecords rounds (AWS allows 5 per shard per second)
        self._client = client
        self.stream_arn: str | None = None
        self.available = False
        self.reason = "not opened"
        self._iterators: dict[str, str | None] = {}  # shard id -> iterator (None: closed, done)
        self._refreshed = 0.0
        self._broken = False
        self.records_seen = 0
        self.wakeups = 0

    @property
    def client(self):
        if self._client is None:
            self._client = build_streams_client(self.db)
        return self._client

    # --- opening ------------------------------------------------------------------

    def open(self) -> bool:
        """Find the table's stream and start following it at LATEST. Returns `available`."""
        self._iterators = {}
        self.stream_arn = None
        try:
            table = self.db.call("describe_table", TableName=self.table_name)["Table"]
        except errors.DynamoError as exc:  # no table, endpoint down
            return self._unavailable(f"describe_table failed: {exc.message}")
        spec = table.get("StreamSpecification") or {}
        arn = table.get("LatestStreamArn")
        if not spec.get("StreamEnabled") or not arn:
            return self._unavailable("the table has no stream")
        try:
            shards = self._shards(arn)
            for shard in shards:
                if "EndingSequenceNumber" in shard.get("SequenceNumberRange", {}):
                    continue  # closed: holds only records from before now
                self._iterators[shard["ShardId"]] = self._iterator(arn, shard["ShardId"], "LATEST")
        except (ClientError, BotoCoreError) as exc:
            return self._unavailable(f"the endpoint does not serve the stream: {_describe(exc)}")
        self.stream_arn = arn
        self.available = True
        self._broken = False
        self._refreshed = time.monotonic()
        self.reason = f"following {len(self._iterators)} shard(s) of {arn}"
        log.info("stream waker: %s", self.reason)
        return True

    def _unavailable(self, reason: str) -> bool:
        self.available = False
        self.reason = reason
        log.info("stream waker unavailable (%s); polling instead", reason)
        return False

    def _shards(self, arn: str) -> list[dict]:
        shards, start = [], None
        while True:
            params = {"StreamArn": arn}
            if start:
                params["ExclusiveStartShardId"] = start
            description = self.client.describe_stream(**params)["StreamDescription"]
            shards += description.get("Shards", [])
            start = description.get("LastEvaluatedShardId")
            if not start:
                return shards

    def _iterator(self, arn: str, shard_id: str, kind: str) -> str | None:
        response = self.client.get_shard_iterator(StreamArn=arn, ShardId=shard_id, ShardIteratorType=kind)
        return response.get("ShardIterator")

    def _refresh_shards(self) -> None:
        """Follow shards that appeared since we looked (from their start: they are new)."""
        arn = self.stream_arn
        if arn is None:
            return
        for shard in self._shards(arn):
            if shard["ShardId"] not in self._iterators:
                self._iterators[shard["ShardId"]] = self._iterator(arn, shard["ShardId"], "TRIM_HORIZON")
        self._refreshed = time.monotonic()

    # --- waiting ------------------------------------------------------------------

    def poll(self) -> bool:
        """One round of GetRecords over the shards. True when a record wakes us."""
        woke = closed = False
        for shard_id, iterator in list(self._iterators.items()):
            if iterator is None:
                continue
            response = self.client.get_records(ShardIterator=iterator, Limit=1000)
            records = response.get("Records", [])
            self.records_seen += len(records)
            woke = woke or any(wakes(r) for r in records)
            self._iterators[shard_id] = response.get("NextShardIterator")
            closed = closed or self._iterators[shard_id] is None  # read to its end: children follow
        if closed or time.monotonic() - self._refreshed > REFRESH_SHARDS_SECONDS:
            self._refresh_shards()
        return woke

    def wait(self, timeout: float, stop: threading.Event | None = None) -> bool:
        """Wait up to `timeout` seconds for records that may mean work. True when some
        arrived (or may have been missed); False on timeout or stop. Without a stream it
        only sleeps."""
        stop = stop or threading.Event()
        deadline = time.monotonic() + max(0.0, timeout)
        if self._broken or (not self.available and self.reason == "not opened"):
            was_broken = self._broken
            if self.open() and was_broken:
                self.wakeups += 1
                return True  # records may have been missed while it was broken
        if not self.available:
            stop.wait(max(0.0, deadline - time.monotonic()))
            return False
        while True:
            try:
                if self.poll():
                    self.wakeups += 1
                    return True
            except (ClientError, BotoCoreError) as exc:
                log.warning("stream read failed (%s); re-opening it", _describe(exc))
                self._broken = True
                return True  # cannot tell: let the caller look at the queue
            left = deadline - time.monotonic()
            if left <= 0 or stop.wait(min(self.step, left)):
                return False


def _describe(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        return f"{error.get('Code')}: {error.get('Message')}"
    return str(exc)
