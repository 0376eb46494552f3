"""Each skill combination's queue: its metadata and its oldest agent."""

from __future__ import annotations

from collections import Counter

from queues_app.agents import keys
from queues_app.agents.records import QueueInfo
from queues_app.agents.writes import CallCenterTable
from queues_app.ddb import batch, errors
from queues_app.ddb.codec import marshal, unmarshal


def list_queues(table: CallCenterTable) -> list[QueueInfo]:
    """Every combination's metadata (its shards, read in BatchGetItems of a hundred keys)
    and its oldest agent (one Query each), so the cost depends on the number of
    combinations, not of agents."""
    combos = table.catalog.all_combinations()
    wanted = [keys.queue_meta(combo, shard) for combo in combos for shard in range(keys.QUEUE_META_SHARDS)]
    depth: Counter[str] = Counter()
    version: Counter[str] = Counter()
    for meta in batch.get_items(table.db, table.name, wanted, consistent=True):
        depth[meta["sk"]] += int(meta.get("depth", 0))
        version[meta["sk"]] += int(meta.get("version", 0))
    infos = []
    for combo in combos:
        name = keys.queue_name(combo)
        info = QueueInfo(combination=combo, name=name, depth=depth[name], version=version[name])
        if info.depth > 0:
            head = table.db.query_partition(table.name, name, Limit=1)
            if head.get("Items"):
                info.oldest_queued_at = unmarshal(head["Items"][0])["sk"].rsplit("#", 1)[0]
        infos.append(info)
    return infos


def spread_old_metadata(table: CallCenterTable) -> int:
    """Metadata written before it was spread over shards lives in the single `QUEUES`
    partition: add each item's depth and version to shard 0 and delete it, in one
    transaction each (conditioned on the item as read). Returns how many moved."""
    moved = 0
    for item in table.db.partition_items(table.name, keys.QUEUES_PK, ConsistentRead=True):
        combo = tuple(item.get("combination") or item["sk"].removeprefix(keys.QUEUE_PREFIX).split("#"))
        depth, version = int(item.get("depth", 0)), int(item.get("version", 0))
        try:
            table.transact(
                [
                    table.update(
                        keys.queue_meta(combo),
                        "ADD #depth :depth, version :version SET combination = :combo",
                        {":depth": depth, ":version": version, ":combo": list(combo)},
                        names={"#depth": "depth"},
                    ),
                    {
                        "Delete": {
                            "TableName": table.name,
                            "Key": marshal({"pk": item["pk"], "sk": item["sk"]}),
                            "ConditionExpression": "version = :version",
                            "ExpressionAttributeValues": marshal({":version": version}),
                        }
                    },
                ]
            )
            moved += 1
        except errors.TransactionCancelled:
            continue  # changed meanwhile by a process of the earlier version: the next run moves it
    return moved
