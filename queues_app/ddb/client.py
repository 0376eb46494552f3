"""The DynamoDB client, built from settings and injectable.

Services take a `Dynamo` (client + table names). Production code uses `default()`,
built lazily from settings; tests pass their own or reset the default after
starting moto, because a client created before `mock_aws()` is not mocked.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Literal, cast

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from queues_app.ddb import errors, meter
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.tables import TABLES

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

Paged = Literal["query", "scan", "list_tables"]  # the paginated operations `pages` is used for


class Dynamo:
    """A low-level DynamoDB client plus the physical names of the project's tables.

    Every request goes through `call`, which turns botocore exceptions into the
    package's domain errors.
    """

    def __init__(
        self,
        client: Any | None = None,
        *,
        prefix: str = "switchboard-",
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        connect_timeout: float = 2.0,
        read_timeout: float = 5.0,
        max_attempts: int = 4,
    ):
        self.prefix = prefix
        self.endpoint_url = endpoint_url
        self.region = region
        self.connect_timeout, self.read_timeout = connect_timeout, read_timeout
        self._config = Config(
            region_name=region,
            # Adaptive mode adds client-side rate limiting on throttles on top of
            # exponential backoff with jitter.
            retries={"mode": "adaptive", "max_attempts": max_attempts},
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_pool_connections=64,
            tcp_keepalive=True,
        )
        self._client: DynamoDBClient | None = client
        self._lock = threading.Lock()
        if client is not None:
            meter.install(client)

    @classmethod
    def from_settings(cls) -> Dynamo:
        from django.conf import settings

        return cls(
            prefix=settings.DYNAMODB_TABLE_PREFIX,
            endpoint_url=settings.DYNAMODB_ENDPOINT_URL,
            region=settings.AWS_REGION,
            connect_timeout=settings.DYNAMODB_CONNECT_TIMEOUT,
            read_timeout=settings.DYNAMODB_READ_TIMEOUT,
            max_attempts=settings.DYNAMODB_MAX_ATTEMPTS,
        )

    @property
    def client(self) -> DynamoDBClient:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._build_client()
        return self._client

    def _build_client(self) -> DynamoDBClient:
        session = boto3.session.Session()
        kwargs: dict[str, Any] = {"config": self._config, "region_name": self.region}
        if self.endpoint_url:
            kwargs["endpoint_url"] = self.endpoint_url
            # DynamoDB Local accepts any credentials; supply placeholders when the
            # machine has none so the local setup needs no AWS account.
            if session.get_credentials() is None:
                kwargs["aws_access_key_id"] = "local"
                kwargs["aws_secret_access_key"] = "local"
        client = session.client("dynamodb", **kwargs)
        meter.install(client)
        return client

    @property
    def endpoint(self) -> str:
        return self.endpoint_url or f"AWS DynamoDB ({self.region})"

    def table(self, logical_name: str) -> str:
        """Physical table name for one of the project's tables ("callcenter", ...)."""
        if logical_name not in TABLES:
            raise KeyError(f"unknown table {logical_name!r}")
        return self.prefix + logical_name

    def call(self, operation: str, **params) -> dict:
        """Run one DynamoDB API call, translating failures into domain errors."""
        try:
            return getattr(self.client, operation)(**params)
        except (ClientError, BotoCoreError) as exc:
            raise errors.translate(exc, table=_table_of(params), endpoint=self.endpoint) from exc

    def pages(self, operation: Paged, **params) -> Iterator[dict[str, Any]]:
        """Every page of a Query or Scan through botocore's paginator: each page is one
        request, counted by the meter like any other, and failures become domain errors."""
        paginator = self.client.get_paginator(operation)
        # The stubs type each page as a TypedDict per operation; callers read them as dicts.
        pages = cast(Iterator[dict[str, Any]], iter(paginator.paginate(**params)))
        while True:
            try:
                page = next(pages)
            except StopIteration:
                return
            except (ClientError, BotoCoreError) as exc:
                raise errors.translate(exc, table=_table_of(params), endpoint=self.endpoint) from exc
            yield page

    def items(self, operation: Paged, **params) -> Iterator[dict[str, Any]]:
        """The items of every page (see `pages`), unmarshalled."""
        for page in self.pages(operation, **params):
            for raw in page.get("Items", []):
                yield unmarshal(raw)

    def query_partition(self, table: str, pk: str, **params) -> dict[str, Any]:
        """One Query of the partition `pk` (every table here keys its items on `pk`)."""
        return self.call("query", **_partition(table, pk), **params)

    def put_new(self, table: str, item: dict[str, Any], *, key: str, exists: str) -> None:
        """Put an item that must not exist yet (a condition on its key attribute `key`); a
        Conflict saying `exists` when one does."""
        try:
            self.call(
                "put_item", TableName=table, Item=marshal(item), ConditionExpression=f"attribute_not_exists({key})"
            )
        except errors.Conflict as exc:
            raise errors.Conflict(exists) from exc

    def partition_items(self, table: str, pk: str, **params) -> Iterator[dict[str, Any]]:
        """Every item of the partition `pk`, unmarshalled, a page at a time (see `items`)."""
        return self.items("query", **_partition(table, pk), **params)


def _partition(table: str, pk: str) -> dict[str, Any]:
    return {"TableName": table, "KeyConditionExpression": "pk = :pk", "ExpressionAttributeValues": {":pk": {"S": pk}}}


def _table_of(params: dict) -> str | None:
    if "TableName" in params:
        return params["TableName"]
    for key in ("TransactItems", "RequestItems"):
        if params.get(key):
            first = params[key]
            if isinstance(first, dict):
                return next(iter(first))
            action = next(iter(first[0].values()))
            return action.get("TableName")
    return None


_default: Dynamo | None = None
_default_lock = threading.Lock()


def default() -> Dynamo:
    """The process-wide `Dynamo` built from settings (created on first use)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Dynamo.from_settings()
    return _default


def reset_default() -> None:
    """Forget the default client (settings changed, or moto just started)."""
    global _default
    with _default_lock:
        _default = None


def _on_setting_changed(setting, **kwargs):
    if setting.startswith("DYNAMODB_") or setting == "AWS_REGION":
        reset_default()


try:  # keep the package importable without Django configured (benchmarks, scripts)
    from django.core.signals import setting_changed

    setting_changed.connect(_on_setting_changed)
except Exception:  # pragma: no cover
    pass
