"""The steps that bring the call-centre table's items from the layouts of earlier versions
to this one's, each idempotent, in the order they were introduced (see `upgrades.STEPS`).
Every step moves an item in one transaction conditioned on the item as read, so that a
process of the earlier version still running is never overwritten: what it changed
meanwhile is left for the next run."""

from __future__ import annotations

from queues_app.agents.records import AgentStatus
from queues_app.calls.records import CallStatus
from queues_app.calls.store import call_from_item
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import batch, errors
from queues_app.ddb.codec import marshal
from queues_app.routing.line import WaitingLine


def waiting_line_by_preferences(table: CallCenterTable) -> int:
    """Callers written before the line was split wait in the single `WAITING`
    partition: move each into the partition of their preferences (one transaction
    each). Returns how many moved."""
    moved = 0
    for item in table.db.partition_items(table.name, keys.OLD_WAITING_PK):
        found = batch.get_items(table.db, table.name, [keys.call(item["call_id"])], consistent=True)
        call = call_from_item(found[0]) if found else None
        actions: list[dict] = [
            {
                "Delete": {
                    "TableName": table.name,
                    "Key": marshal({"pk": item["pk"], "sk": item["sk"]}),
                    "ConditionExpression": "attribute_exists(pk)",
                }
            }
        ]
        if call and call.status == CallStatus.WAITING and call.wait_sk == item["sk"]:
            actions += [
                {"Put": {"TableName": table.name, "Item": marshal(WaitingLine(table).wait_item(call))}},
                *table.count_updates(table.wanted(call.preferences), +1),
            ]
        try:
            table.transact(actions)
            moved += 1
        except errors.TransactionCancelled:
            continue  # assigned meanwhile
    return moved


def waiting_count_copies(table: CallCenterTable) -> int:
    """Counts written before they were kept in copies exist only as copy 0: write the
    missing copies with its value (one transaction each, conditioned on copy 0 as read
    and on the copy not existing yet). Returns how many copies were written."""
    partitions = WaitingLine(table).partitions_for({name: list(values) for name, values in table.catalog.dimensions})
    wanted = [keys.waiting_count(p, copy) for p in partitions for copy in range(keys.WAIT_COUNT_COPIES)]
    found = {item["pk"]: item for item in batch.get_items(table.db, table.name, wanted, consistent=True)}
    written = 0
    for partition in partitions:
        first = found.get(keys.waiting_count(partition)["pk"])
        if first is None:
            continue
        for copy in range(1, keys.WAIT_COUNT_COPIES):
            key = keys.waiting_count(partition, copy)
            if key["pk"] in found:
                continue
            actions = [
                {
                    "ConditionCheck": {
                        "TableName": table.name,
                        "Key": marshal(keys.waiting_count(partition)),
                        "ConditionExpression": "waiting = :n",
                        "ExpressionAttributeValues": marshal({":n": first.get("waiting", 0)}),
                    }
                },
                {
                    "Put": {
                        "TableName": table.name,
                        "Item": marshal({**key, "waiting": first.get("waiting", 0), "wanted": list(partition)}),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
            ]
            try:
                table.transact(actions)
                written += 1
            except errors.TransactionCancelled:
                continue  # changed meanwhile by a process of the earlier version: the next run copies it
    return written


def roster_partitions(table: CallCenterTable) -> int:
    """Agents written before the roster was spread live in the single `AGENTS`
    partition: move each to its own partition (a put and a delete in one transaction,
    conditioned on the agent as read). Returns how many moved."""
    moved = 0
    for item in table.db.partition_items(table.name, keys.AGENTS_PK, ConsistentRead=True):
        if not item["sk"].startswith(keys.AGENT_PREFIX):
            continue
        agent_id = keys.agent_id_from_sk(item["sk"])
        status_q = keys.status_partition(item.get("status", AgentStatus.OFFLINE), agent_id)
        moved_item = {**item, **keys.agent(agent_id), "status_q": status_q}
        try:
            _move(table, item, moved_item, "version = :version", {":version": item.get("version", 0)})
            moved += 1
        except errors.TransactionCancelled:
            continue  # changed meanwhile by a process of the earlier version: the next run moves it
    return moved


def queue_metadata_shards(table: CallCenterTable) -> int:
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


def sub_queues(table: CallCenterTable) -> int:
    """Messages written before the queues were split live in the queue's own partition
    (`Q#<combo>`): move each to its sub-queue, in one transaction each (a Put where nothing
    is, and a Delete of the item as read). A message changed or taken meanwhile (by a
    process of the earlier version) is left for the next run. Returns how many moved."""
    moved = 0
    for combo in table.catalog.all_combinations():
        for item in table.db.partition_items(table.name, keys.queue_name(combo), ConsistentRead=True):
            moved_item = {**item, **keys.queue_message(combo, item["sk"])}
            try:
                # A message never changes: still there is still as read.
                _move(table, item, moved_item, "attribute_exists(pk)")
                moved += 1
            except errors.TransactionCancelled:
                continue  # taken or changed meanwhile: the next run moves what is left
    return moved


def status_partitions(table: CallCenterTable) -> int:
    """Agents written before the status index was spread lack `status_q`, so no status
    list or count sees them (and a process of that version changing an agent's status
    leaves it behind): give each the partition its status says, conditioned on the
    agent as read (a conflict is left for the next run). Returns how many changed."""
    added = 0
    for pk in keys.agent_partitions():
        for item in table.db.partition_items(table.name, pk, ConsistentRead=True):
            if not item["sk"].startswith(keys.AGENT_PREFIX):
                continue
            status_q = keys.status_partition(item["status"], keys.agent_id_from_sk(item["sk"]))
            if item.get("status_q") == status_q:
                continue
            try:
                table.db.call(
                    "update_item",
                    TableName=table.name,
                    Key=marshal({"pk": item["pk"], "sk": item["sk"]}),
                    UpdateExpression="SET status_q = :status_q",
                    ConditionExpression="version = :version AND #status = :status",
                    ExpressionAttributeNames={"#status": "status"},
                    ExpressionAttributeValues=marshal(
                        {
                            ":status": item["status"],
                            ":status_q": status_q,
                            ":version": item["version"],
                        }
                    ),
                )
                added += 1
            except errors.Conflict:
                continue  # changed meanwhile: the next run gives it its partition
    return added


def _move(table: CallCenterTable, item: dict, moved: dict, still_as_read: str, values: dict | None = None) -> None:
    """One transaction: `moved` put where nothing is yet, and `item` deleted on condition
    that it is still as read (`still_as_read`, with `values`)."""
    delete: dict = {
        "TableName": table.name,
        "Key": marshal({"pk": item["pk"], "sk": item["sk"]}),
        "ConditionExpression": still_as_read,
    }
    if values:
        delete["ExpressionAttributeValues"] = marshal(values)
    put = {"TableName": table.name, "Item": marshal(moved), "ConditionExpression": "attribute_not_exists(pk)"}
    table.transact([{"Put": put}, {"Delete": delete}])
