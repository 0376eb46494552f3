"""The LIFO task queue: newest work first, valid transitions only, and load shedding
that is counted instead of silent. The design (the `by_status` index, expiry and TTL)
is explained in docs/architecture.md.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from functools import cached_property

from queues_app.ddb import batch, errors
from queues_app.ddb.clock import to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.paging import Page, decode_cursor, encode_cursor
from queues_app.ddb.replay import Done
from queues_app.ddb.tables import TASKS_BY_STATUS
from queues_app.facades import Verb
from queues_app.figures import counters
from queues_app.tasks.records import (
    SHED_STATS_PREFIX,
    TRANSITIONS,
    ExpiryPolicy,
    IllegalTransition,
    ShedReport,
    Task,
    TaskExpired,
    TaskStatus,
    created_sort_key,
    task_from_item,
    task_to_item,
)
from queues_app.tasks.shedding import Shedding
from queues_app.tasks.store import TaskStore

# The records are part of this module's interface: callers import them from here too.
__all__ = [
    "SHED_STATS_PREFIX",
    "TRANSITIONS",
    "ExpiryPolicy",
    "IllegalTransition",
    "ShedReport",
    "Task",
    "TaskExpired",
    "TaskQueue",
    "TaskStatus",
    "created_sort_key",
    "task_from_item",
    "task_to_item",
]


class TaskQueue(TaskStore):
    """Every operation on tasks: writing and the transitions, the reads, and shedding (its
    part `shedding`). `clock` is injectable for tests."""

    sweep_expired = Verb("shedding", Shedding.sweep_expired)
    shed_history = Verb("shedding", Shedding.shed_history)

    @cached_property
    def shedding(self) -> Shedding:
        return Shedding(self)

    # --- writing ------------------------------------------------------------------------

    def create(self, payload: dict | None = None, *, task_id: str | None = None, trace_id: str | None = None) -> Task:
        moment = self.clock()
        stamp = to_iso(moment)
        task = Task(
            task_id=task_id or uuid.uuid4().hex[:16],
            status=TaskStatus.PENDING,
            payload=payload or {},
            created=stamp,
            updated=stamp,
            expires_at=int((moment + timedelta(seconds=self.expiry.pending_seconds)).timestamp()),
            trace_id=trace_id,
        )
        exists = f"A task with id {task.task_id!r} exists already."
        self.db.put_new(self.table_name, task_to_item(task), key="task_id", exists=exists)
        counters.note(self.db, counters.TASKS, "enqueued")
        return task

    def create_many(self, tasks: list[Task], on_batch=None) -> int:
        return batch.put_items(self.db, self.table_name, (task_to_item(t) for t in tasks), on_batch=on_batch)

    def build(self, payload: dict | None = None, *, created: datetime | None = None) -> Task:
        """A pending task, not yet written (for bulk loads)."""
        moment = created or self.clock()
        stamp = to_iso(moment)
        return Task(
            task_id=uuid.uuid4().hex[:16],
            status=TaskStatus.PENDING,
            payload=payload or {},
            created=stamp,
            updated=stamp,
            expires_at=int((moment + timedelta(seconds=self.expiry.pending_seconds)).timestamp()),
        )

    def take(self, task_id: str) -> Task:
        """PENDING -> TAKEN, only if it has not expired."""
        moment = self.clock()
        return self._transition(
            task_id,
            TaskStatus.PENDING,
            TaskStatus.TAKEN,
            "SET taken_at = :now ADD attempts :one",
            {":one": 1, ":epoch": int(moment.timestamp())},
            extra_condition="expires_at > :epoch",
        ).item

    # A take is named by its number (`attempts` after it): finishing or releasing with
    # `take` acts only on that take, so a processor whose take was given back and taken
    # again by another never ends the other's; the same call sent again once it took
    # effect is answered as done.

    def succeed(self, task_id: str, result: str | None = None, *, take: int | None = None) -> Task:
        return self._finish(task_id, TaskStatus.SUCCESS, result, take)

    def fail(self, task_id: str, reason: str | None = None, *, take: int | None = None) -> Task:
        return self._finish(task_id, TaskStatus.FAILURE, reason, take)

    def release(self, task_id: str, *, take: int | None = None) -> Task:
        """TAKEN -> PENDING: could not be processed now (the downstream is at capacity);
        it keeps its creation time, so its place in the LIFO order, and its expiry."""
        return self._transition(task_id, TaskStatus.TAKEN, TaskStatus.PENDING, "REMOVE taken_at", {}, take=take).item

    def _finish(self, task_id: str, status: str, result: str | None, take: int | None = None) -> Task:
        moment = self.clock()
        done = self._transition(
            task_id,
            TaskStatus.TAKEN,
            status,
            "SET finished_at = :now, expires_at = :short, #result = :result",
            {
                ":short": int((moment + timedelta(seconds=self.expiry.finished_seconds)).timestamp()),
                ":result": (result or "")[:500],
            },
            names={"#result": "result"},
            take=take,
        )
        if not done.replayed:
            counters.note(self.db, counters.TASKS, "completed")
        return done.item

    def transition(self, task_id: str, to_status: str) -> Task:
        """Any transition by name; refused unless the lifecycle allows it from the current
        status (the condition expression is what enforces it)."""
        if to_status == TaskStatus.TAKEN:
            return self.take(task_id)
        if to_status in TaskStatus.FINISHED:
            return self._finish(task_id, to_status, None)
        if to_status == TaskStatus.PENDING:
            return self.release(task_id)
        raise errors.InvalidRequest(f"Unknown task status {to_status!r}.")

    def _transition(
        self,
        task_id: str,
        from_status: str,
        to_status: str,
        update: str,
        values: dict,
        *,
        extra_condition: str | None = None,
        names: dict | None = None,
        take: int | None = None,
    ) -> Done[Task]:
        stamp = to_iso(self.clock())
        if take is not None:
            extra_condition = "attempts = :take" + (f" AND {extra_condition}" if extra_condition else "")
            values = {**values, ":take": take}
        sets, _, rest = update.partition(" ADD ")
        set_clause = "SET task_status = :to, updated = :now"
        if sets.startswith("SET "):
            set_clause += ", " + sets.removeprefix("SET ")
            tail = ""
        else:
            tail = " " + sets if sets else ""
        expression = set_clause + tail + (f" ADD {rest}" if rest else "")
        condition = "task_status = :from" + (f" AND {extra_condition}" if extra_condition else "")
        params = {}
        if names:
            params["ExpressionAttributeNames"] = names
        try:
            response = self.db.call(
                "update_item",
                TableName=self.table_name,
                Key=marshal({"task_id": task_id}),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeValues=marshal({**values, ":to": to_status, ":from": from_status, ":now": stamp}),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **params,
            )
        except errors.Conflict as exc:
            current = exc.current
            if not current:
                raise errors.NotFound(f"No task with id {task_id!r} (it may have expired and been deleted).") from exc
            if take is not None and current.get("task_status") == to_status and current.get("attempts") == take:
                return Done(task_from_item(current), replayed=True)  # this very call, sent again
            if take is not None and current.get("attempts") != take:
                raise IllegalTransition(
                    f"Task {task_id} was given back and taken again since take {take} "
                    f"(it is {current.get('task_status')}, take {current.get('attempts')}).",
                    current=current,
                ) from exc
            if current.get("task_status") == from_status and extra_condition:
                raise TaskExpired(f"Task {task_id} expired before it could be taken (shed).", current=current) from exc
            raise IllegalTransition(
                f"Task {task_id} is {current.get('task_status')}; it cannot go from {from_status} to {to_status}.",
                current=current,
            ) from exc
        return Done(task_from_item(unmarshal(response["Attributes"])))

    # --- reading ------------------------------------------------------------------------

    def pending_ids(self, *, limit: int = 10, newest_first: bool = True, max_pages: int = 10) -> list[str]:
        return [entry["task_id"] for entry in self._pending_entries(limit, newest_first, max_pages)]

    def _pending_entries(self, limit: int, newest_first: bool, max_pages: int) -> list[dict]:
        """The newest (or oldest) pending tasks that have not expired, keys only: the
        article's query, plus a filter on expiry. DynamoDB applies Limit before the
        filter, so a page of expired tasks not yet swept (the oldest, when reading oldest
        first) reads on to the next page, up to `max_pages`."""
        entries: list[dict] = []
        moment = self.clock()
        # Tasks created before the cutoff have expired: the key condition skips them
        # without reading them; the filter still guards each task's own expiry.
        cutoff = to_iso(moment - timedelta(seconds=self.expiry.pending_seconds))
        pages = self.db.pages(
            "query",
            TableName=self.table_name,
            IndexName=TASKS_BY_STATUS.name,
            KeyConditionExpression="task_status = :pending AND created_sk > :cutoff",
            FilterExpression="expires_at > :epoch",
            ExpressionAttributeValues=marshal(
                {":pending": TaskStatus.PENDING, ":cutoff": cutoff, ":epoch": int(moment.timestamp())}
            ),
            ScanIndexForward=not newest_first,
            PaginationConfig={"PageSize": limit},
        )
        for number, page in enumerate(pages, 1):
            entries += [unmarshal(i) for i in page.get("Items", [])]
            if entries or number >= max_pages:
                break  # no further page is read
        return entries[:limit]

    def oldest_pending_created(self) -> str | None:
        """When the oldest pending task that has not expired was created: a Limit-1 Query
        past the expiry cutoff, read on (at most three pages) when the task it finds
        expires within this very second (`expires_at` is whole seconds)."""
        entries = self._pending_entries(1, False, 3)
        # The index's sort key is <created>#<task_id>: no need to read the task itself.
        return entries[0]["created_sk"].split("#", 1)[0] if entries else None

    def take_next(self, *, newest_first: bool = True, limit: int = 10) -> Task | None:
        """Take the newest pending task (LIFO), or the oldest (FIFO); None when none is left."""
        for _round in range(3):
            ids = self.pending_ids(limit=limit, newest_first=newest_first)
            if not ids:
                return None
            for task_id in ids:
                try:
                    return self.take(task_id)
                except (IllegalTransition, TaskExpired, errors.NotFound):
                    continue  # taken by someone else, or expired meanwhile
        return None

    def list(self, status: str, *, cursor: str | None = None, limit: int = 25, newest_first: bool = True) -> Page[Task]:
        """Tasks in one status, newest first, a page at a time (expired ones included for
        finished statuses; skipped for pending)."""
        params = self._in_status(status, Limit=limit, ScanIndexForward=not newest_first)
        purpose = f"tasks:{status}"  # a cursor serves the list it came from
        start = decode_cursor(cursor, purpose=purpose)
        if start:
            params["ExclusiveStartKey"] = start
        response = self.db.call("query", **params)
        ids = [unmarshal(i)["task_id"] for i in response.get("Items", [])]
        return Page(self._get_many(ids), encode_cursor(response.get("LastEvaluatedKey"), purpose=purpose))

    def each(self, status: str, *, newest_first: bool = True, page_size: int = 100) -> Iterator[Task]:
        """Every task in one status (as `list` filters them), read a page at a time as the
        caller goes on: stopping early reads no further page."""
        pages = self.db.pages(
            "query",
            **self._in_status(status, ScanIndexForward=not newest_first, PaginationConfig={"PageSize": page_size}),
        )
        for page in pages:
            yield from self._get_many([unmarshal(i)["task_id"] for i in page.get("Items", [])])

    def _in_status(self, status: str, **params) -> dict:
        """The Query of the `by_status` index for one status; pending tasks that expired
        are filtered out."""
        query = {
            "TableName": self.table_name,
            "IndexName": TASKS_BY_STATUS.name,
            "KeyConditionExpression": "task_status = :status",
            "ExpressionAttributeValues": marshal({":status": status}),
            **params,
        }
        if status == TaskStatus.PENDING:
            query["FilterExpression"] = "expires_at > :epoch"
            query["ExpressionAttributeValues"][":epoch"] = {"N": str(int(self.clock().timestamp()))}
        return query

    def count(self, status: str, cap: int = 10_000) -> tuple[int, bool]:
        """Tasks in a status (pending: not expired), one COUNT query stopping at `cap`."""
        response = self.db.call("query", **self._in_status(status, Select="COUNT", Limit=cap))
        return response["Count"], bool(response.get("LastEvaluatedKey"))
