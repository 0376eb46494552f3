"""The LIFO task queue: newest work first, valid transitions only, and load shedding
that is counted instead of silent.

A task is PENDING, TAKEN, SUCCESS or FAILURE. The only transitions are PENDING ->
TAKEN and TAKEN -> SUCCESS, FAILURE or back to PENDING, each enforced by a condition
expression on the status it leaves. The `by_status` index (status, created) gives the
newest pending tasks first (Query with ScanIndexForward false and a Limit, as the
article does); the same index read oldest first gives the FIFO order for comparison.

Every task carries `expires_at` (epoch seconds), the table's TTL attribute. DynamoDB
deletes expired items only eventually (often days later; DynamoDB Local at random
moments), so reads skip expired tasks and a take is conditioned on not being
expired; the sweeper counts pending tasks that expired as shed (how many, at what
age) before deleting them. Finished tasks get a short expiry, as in the article.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from queues_app.ddb import batch, errors
from queues_app.monitoring import counters
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.paging import Page, decode_cursor, encode_cursor
from queues_app.ddb.clock import from_iso, now, to_iso
from queues_app.ddb.codec import marshal, unmarshal

SHED_STATS_PREFIX = "STATS#shed#"


class TaskStatus:
    PENDING = "PENDING"
    TAKEN = "TAKEN"
    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"

    ALL = (PENDING, TAKEN, SUCCESS, FAILURE)
    FINISHED = (SUCCESS, FAILURE)


# The lifecycle: which status each status may move to.
TRANSITIONS = {
    TaskStatus.PENDING: (TaskStatus.TAKEN,),
    TaskStatus.TAKEN: (TaskStatus.SUCCESS, TaskStatus.FAILURE, TaskStatus.PENDING),
    TaskStatus.SUCCESS: (),
    TaskStatus.FAILURE: (),
}


class IllegalTransition(errors.Conflict):
    """The task is not in the status this transition starts from."""


class TaskExpired(errors.Conflict):
    """The task expired (it was shed) before it could be taken."""


@dataclass
class Task:
    task_id: str
    status: str
    payload: dict
    created: str
    updated: str
    attempts: int = 0
    expires_at: int = 0
    taken_at: str | None = None
    finished_at: str | None = None
    result: str | None = None
    trace_id: str | None = None

    @property
    def created_at(self) -> datetime | None:
        return from_iso(self.created)

    def expired(self, moment: datetime) -> bool:
        return bool(self.expires_at) and self.expires_at <= moment.timestamp()


@dataclass(frozen=True)
class ExpiryPolicy:
    pending_seconds: float = 300.0  # unprocessed work is shed after this long
    finished_seconds: float = 60.0  # finished tasks are kept this long, then deleted

    @classmethod
    def from_settings(cls) -> ExpiryPolicy:
        from django.conf import settings

        config = getattr(settings, "SWITCHBOARD_TASK_EXPIRY", {}) or {}
        return cls(
            pending_seconds=float(config.get("pending_seconds", 300)),
            finished_seconds=float(config.get("finished_seconds", 60)),
        )


@dataclass
class ShedReport:
    shed: int = 0
    ages_seconds: list[float] = field(default_factory=list)

    @property
    def oldest_age(self) -> float | None:
        return max(self.ages_seconds) if self.ages_seconds else None


def task_from_item(item: dict) -> Task:
    return Task(
        task_id=item["task_id"],
        status=item["task_status"],
        payload=item.get("payload") or {},
        created=item.get("created", ""),
        updated=item.get("updated", ""),
        attempts=int(item.get("attempts", 0)),
        expires_at=int(item.get("expires_at", 0)),
        taken_at=item.get("taken_at"),
        finished_at=item.get("finished_at"),
        result=item.get("result"),
        trace_id=item.get("trace_id"),
    )


def created_sort_key(created: str, task_id: str) -> str:
    return f"{created}#{task_id}"


class TaskQueue:
    def __init__(self, db: Dynamo | None = None, *, expiry: ExpiryPolicy | None = None,
                 clock: Callable[[], datetime] = now):
        self.db = db or default()
        self._expiry = expiry
        self.clock = clock

    @property
    def table(self) -> str:
        return self.db.table("tasks")

    @property
    def expiry(self) -> ExpiryPolicy:
        if self._expiry is None:
            self._expiry = ExpiryPolicy.from_settings()
        return self._expiry

    # --- writing ------------------------------------------------------------------------

    def create(self, payload: dict | None = None, *, task_id: str | None = None,
               trace_id: str | None = None) -> Task:
        moment = self.clock()
        stamp = to_iso(moment)
        task = Task(
            task_id=task_id or uuid.uuid4().hex[:16], status=TaskStatus.PENDING, payload=payload or {},
            created=stamp, updated=stamp,
            expires_at=int((moment + timedelta(seconds=self.expiry.pending_seconds)).timestamp()),
            trace_id=trace_id,
        )
        try:
            self.db.call("put_item", TableName=self.table, Item=marshal(task_to_item(task)),
                         ConditionExpression="attribute_not_exists(task_id)")
        except errors.Conflict as exc:
            raise errors.Conflict(f"A task with id {task.task_id!r} exists already.") from exc
        counters.note(self.db, counters.TASKS, "enqueued")
        return task

    def create_many(self, tasks: list[Task], on_batch=None) -> int:
        return batch.put_items(self.db, self.table, (task_to_item(t) for t in tasks), on_batch=on_batch)

    def build(self, payload: dict | None = None, *, created: datetime | None = None) -> Task:
        """A pending task, not yet written (for bulk loads)."""
        moment = created or self.clock()
        stamp = to_iso(moment)
        return Task(task_id=uuid.uuid4().hex[:16], status=TaskStatus.PENDING, payload=payload or {},
                    created=stamp, updated=stamp,
                    expires_at=int((moment + timedelta(seconds=self.expiry.pending_seconds)).timestamp()))

    def take(self, task_id: str) -> Task:
        """PENDING -> TAKEN, only if it has not expired."""
        moment = self.clock()
        return self._transition(
            task_id, TaskStatus.PENDING, TaskStatus.TAKEN,
            "SET taken_at = :now ADD attempts :one",
            {":one": 1, ":epoch": int(moment.timestamp())},
            extra_condition="expires_at > :epoch",
        )

    def succeed(self, task_id: str, result: str | None = None) -> Task:
        return self._finish(task_id, TaskStatus.SUCCESS, result)

    def fail(self, task_id: str, reason: str | None = None) -> Task:
        return self._finish(task_id, TaskStatus.FAILURE, reason)

    def release(self, task_id: str) -> Task:
        """TAKEN -> PENDING: could not be processed now (the downstream is at capacity);
        it keeps its creation time, so its place in the LIFO order, and its expiry."""
        return self._transition(task_id, TaskStatus.TAKEN, TaskStatus.PENDING, "REMOVE taken_at", {})

    def _finish(self, task_id: str, status: str, result: str | None) -> Task:
        moment = self.clock()
        task = self._transition(
            task_id, TaskStatus.TAKEN, status,
            "SET finished_at = :now, expires_at = :short, #result = :result",
            {":short": int((moment + timedelta(seconds=self.expiry.finished_seconds)).timestamp()),
             ":result": (result or "")[:500]},
            names={"#result": "result"},
        )
        counters.note(self.db, counters.TASKS, "completed")
        return task

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

    def _transition(self, task_id: str, from_status: str, to_status: str, update: str, values: dict, *,
                    extra_condition: str | None = None, names: dict | None = None) -> Task:
        stamp = to_iso(self.clock())
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
                "update_item", TableName=self.table, Key=marshal({"task_id": task_id}),
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
            if current.get("task_status") == from_status and extra_condition:
                raise TaskExpired(f"Task {task_id} expired before it could be taken (shed).", current=current) from exc
            raise IllegalTransition(
                f"Task {task_id} is {current.get('task_status')}; it cannot go from {from_status} to {to_status}.",
                current=current,
            ) from exc
        return task_from_item(unmarshal(response["Attributes"]))

    # --- reading ------------------------------------------------------------------------

    def get(self, task_id: str) -> Task:
        response = self.db.call("get_item", TableName=self.table, Key=marshal({"task_id": task_id}),
                                ConsistentRead=True)
        if "Item" not in response:
            raise errors.NotFound(f"No task with id {task_id!r}.")
        return task_from_item(unmarshal(response["Item"]))

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
        params = {
            "TableName": self.table, "IndexName": "by_status", "Limit": limit,
            "KeyConditionExpression": "task_status = :pending AND created_sk > :cutoff",
            "FilterExpression": "expires_at > :epoch",
            "ExpressionAttributeValues": marshal({":pending": TaskStatus.PENDING, ":cutoff": cutoff,
                                                  ":epoch": int(moment.timestamp())}),
            "ScanIndexForward": not newest_first,
        }
        for _page in range(max_pages):
            response = self.db.call("query", **params)
            entries += [unmarshal(i) for i in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if entries or not start:
                break
            params["ExclusiveStartKey"] = start
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

    def list(self, status: str, *, cursor: str | None = None, limit: int = 25,
             newest_first: bool = True) -> Page[Task]:
        """Tasks in one status, newest first, a page at a time (expired ones included for
        finished statuses; skipped for pending)."""
        params = {
            "TableName": self.table, "IndexName": "by_status", "Limit": limit,
            "KeyConditionExpression": "task_status = :status",
            "ExpressionAttributeValues": marshal({":status": status}),
            "ScanIndexForward": not newest_first,
        }
        if status == TaskStatus.PENDING:
            params["FilterExpression"] = "expires_at > :epoch"
            params["ExpressionAttributeValues"][":epoch"] = {"N": str(int(self.clock().timestamp()))}
        start = decode_cursor(cursor)
        if start:
            params["ExclusiveStartKey"] = start
        response = self.db.call("query", **params)
        ids = [unmarshal(i)["task_id"] for i in response.get("Items", [])]
        return Page(self._get_many(ids), encode_cursor(response.get("LastEvaluatedKey")))

    def _get_many(self, ids: list[str]) -> list[Task]:
        found = {item["task_id"]: task_from_item(item)
                 for item in batch.get_items(self.db, self.table, [{"task_id": i} for i in ids])}
        return [found[i] for i in ids if i in found]

    def count(self, status: str, cap: int = 10_000) -> tuple[int, bool]:
        """Tasks in a status (pending: not expired), one COUNT query stopping at `cap`."""
        params = {
            "TableName": self.table, "IndexName": "by_status", "Select": "COUNT", "Limit": cap,
            "KeyConditionExpression": "task_status = :status",
            "ExpressionAttributeValues": marshal({":status": status}),
        }
        if status == TaskStatus.PENDING:
            params["FilterExpression"] = "expires_at > :epoch"
            params["ExpressionAttributeValues"][":epoch"] = {"N": str(int(self.clock().timestamp()))}
        response = self.db.call("query", **params)
        return response["Count"], bool(response.get("LastEvaluatedKey"))

    # --- shedding -----------------------------------------------------------------------

    def sweep_expired(self, *, limit: int = 1000) -> ShedReport:
        """Count pending tasks that expired as shed, with their age, and delete them.
        Reads the pending index oldest first and stops at the first task still alive
        (creation order is expiry order for pending tasks)."""
        moment = self.clock()
        epoch = int(moment.timestamp())
        report = ShedReport()
        start = None
        while report.shed < limit:
            params = {
                "TableName": self.table, "IndexName": "by_status", "Limit": 100,
                "KeyConditionExpression": "task_status = :pending",
                "ExpressionAttributeValues": marshal({":pending": TaskStatus.PENDING}),
                "ScanIndexForward": True,
            }
            if start:
                params["ExclusiveStartKey"] = start
            response = self.db.call("query", **params)
            items = [unmarshal(i) for i in response.get("Items", [])]
            alive_seen = False
            for item in items:
                if int(item.get("expires_at", 0)) > epoch:
                    alive_seen = True
                    break
                age = self._delete_shed(item, epoch, moment)
                if age is not None:
                    report.shed += 1
                    report.ages_seconds.append(age)
            start = response.get("LastEvaluatedKey")
            if alive_seen or not start:
                break
        if report.shed:
            self._record_shed(report, moment)
            counters.note(self.db, counters.TASKS, "shed", report.shed)
        return report

    def _delete_shed(self, item: dict, epoch: int, moment: datetime) -> float | None:
        try:
            response = self.db.call(
                "delete_item", TableName=self.table, Key=marshal({"task_id": item["task_id"]}),
                ConditionExpression="task_status = :pending AND expires_at <= :epoch",
                ExpressionAttributeValues=marshal({":pending": TaskStatus.PENDING, ":epoch": epoch}),
                ReturnValues="ALL_OLD",
            )
        except errors.Conflict:
            return None  # taken, or deleted by TTL or another sweeper, meanwhile
        old = unmarshal(response.get("Attributes"))
        created = from_iso(old.get("created"))
        return (moment - created).total_seconds() if created else 0.0

    def _record_shed(self, report: ShedReport, moment: datetime) -> None:
        """Per-minute totals of shed tasks (count, summed and largest age) in a stats item."""
        minute = moment.strftime("%Y-%m-%dT%H:%M")
        self.db.call(
            "update_item", TableName=self.table, Key=marshal({"task_id": SHED_STATS_PREFIX + minute}),
            UpdateExpression="ADD shed :n, age_sum :sum SET #minute = :minute, expires_at = :expires",
            ExpressionAttributeNames={"#minute": "minute"},
            ExpressionAttributeValues=marshal({
                ":n": report.shed, ":sum": round(sum(report.ages_seconds), 3), ":minute": minute,
                ":expires": int((moment + timedelta(days=2)).timestamp()),
            }),
        )

    def shed_history(self, minutes: int = 60) -> list[dict]:
        """Shed counts for the last `minutes` minutes (one BatchGetItem per 100 minutes)."""
        moment = self.clock()
        keys = [SHED_STATS_PREFIX + (moment - timedelta(minutes=m)).strftime("%Y-%m-%dT%H:%M")
                for m in range(minutes)]
        rows = []
        for start in range(0, len(keys), 100):
            request = {self.table: {"Keys": [marshal({"task_id": k}) for k in keys[start:start + 100]]}}
            response = self.db.call("batch_get_item", RequestItems=request)
            rows += [unmarshal(i) for i in response.get("Responses", {}).get(self.table, [])]
        return sorted(
            ({"minute": r["minute"], "shed": int(r.get("shed", 0)), "age_sum": float(r.get("age_sum", 0))}
             for r in rows),
            key=lambda r: r["minute"],
        )


def task_to_item(task: Task) -> dict:
    return {
        "task_id": task.task_id, "type": "task", "task_status": task.status,
        "created_sk": created_sort_key(task.created, task.task_id),
        "payload": task.payload, "created": task.created, "updated": task.updated, "attempts": task.attempts,
        "expires_at": task.expires_at, "taken_at": task.taken_at, "finished_at": task.finished_at,
        "result": task.result, "trace_id": task.trace_id,
    }
