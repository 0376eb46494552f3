"""What a task is: its statuses and the transitions between them, the record and its
item in the tasks table, the expiry policy and what shedding reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from queues_app.ddb import errors
from queues_app.ddb.clock import from_iso
from queues_app.ddb.codec import record_from_item

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


def created_sort_key(created: str, task_id: str) -> str:
    return f"{created}#{task_id}"


def task_from_item(item: dict) -> Task:
    return record_from_item(
        Task,
        item,
        named={"status": "task_status"},
        payload=item.get("payload") or {},
        created=item.get("created", ""),
        updated=item.get("updated", ""),
    )


def task_to_item(task: Task) -> dict:
    return {
        "task_id": task.task_id,
        "type": "task",
        "task_status": task.status,
        "created_sk": created_sort_key(task.created, task.task_id),
        "payload": task.payload,
        "created": task.created,
        "updated": task.updated,
        "attempts": task.attempts,
        "expires_at": task.expires_at,
        "taken_at": task.taken_at,
        "finished_at": task.finished_at,
        "result": task.result,
        "trace_id": task.trace_id,
    }
