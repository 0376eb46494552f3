"""Each skill combination's queue: its metadata item and its oldest agent."""

from __future__ import annotations

from queues_app.agents import keys
from queues_app.agents.records import QueueInfo
from queues_app.agents.writes import CallCenterTable
from queues_app.ddb.codec import unmarshal


def list_queues(table: CallCenterTable) -> list[QueueInfo]:
    """Every combination's metadata (one Query) and its oldest agent (one Query each,
    so the cost depends on the number of combinations, not of agents)."""
    response = table.db.call(
        "query",
        TableName=table.name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": keys.QUEUES_PK}},
        ConsistentRead=True,
    )
    stored = {unmarshal(i)["sk"]: unmarshal(i) for i in response.get("Items", [])}
    infos = []
    for combo in table.catalog.all_combinations():
        name = keys.queue_name(combo)
        meta = stored.get(name, {})
        info = QueueInfo(
            combination=combo, name=name, depth=int(meta.get("depth", 0)), version=int(meta.get("version", 0))
        )
        if info.depth > 0:
            head = table.db.call(
                "query",
                TableName=table.name,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": name}},
                Limit=1,
            )
            if head.get("Items"):
                info.oldest_queued_at = unmarshal(head["Items"][0])["sk"].rsplit("#", 1)[0]
        infos.append(info)
    return infos
