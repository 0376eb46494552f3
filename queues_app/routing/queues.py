"""Each skill combination's queue: its metadata, its oldest agent, and the heads of its
sub-queues merged into the head of the queue."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import batch, errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import from_iso, now
from queues_app.ddb.codec import marshal
from queues_app.ddb.merge import SortedMerge, read_together


@dataclass
class QueueInfo:
    """Metadata of one skill-combination queue (the article's `Q#Spanish#M` item)."""

    combination: tuple[str, ...]
    name: str
    depth: int = 0
    version: int = 0
    oldest_queued_at: str | None = None

    @property
    def oldest_age_seconds(self) -> float | None:
        oldest = from_iso(self.oldest_queued_at)
        return (now() - oldest).total_seconds() if oldest else None


def queue_heads(
    db: Dynamo,
    table: str,
    combos: Sequence[tuple[str, ...]],
    limit: int,
    *,
    newest_first: bool = False,
    consistent: bool = True,
) -> list[list[dict]]:
    """The first messages of each combination's queue, oldest first (newest first with
    `newest_first`): one Query of each sub-queue (strongly consistent unless `consistent`
    is false), all sent at once, merged by token. A sub-queue that holds more than its
    page stops its queue's merge at the page's last token: past it, a message of that
    sub-queue could be missing, so each head is the queue's own first messages, none
    skipped (FIFO across sub-queues)."""
    merges = []
    for combo in combos:
        queries = [
            {
                "TableName": table,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": {"S": pk}},
                "ConsistentRead": consistent,
                "ScanIndexForward": not newest_first,
            }
            for pk in keys.queue_partitions(combo)
        ]
        merges.append(SortedMerge(db, queries, sort_key="sk", descending=newest_first))
    read_together([(merge, merge.partitions, limit) for merge in merges])
    return [merge.take(limit * keys.QUEUE_SPLIT) for merge in merges]


def list_queues(table: CallCenterTable) -> list[QueueInfo]:
    """Every combination's metadata (its shards, read in BatchGetItems of a hundred keys)
    and its oldest agent (the oldest of its sub-queues' heads: one Query of each), so the
    cost depends on the number of combinations, not of agents."""
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
        infos.append(QueueInfo(combination=combo, name=name, depth=depth[name], version=version[name]))
    queued = [info for info in infos if info.depth > 0]
    for info, head in zip(queued, queue_heads(table.db, table.name, [i.combination for i in queued], 1), strict=True):
        if head:
            info.oldest_queued_at = head[0]["sk"].rsplit("#", 1)[0]
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


def split_old_queues(table: CallCenterTable) -> int:
    """Messages written before the queues were split live in the queue's own partition
    (`Q#<combo>`): move each to its sub-queue, in one transaction each (a Put where nothing
    is, and a Delete of the item as read). A message changed or taken meanwhile (by a
    process of the earlier version) is left for the next run. Returns how many moved."""
    moved = 0
    for combo in table.catalog.all_combinations():
        for item in table.db.partition_items(table.name, keys.queue_name(combo), ConsistentRead=True):
            moved_item = {**item, **keys.queue_message(combo, item["sk"])}
            try:
                table.transact(
                    [
                        {
                            "Put": {
                                "TableName": table.name,
                                "Item": marshal(moved_item),
                                "ConditionExpression": "attribute_not_exists(pk)",
                            }
                        },
                        {
                            "Delete": {
                                "TableName": table.name,
                                "Key": marshal({"pk": item["pk"], "sk": item["sk"]}),
                                # A message never changes: still there is still as read.
                                "ConditionExpression": "attribute_exists(pk)",
                            }
                        },
                    ]
                )
                moved += 1
            except errors.TransactionCancelled:
                continue  # taken or changed meanwhile: the next run moves what is left
    return moved
