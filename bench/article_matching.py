"""The article's matching algorithm, as the baseline for bench/matching.py.

"Implement serverless FIFO queues with filtering capabilities using Amazon DynamoDB
transactions" (AWS Database Blog), section "Filter messages with FIFO ordering". Per
attempt:

1. TransactGetItems of the metadata of ALL queues: a snapshot of their versions;
2. a strongly consistent Query on the caller's one queue partition; the first item is
   the agent (an empty result: nobody in that queue). Here a queue is split over
   `keys.QUEUE_SPLIT` sub-queues: one Query (Limit 1) of each, and the oldest of their
   heads is the queue's first item;
3. one TransactWriteItems that deletes the agent's message item in every queue the
   agent is in, updates the metadata of every one of those queues (depth - 1,
   version + 1) on the condition that its version is still the snapshot's, and sets
   the agent's status to attending (no condition, as in the article).

A cancelled transaction starts over from step 1.

It runs on the project's item layout, which is the article's (agents in `AGENTS`,
metadata `QUEUES / Q#<lang>#<gender>` with `depth` and `version`, message items
`Q#<lang>#<gender> / <token>` holding `agent_id`, `name` and `skills`; ours sit in the
queue's sub-queues `Q#<lang>#<gender>@<n>`), so agents can be
queued for it with the project's CallCenter. Every request goes through `Dynamo.call`, so
the request meter counts it.
"""

from __future__ import annotations

from dataclasses import dataclass

from queues_app.agents.records import AgentStatus
from queues_app.agents.skills import SkillCatalog
from queues_app.centre import keys
from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.routing.queues import queue_heads


@dataclass
class ArticleAssignment:
    agent_id: str
    call_id: str
    attempts: int  # transactions sent for this assignment, the successful one included


class ArticleMatcher:
    """Assigns the first agent of one queue combination, the article's way."""

    def __init__(self, db: Dynamo, catalog: SkillCatalog):
        self.db = db
        self.catalog = catalog
        self.table_name = db.table("callcenter")
        self.all_queues = [keys.queue_name(combo) for combo in catalog.all_combinations()]

    def initialize_metadata(self) -> None:
        """The article's initialization script: one metadata item per combination
        (depth 0, version 0), so that the snapshot always finds every queue."""
        for combo in self.catalog.all_combinations():
            self.db.call(
                "update_item",
                TableName=self.table_name,
                Key=marshal(keys.queue_meta(combo)),
                UpdateExpression="SET #depth = if_not_exists(#depth, :zero), "
                "version = if_not_exists(version, :zero), combination = :combo",
                ExpressionAttributeNames={"#depth": "depth"},
                ExpressionAttributeValues=marshal({":zero": 0, ":combo": list(combo)}),
            )

    def snapshot(self) -> dict[str, int | None]:
        """Step 1: the version of every queue, read in one TransactGetItems."""
        response = self.db.call(
            "transact_get_items",
            TransactItems=[
                # The article keeps one metadata item per queue: shard 0 of ours.
                {"Get": {"TableName": self.table_name, "Key": marshal(keys.queue_meta(combo))}}
                for combo in self.catalog.all_combinations()
            ],
        )
        versions: dict[str, int | None] = {}
        for name, entry in zip(self.all_queues, response.get("Responses", []), strict=True):
            item = unmarshal(entry.get("Item"))
            versions[name] = int(item["version"]) if "version" in item else None
        return versions

    def first_in_queue(self, combo: tuple[str, ...]) -> dict | None:
        """Step 2: the first message of the queue, strongly consistent: the oldest of
        its sub-queues' heads."""
        (head,) = queue_heads(self.db, self.table_name, [combo], 1)
        return head[0] if head else None

    def assignment_actions(self, message: dict, versions: dict[str, int | None], call_id: str) -> list[dict]:
        """Step 3: deletes, version-conditioned metadata updates, the agent's status."""
        token = message["sk"]
        actions = []
        for combo in self.catalog.combinations(message["skills"]):
            name = keys.queue_name(combo)
            actions.append({"Delete": {"TableName": self.table_name, "Key": marshal(keys.queue_message(combo, token))}})
            version = versions.get(name)
            update = {
                "TableName": self.table_name,
                "Key": marshal(keys.queue_meta(combo)),
                "UpdateExpression": "SET #depth = #depth - :one, version = version + :one",
                "ExpressionAttributeNames": {"#depth": "depth"},
                "ExpressionAttributeValues": marshal({":one": 1}),
            }
            if version is None:
                update["ConditionExpression"] = "attribute_not_exists(version)"
            else:
                update["ConditionExpression"] = "version = :snapshot"
                update["ExpressionAttributeValues"] = marshal({":one": 1, ":snapshot": version})
            actions.append({"Update": update})
        actions.append(
            {
                "Update": {
                    "TableName": self.table_name,
                    "Key": marshal(keys.agent(message["agent_id"])),
                    "UpdateExpression": "SET #status = :attending, status_q = :status_q, call_id = :call, "
                    "updated_at = :now, version = version + :one REMOVE queue_token",
                    "ExpressionAttributeNames": {"#status": "status"},
                    "ExpressionAttributeValues": marshal(
                        {
                            ":attending": AgentStatus.ATTENDING,
                            ":status_q": keys.status_partition(AgentStatus.ATTENDING, message["agent_id"]),
                            ":call": call_id,
                            ":now": to_iso(now()),
                            ":one": 1,
                        }
                    ),
                }
            }
        )
        return actions

    def assign(self, combo: tuple[str, ...], call_id: str) -> ArticleAssignment | None:
        """Assign the first agent of `combo` to the call; None when the queue is empty."""
        attempts = 0
        while True:
            versions = self.snapshot()
            message = self.first_in_queue(combo)
            if message is None:
                return None
            attempts += 1
            try:
                self.db.call(
                    "transact_write_items",
                    TransactItems=self.assignment_actions(message, versions, call_id),
                )
            except errors.TransactionCancelled:
                continue  # a version changed since the snapshot (or a lost race): start over
            return ArticleAssignment(agent_id=message["agent_id"], call_id=call_id, attempts=attempts)
