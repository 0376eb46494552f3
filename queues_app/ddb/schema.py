"""Create, describe and delete the project's tables from their definitions."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, WaiterError

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.tables import TABLES, TableSpec


@dataclass
class TableState:
    logical_name: str
    name: str
    exists: bool
    status: str = ""
    keys: str = ""
    indexes: list[str] | None = None
    ttl: str = ""
    stream: str = ""
    item_count: int | None = None
    exact_count: int | None = None


def _key_schema(partition: str, sort: str | None) -> list[dict]:
    schema = [{"AttributeName": partition, "KeyType": "HASH"}]
    if sort:
        schema.append({"AttributeName": sort, "KeyType": "RANGE"})
    return schema


def create_table_params(spec: TableSpec, name: str) -> dict:
    params: dict = {
        "TableName": name,
        "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": _key_schema(spec.partition_key, spec.sort_key),
        "AttributeDefinitions": [
            {"AttributeName": attr, "AttributeType": "N" if attr in spec.number_attributes else "S"}
            for attr in spec.key_attributes()
        ],
    }
    if spec.indexes:
        params["GlobalSecondaryIndexes"] = [_index_definition(index) for index in spec.indexes]
    if spec.stream:
        params["StreamSpecification"] = {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    return params


def _index_definition(index) -> dict:
    projection: dict = {"ProjectionType": index.projection}
    if index.projection == "INCLUDE":
        projection["NonKeyAttributes"] = list(index.include)
    return {
        "IndexName": index.name,
        "KeySchema": _key_schema(index.partition_key, index.sort_key),
        "Projection": projection,
    }


def _add_missing_indexes(db: Dynamo, spec: TableSpec, name: str, log) -> list[str]:
    """Tables made by an earlier version lack the indexes added since: add them (one
    UpdateTable per index, as DynamoDB requires); DynamoDB backfills them itself."""
    table = db.call("describe_table", TableName=name)["Table"]
    present = {gsi["IndexName"] for gsi in table.get("GlobalSecondaryIndexes", [])}
    added = []
    for index in spec.indexes:
        if index.name in present:
            continue
        attributes = [index.partition_key] + ([index.sort_key] if index.sort_key else [])
        db.call(
            "update_table",
            TableName=name,
            AttributeDefinitions=[
                {"AttributeName": a, "AttributeType": "N" if a in spec.number_attributes else "S"} for a in attributes
            ],
            GlobalSecondaryIndexUpdates=[{"Create": _index_definition(index)}],
        )
        _wait_active(db, name, index=index.name)
        added.append(index.name)
        log(f"added index {index.name} to {name}")
    return added


def _drop_retired_indexes(db: Dynamo, spec: TableSpec, name: str, log) -> list[str]:
    """Delete the indexes an earlier version defined and this one replaced (after the
    replacements were added: `_add_missing_indexes` waits for them), one UpdateTable each."""
    table = db.call("describe_table", TableName=name)["Table"]
    present = {gsi["IndexName"] for gsi in table.get("GlobalSecondaryIndexes", [])}
    dropped = []
    for index in spec.retired_indexes:
        if index not in present:
            continue
        db.call("update_table", TableName=name, GlobalSecondaryIndexUpdates=[{"Delete": {"IndexName": index}}])
        _wait_index_gone(db, name, index)
        dropped.append(index)
        log(f"deleted index {index} of {name}")
    return dropped


def create_tables(db: Dynamo, *, wait: bool = True, log=lambda message: None) -> list[str]:
    """Create every missing table (idempotent). Returns the names it created."""
    created = []
    for spec in TABLES.values():
        name = db.table(spec.logical_name)
        try:
            db.call("create_table", **create_table_params(spec, name))
            created.append(name)
            log(f"created {name}")
        except errors.AlreadyExists:
            log(f"exists  {name}")
            if wait:
                _wait_active(db, name)
            _add_missing_indexes(db, spec, name, log)
            _drop_retired_indexes(db, spec, name, log)
        if wait:
            _wait_active(db, name)
        if spec.ttl_attribute:
            _ensure_ttl(db, name, spec.ttl_attribute)
    return created


def _wait_active(db: Dynamo, name: str, timeout: float = 60.0, index: str | None = None) -> None:
    """Wait until the table (and `index`, when given) is ACTIVE."""
    try:
        db.client.get_waiter("table_exists").wait(
            TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": max(1, int(timeout))}
        )
    except WaiterError as exc:
        last: Any = exc.last_response or {}  # DescribeTable's response, or its error
        if "Error" in last:
            raise errors.translate(ClientError(last, "DescribeTable"), table=name, endpoint=db.endpoint) from exc
        status = last.get("Table", {}).get("TableStatus", "not ACTIVE")
        raise errors.Unavailable(f"table {name} is still {status} after {timeout:.0f}s", endpoint=db.endpoint) from exc
    except (ClientError, BotoCoreError) as exc:
        raise errors.translate(exc, table=name, endpoint=db.endpoint) from exc
    if index:
        _wait_index_active(db, name, index, timeout)


def _wait_index_active(db: Dynamo, name: str, index: str, timeout: float) -> None:
    # No botocore waiter covers a new index of a live table (table_exists only reads TableStatus).
    _wait_for_index(db, name, index, lambda status: status == "ACTIVE", timeout)


def _wait_index_gone(db: Dynamo, name: str, index: str, timeout: float = 300.0) -> None:
    _wait_for_index(db, name, index, lambda status: status is None, timeout)


def _wait_for_index(db: Dynamo, name: str, index: str, done: Callable[[str | None], bool], timeout: float) -> None:
    """Read the table's description every half second until `done(the index's status)`
    (None once it is gone), or Unavailable after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        table = db.call("describe_table", TableName=name)["Table"]
        gsis = {g["IndexName"]: g.get("IndexStatus", "ACTIVE") for g in table.get("GlobalSecondaryIndexes", [])}
        status = gsis.get(index)
        if done(status):
            return
        if time.monotonic() > deadline:
            raise errors.Unavailable(
                f"index {index} of {name} is still {status or 'missing'} after {timeout:.0f}s", endpoint=db.endpoint
            )
        time.sleep(0.5)


def _ensure_ttl(db: Dynamo, name: str, attribute: str) -> None:
    current = db.call("describe_time_to_live", TableName=name)["TimeToLiveDescription"]
    if current.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"):
        return
    db.call(
        "update_time_to_live",
        TableName=name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute},
    )


def describe_tables(db: Dynamo, *, exact: bool = False) -> list[TableState]:
    states = []
    for spec in TABLES.values():
        name = db.table(spec.logical_name)
        try:
            table = db.call("describe_table", TableName=name)["Table"]
        except errors.TableMissing:
            states.append(TableState(spec.logical_name, name, exists=False))
            continue
        keys = ", ".join(f"{k['AttributeName']} ({k['KeyType']})" for k in table["KeySchema"])
        indexes = [
            f"{gsi['IndexName']}: "
            + ", ".join(f"{k['AttributeName']} ({k['KeyType']})" for k in gsi["KeySchema"])
            + f" [{gsi['Projection']['ProjectionType']}]"
            for gsi in table.get("GlobalSecondaryIndexes", [])
        ]
        ttl = db.call("describe_time_to_live", TableName=name)["TimeToLiveDescription"]
        ttl_text = ttl.get("TimeToLiveStatus", "DISABLED")
        if ttl.get("AttributeName"):
            ttl_text += f" on {ttl['AttributeName']}"
        stream = table.get("StreamSpecification") or {}
        state = TableState(
            spec.logical_name,
            name,
            exists=True,
            status=table["TableStatus"],
            keys=keys,
            indexes=indexes,
            ttl=ttl_text,
            stream=stream.get("StreamViewType", "") if stream.get("StreamEnabled") else "off",
            item_count=table.get("ItemCount"),
        )
        if exact:
            state.exact_count = count_items(db, name)
        states.append(state)
    return states


def count_items(db: Dynamo, name: str) -> int:
    """Exact item count with a paginated COUNT scan (an operator command, never a page)."""
    return sum(page["Count"] for page in db.pages("scan", TableName=name, Select="COUNT"))


def delete_tables(db: Dynamo, *, log=lambda message: None) -> list[str]:
    deleted = []
    for spec in TABLES.values():
        name = db.table(spec.logical_name)
        try:
            db.call("delete_table", TableName=name)
            deleted.append(name)
            log(f"deleted {name}")
        except errors.TableMissing:
            log(f"absent  {name}")
    return deleted


def missing_tables(db: Dynamo) -> list[str]:
    """Names of the project's tables that do not exist (one ListTables call a page)."""
    existing = {name for page in db.pages("list_tables") for name in page.get("TableNames", [])}
    return [db.table(n) for n in TABLES if db.table(n) not in existing]
