"""Settings kept as one item each, changed only from the version read (the lines, the
named shipment queues): the conditional put and delete they share. What a refusal says
is the caller's: each raises the Conflict as DynamoDB gave it."""

from __future__ import annotations

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal


def put_from_version(db: Dynamo, table: str, item: dict, version: int) -> None:
    """Write `item` (carrying its new version) where the stored one is at `version`, or
    where there is none yet (`version` 0); errors.Conflict otherwise."""
    condition = "attribute_not_exists(pk)" if version == 0 else "version = :expected"
    values = {} if version == 0 else {"ExpressionAttributeValues": {":expected": {"N": str(version)}}}
    db.call("put_item", TableName=table, Item=marshal(item), ConditionExpression=condition, **values)


def delete_at_version(db: Dynamo, table: str, key: dict, version: int, what: str) -> None:
    """Remove the item at `key` while it is at `version`; a Conflict saying that `what`
    ("Line 'support'") changed or was removed meanwhile otherwise."""
    try:
        db.call(
            "delete_item",
            TableName=table,
            Key=marshal(key),
            ConditionExpression="version = :expected",
            ExpressionAttributeValues={":expected": {"N": str(version)}},
        )
    except errors.Conflict as exc:
        raise errors.Conflict(f"{what} changed or was removed meanwhile; read it again.") from exc


def why_refused(what: str, version: int, now_version: int | None) -> errors.DynamoError:
    """Why a change of `what` (e.g. "line 'support'") made from `version` was refused, the
    item being at `now_version` now (None: gone)."""
    named = what[:1].upper() + what[1:]
    if now_version is None:
        return errors.NotFound(f"No {what} to change: it was removed.")
    if version == 0:
        return errors.Conflict(f"{named} exists already (version {now_version}).")
    return errors.Conflict(f"{named} changed since version {version}: it is at version {now_version}.")
