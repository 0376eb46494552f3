"""The task queue on DynamoDB Local: reserved words, conditions and the index as DynamoDB sees them."""

import pytest

from queues_app.tasks.queue import ExpiryPolicy, IllegalTransition, TaskQueue, TaskStatus


def test_the_lifecycle_and_the_sweeper_on_dynamodb_local(local_db, clock):
    tasks = TaskQueue(local_db, clock=clock, expiry=ExpiryPolicy(pending_seconds=60, finished_seconds=5))
    for i in range(4):
        tasks.create({"n": i}, task_id=f"t{i}")
        clock.advance(1)
    assert tasks.take_next().task_id == "t3"
    assert tasks.succeed("t3", "ok").status == TaskStatus.SUCCESS
    with pytest.raises(IllegalTransition):
        tasks.release("t3")
    tasks.take("t2")
    assert tasks.release("t2").status == TaskStatus.PENDING
    clock.advance(120)
    report = tasks.sweep_expired()
    assert report.shed == 3
    assert tasks.count(TaskStatus.PENDING) == (0, False)
    assert sum(row["shed"] for row in tasks.shed_history(minutes=5)) == 3
