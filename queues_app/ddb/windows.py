"""Fixed-window counting shared by every process and host: one conditional ADD per event
in the metrics table, refused once the window holds its quota (a token's API requests,
a tenant's shipments)."""

from __future__ import annotations

from datetime import datetime

from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal
from queues_app.ddb.errors import Conflict

KEEP_SECONDS = 3600  # a window's item outlives it by this long (DynamoDB TTL)


def count_in_window(db: Dynamo, key: str, quota: int, seconds: int, moment: datetime) -> int:
    """Count one event under `key` in the window of `seconds` that holds `moment`. Returns
    0 when it was counted, else the seconds until the window ends (it held `quota`)."""
    epoch = int(moment.timestamp())
    start = epoch - epoch % seconds
    try:
        db.call(
            "update_item",
            TableName=db.table("metrics"),
            Key=marshal({"pk": key, "sk": str(start)}),
            UpdateExpression="ADD n :one SET expires_at = :expires",
            ConditionExpression="attribute_not_exists(n) OR n < :quota",
            ExpressionAttributeValues=marshal({":one": 1, ":quota": quota, ":expires": start + seconds + KEEP_SECONDS}),
        )
    except Conflict:
        return max(1, start + seconds - epoch)
    return 0
