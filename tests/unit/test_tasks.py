"""The LIFO task queue on moto."""

import pytest

from queues_app.ddb import errors
from queues_app.tasks.queue import ExpiryPolicy, IllegalTransition, TaskExpired, TaskQueue, TaskStatus


@pytest.fixture
def tasks(moto_db, clock):
    return TaskQueue(moto_db, clock=clock, expiry=ExpiryPolicy(pending_seconds=60, finished_seconds=10))


def test_newest_pending_first(tasks, clock):
    for i in range(5):
        tasks.create({"n": i}, task_id=f"t{i}")
        clock.advance(1)
    assert tasks.pending_ids(limit=3) == ["t4", "t3", "t2"]
    assert tasks.pending_ids(limit=2, newest_first=False) == ["t0", "t1"]
    assert tasks.take_next().task_id == "t4"
    assert tasks.take_next(newest_first=False).task_id == "t0"


def test_the_lifecycle_allows_only_its_transitions(tasks):
    tasks.create(task_id="t")
    with pytest.raises(IllegalTransition, match="cannot go from TAKEN to SUCCESS"):
        tasks.succeed("t")
    taken = tasks.take("t")
    assert taken.status == TaskStatus.TAKEN and taken.attempts == 1
    with pytest.raises(IllegalTransition):
        tasks.take("t")
    back = tasks.release("t")
    assert back.status == TaskStatus.PENDING
    tasks.take("t")
    done = tasks.succeed("t", "ok")
    assert done.status == TaskStatus.SUCCESS and done.attempts == 2
    for move in (lambda: tasks.take("t"), lambda: tasks.release("t"), lambda: tasks.fail("t")):
        with pytest.raises(IllegalTransition):
            move()


def test_finished_tasks_get_a_short_expiry(tasks, clock):
    created = tasks.create(task_id="t")
    tasks.take("t")
    failed = tasks.fail("t", "downstream said no")
    assert failed.expires_at < created.expires_at
    assert failed.result == "downstream said no"


def test_expired_tasks_are_skipped_and_cannot_be_taken(tasks, clock):
    tasks.create(task_id="old")
    clock.advance(30)
    tasks.create(task_id="young")
    clock.advance(31)
    assert tasks.pending_ids() == ["young"]
    with pytest.raises(TaskExpired):
        tasks.take("old")
    assert tasks.count(TaskStatus.PENDING) == (1, False)


def test_the_sweeper_counts_shed_tasks_with_their_age_then_deletes_them(tasks, clock):
    for i in range(3):
        tasks.create(task_id=f"old{i}")
    clock.advance(30)
    tasks.create(task_id="young")
    clock.advance(35)
    report = tasks.sweep_expired()
    assert report.shed == 3
    assert all(64 <= age <= 66 for age in report.ages_seconds)
    with pytest.raises(errors.NotFound):
        tasks.get("old0")
    assert tasks.get("young").status == TaskStatus.PENDING
    history = tasks.shed_history(minutes=5)
    assert sum(row["shed"] for row in history) == 3
    assert tasks.sweep_expired().shed == 0


def test_unknown_task_is_not_found(tasks):
    with pytest.raises(errors.NotFound):
        tasks.take("nope")


def test_lists_by_status_a_page_at_a_time(tasks, clock):
    for i in range(5):
        tasks.create(task_id=f"t{i}")
        clock.advance(1)
    tasks.take("t1")
    first = tasks.list(TaskStatus.PENDING, limit=2)
    assert [t.task_id for t in first.items] == ["t4", "t3"]
    second = tasks.list(TaskStatus.PENDING, limit=2, cursor=first.next_cursor)
    assert [t.task_id for t in second.items] == ["t2", "t0"]
    assert [t.task_id for t in tasks.list(TaskStatus.TAKEN).items] == ["t1"]
