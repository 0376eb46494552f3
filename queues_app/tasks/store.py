"""The base of `TaskQueue`: the tasks table, the clock and the expiry policy, and the
reads by key."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from queues_app.ddb import batch, errors
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.tasks.records import ExpiryPolicy, Task, task_from_item


class TaskStore:
    """The tasks table, with `clock` injectable for tests."""

    def __init__(
        self, db: Dynamo | None = None, *, expiry: ExpiryPolicy | None = None, clock: Callable[[], datetime] = now
    ):
        self.db = db or default()
        self._expiry = expiry
        self.clock = clock

    @property
    def table_name(self) -> str:
        return self.db.table("tasks")

    @property
    def expiry(self) -> ExpiryPolicy:
        if self._expiry is None:
            self._expiry = ExpiryPolicy.from_settings()
        return self._expiry

    def get(self, task_id: str) -> Task:
        response = self.db.call(
            "get_item", TableName=self.table_name, Key=marshal({"task_id": task_id}), ConsistentRead=True
        )
        if "Item" not in response:
            raise errors.NotFound(f"No task with id {task_id!r}.")
        return task_from_item(unmarshal(response["Item"]))

    def _get_many(self, ids: list[str]) -> list[Task]:
        found = {
            item["task_id"]: task_from_item(item)
            for item in batch.get_items(self.db, self.table_name, [{"task_id": i} for i in ids])
        }
        return [found[i] for i in ids if i in found]
