"""The task lifecycle as a property (hypothesis, on moto).

A rule-based state machine drives random interleavings of several workers on a few
tasks: create, take, succeed, fail, release, any `transition(task, status)`, take_next
(LIFO or FIFO), clock advances past the pending expiry, and the sweeper. A model keeps
each task's status, the worker holding it, its successful takes and its expiry. Every
attempt must succeed exactly when the lifecycle (`TRANSITIONS`) allows it from the
modelled status, and otherwise raise `IllegalTransition`, or `TaskExpired` for a take of
a pending task whose expiry has passed, or `NotFound` once the sweeper deleted it.
After every step: the stored status and attempts equal the model's (attempts = the
successful takes), a TAKEN task has exactly one holder, and the pending count agrees.

The workers interleave in one thread (moto is not thread-safe); what the property
covers is the order of the attempts, which is what the condition expressions decide.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, note, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import unmarshal
from queues_app.ddb.schema import create_table_params
from queues_app.ddb.tables import TABLES
from queues_app.tasks.queue import TRANSITIONS, ExpiryPolicy, IllegalTransition, TaskExpired, TaskQueue, TaskStatus
from tests.helpers.clock import ManualClock

WORKERS = ("w0", "w1", "w2", "w3")
MAX_TASKS = 6  # small, so that moves meet; paging past expired tasks is tested at the end
PENDING_SECONDS = 10
FINISHED_SECONDS = 3

# The named moves and the status each one asks for.
MOVES = {
    "take": TaskStatus.TAKEN,
    "succeed": TaskStatus.SUCCESS,
    "fail": TaskStatus.FAILURE,
    "release": TaskStatus.PENDING,
}


@dataclass
class ModelTask:
    task_id: str
    order: int  # creation order (the index sorts by creation time)
    created_epoch: float
    expires_at: int
    status: str = TaskStatus.PENDING
    holder: str | None = None
    takes: list[str] = field(default_factory=list)  # workers, one per successful take
    gone: bool = False  # deleted by the sweeper (shed)


def _fixed_clock() -> ManualClock:
    """A manual clock at half past a whole second: advances by whole seconds never land
    on a second boundary, where `expires_at` (whole epoch seconds) changes meaning."""
    clock = ManualClock()
    clock.moment = datetime(2026, 3, 1, 12, 0, 0, 500_000, tzinfo=UTC)
    return clock


class TaskLifecycle(RuleBasedStateMachine):
    """One example: a fresh tasks table, a manual clock, a model."""

    db_client = None  # set by the test: moto's client, built inside mock_aws

    tasks = Bundle("tasks")

    def __init__(self):
        super().__init__()
        self.db = Dynamo(self.db_client, prefix=f"prop-{uuid.uuid4().hex[:8]}-")
        self.db.call("create_table", **create_table_params(TABLES["tasks"], self.db.table("tasks")))
        self.clock = _fixed_clock()
        self.queue = TaskQueue(
            self.db,
            clock=self.clock,
            expiry=ExpiryPolicy(pending_seconds=PENDING_SECONDS, finished_seconds=FINISHED_SECONDS),
        )
        self.model: dict[str, ModelTask] = {}
        self.foreign_finishes = 0  # a worker finished a task another worker had taken (allowed)

    def teardown(self):
        self.db.call("delete_table", TableName=self.db.table("tasks"))

    # --- the model ----------------------------------------------------------------------

    def _epoch(self) -> int:
        """The whole epoch second the queue's next clock reading falls in."""
        return int(self.clock.moment.timestamp())

    def _expired(self, task: ModelTask) -> bool:
        return task.expires_at <= self._epoch()

    def _pending(self) -> list[ModelTask]:
        """Pending tasks not yet deleted, oldest first (the index's order), expired ones included."""
        return sorted(
            (t for t in self.model.values() if not t.gone and t.status == TaskStatus.PENDING), key=lambda t: t.order
        )

    def _expected(self, task: ModelTask, to_status: str) -> type[Exception] | None:
        """What an attempt to move `task` to `to_status` must do: None (succeed) or the error."""
        if task.gone:
            return errors.NotFound
        if to_status not in TRANSITIONS[task.status]:
            return IllegalTransition
        if to_status == TaskStatus.TAKEN and self._expired(task):
            return TaskExpired
        return None

    def _apply(self, task: ModelTask, worker: str, to_status: str) -> None:
        if to_status == TaskStatus.TAKEN:
            # never TAKEN by two workers at once: a take only succeeds from PENDING
            assert task.holder is None, f"{task.task_id} taken by {worker} while {task.holder} holds it"
            task.holder = worker
            task.takes.append(worker)
        else:
            if task.holder != worker:
                self.foreign_finishes += 1
            task.holder = None
        task.status = to_status

    def _attempt(self, worker: str, task_id: str, to_status: str, call) -> None:
        task = self.model[task_id]
        expected = self._expected(task, to_status)
        note(f"{worker}: {task_id} {task.status} -> {to_status}, expect {expected.__name__ if expected else 'ok'}")
        try:
            result = call()
        except (errors.Conflict, errors.NotFound) as exc:
            assert expected is not None, f"{to_status} of {task_id} ({task.status}) refused: {exc!r}"
            assert type(exc) is expected, f"expected {expected.__name__}, got {exc!r}"
            return
        assert expected is None, (
            f"{worker} moved {task_id} from {task.status} to {to_status}; the model expected {expected.__name__}"
        )
        self._apply(task, worker, to_status)
        assert result.status == to_status
        assert result.attempts == len(task.takes)

    # --- rules --------------------------------------------------------------------------

    @precondition(lambda self: len(self.model) < MAX_TASKS)
    @rule(target=tasks)
    def create(self):
        created = self.queue.create({"n": len(self.model)}, task_id=f"t{len(self.model)}")
        moment = self.clock.moment
        assert created.expires_at == int(moment.timestamp() + PENDING_SECONDS)
        self.model[created.task_id] = ModelTask(
            created.task_id, len(self.model), moment.timestamp(), created.expires_at
        )
        return created.task_id

    @rule(worker=st.sampled_from(WORKERS), task_id=tasks, move=st.sampled_from(sorted(MOVES)))
    def named_move(self, worker, task_id, move):
        method = getattr(self.queue, move)
        self._attempt(worker, task_id, MOVES[move], lambda: method(task_id))

    @rule(worker=st.sampled_from(WORKERS), task_id=tasks, to_status=st.sampled_from(TaskStatus.ALL))
    def any_transition(self, worker, task_id, to_status):
        self._attempt(worker, task_id, to_status, lambda: self.queue.transition(task_id, to_status))

    @rule(task_id=tasks)
    def unknown_status_is_refused(self, task_id):
        with pytest.raises(errors.InvalidRequest):
            self.queue.transition(task_id, "DONE")

    @precondition(lambda self: any(t.status == TaskStatus.PENDING and not t.gone for t in self.model.values()))
    @rule(worker=st.sampled_from(WORKERS), data=st.data(), by_name=st.booleans())
    def take_a_pending_task(self, worker, data, by_name):
        """Biased towards takes of pending tasks, live or expired."""
        pending = [t.task_id for t in self._pending()]
        task_id = data.draw(st.sampled_from(pending), label="task")
        call = (
            (lambda: self.queue.take(task_id))
            if by_name
            else (lambda: self.queue.transition(task_id, TaskStatus.TAKEN))
        )
        self._attempt(worker, task_id, TaskStatus.TAKEN, call)

    @precondition(lambda self: any(t.status == TaskStatus.TAKEN and not t.gone for t in self.model.values()))
    @rule(
        worker=st.sampled_from(WORKERS),
        data=st.data(),
        move=st.sampled_from(
            ["succeed", "fail", "release", TaskStatus.SUCCESS, TaskStatus.FAILURE, TaskStatus.PENDING]
        ),
    )
    def finish_or_release_a_taken_task(self, worker, data, move):
        """Biased towards the legal moves: a task that is TAKEN, by its holder or another worker."""
        taken = [t.task_id for t in self.model.values() if t.status == TaskStatus.TAKEN and not t.gone]
        task_id = data.draw(st.sampled_from(taken), label="task")
        if move in MOVES:
            method = getattr(self.queue, move)
            self._attempt(worker, task_id, MOVES[move], lambda: method(task_id))
        else:
            self._attempt(worker, task_id, move, lambda: self.queue.transition(task_id, move))

    @rule(worker=st.sampled_from(WORKERS), newest_first=st.booleans())
    def take_next(self, worker, newest_first):
        alive = [t for t in self._pending() if not self._expired(t)]
        wanted = (alive[-1] if newest_first else alive[0]) if alive else None
        got = self.queue.take_next(newest_first=newest_first)
        note(
            f"{worker}: take_next({'LIFO' if newest_first else 'FIFO'}) -> {got and got.task_id}, "
            f"model {wanted and wanted.task_id}"
        )
        if wanted is None:
            assert got is None, f"take_next took {got.task_id}; the model has nothing alive pending"
            return
        assert got is not None, f"take_next found nothing; {wanted.task_id} was pending and alive"
        assert got.task_id == wanted.task_id, (
            f"took {got.task_id}, the {'newest' if newest_first else 'oldest'} alive pending task is {wanted.task_id}"
        )
        self._apply(wanted, worker, TaskStatus.TAKEN)
        assert got.status == TaskStatus.TAKEN and got.attempts == len(wanted.takes)

    @rule()
    def the_pending_count_skips_expired_tasks(self):
        alive = [t for t in self._pending() if not self._expired(t)]
        assert self.queue.count(TaskStatus.PENDING) == (len(alive), False)

    @rule(seconds=st.integers(min_value=1, max_value=PENDING_SECONDS))
    def advance_clock(self, seconds):
        self.clock.advance(seconds)

    @rule()
    def sweep(self):
        due = [t for t in self._pending() if self._expired(t)]
        now_epoch = self.clock.moment.timestamp()
        report = self.queue.sweep_expired()
        assert report.shed == len(due), f"shed {report.shed}, the model has {len(due)} expired pending"
        for task, age in zip(due, sorted(report.ages_seconds, reverse=True), strict=True):
            assert abs(age - (now_epoch - task.created_epoch)) < 0.01
            task.gone = True

    # --- invariants ---------------------------------------------------------------------

    @invariant()
    def the_table_agrees_with_the_model(self):
        response = self.db.call("scan", TableName=self.db.table("tasks"), ConsistentRead=True)
        stored = {item["task_id"]: item for item in map(unmarshal, response.get("Items", [])) if "task_status" in item}
        assert set(stored) == {t.task_id for t in self.model.values() if not t.gone}
        for task_id, item in stored.items():
            task = self.model[task_id]
            assert item["task_status"] == task.status, task_id
            assert int(item["attempts"]) == len(task.takes), task_id  # one attempt per successful take
            assert (task.status == TaskStatus.TAKEN) == (task.holder is not None), task_id
            assert ("taken_at" in item) == (task.status != TaskStatus.PENDING), task_id


def test_random_interleavings_of_workers_respect_the_lifecycle(moto_db):
    TaskLifecycle.db_client = moto_db.client
    try:
        run_state_machine_as_test(
            TaskLifecycle,
            settings=settings(
                max_examples=50, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
            ),
        )
    finally:
        TaskLifecycle.db_client = None


def test_fifo_take_next_reads_past_a_page_of_expired_tasks(moto_db):
    """DynamoDB applies a Query's Limit before its filter: oldest first, a page of expired
    tasks the sweeper has not deleted yet must not hide the live ones behind it."""
    clock = _fixed_clock()
    queue = TaskQueue(moto_db, clock=clock, expiry=ExpiryPolicy(pending_seconds=10, finished_seconds=5))
    for i in range(25):  # two and a half pages of take_next's 10
        queue.create(task_id=f"old{i:02d}")
    clock.advance(5)
    queue.create(task_id="alive")
    clock.advance(6)  # the old ones have expired; the sweeper has not run
    assert queue.count(TaskStatus.PENDING) == (1, False)
    assert queue.pending_ids(newest_first=False) == ["alive"]
    assert queue.take_next(newest_first=False).task_id == "alive"
    assert queue.take_next(newest_first=False) is None
