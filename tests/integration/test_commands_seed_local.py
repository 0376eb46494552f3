"""`seed_demo` on DynamoDB Local while a task processor and a shipment worker run: it
completes, and what it leaves behind satisfies the invariants `check_invariants` checks (and
the tasks' own: a known status and the fields that go with it)."""

import io
import threading

from django.core.management import call_command

from queues_app.ddb.scan import scan_all
from queues_app.monitoring import invariants
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.worker import ShipmentWorker, demo_handler
from queues_app.tasks.downstream import RateLimitedDownstream
from queues_app.tasks.processor import TaskProcessor
from queues_app.tasks.queue import TaskQueue, TaskStatus, created_sort_key
from tests.helpers.threads import in_thread, wait_for


def task_violations(db):
    """Each task item: a known status, its index sort key, and the fields its status
    implies (a taken or finished task was taken; only a finished one has finished)."""
    found, seen = [], 0
    for item in scan_all(db, "tasks"):
        if item.get("type") != "task":
            continue  # the processor's lease, shed statistics
        seen += 1
        tid, status = item["task_id"], item.get("task_status")
        if status not in TaskStatus.ALL:
            found.append(f"{tid}: unknown status {status!r}")
            continue
        if item.get("created_sk") != created_sort_key(item["created"], tid):
            found.append(f"{tid}: created_sk {item.get('created_sk')!r}")
        if status != TaskStatus.PENDING and not item.get("taken_at"):
            found.append(f"{tid}: {status} without taken_at")
        if status != TaskStatus.PENDING and int(item.get("attempts", 0)) < 1:
            found.append(f"{tid}: {status} with no attempt")
        if (status in TaskStatus.FINISHED) != bool(item.get("finished_at")):
            found.append(f"{tid}: {status} and finished_at {item.get('finished_at')!r}")
        if status == TaskStatus.PENDING and item.get("taken_at"):
            found.append(f"{tid}: pending with taken_at")
    return found, seen


def test_seed_demo_completes_beside_a_running_processor_and_worker(local_db, settings):
    # Finished tasks kept an hour, so the count below cannot lose any to expiry.
    settings.SWITCHBOARD_TASK_EXPIRY = {"pending_seconds": 300, "finished_seconds": 3600}
    # The processor takes the newest pending task first: the very tasks the seed used to
    # take and finish itself, so the two raced.
    processor = TaskProcessor(
        TaskQueue(local_db),
        RateLimitedDownstream(rate=500, burst=50, fail_share=0.1, seed=1),
        holder="racer",
        lease_seconds=5,
        poll_seconds=0.05,
        sweep_every=1.0,
        acquire_retry=0.05,
        capacity_wait=0.01,
    )
    worker = ShipmentWorker(
        ShipmentQueue(local_db), demo_handler(fail_share=0.3, work_seconds=0.001, seed=2), visibility_timeout=5
    )
    worker.idle_sleep = 0.05
    stop = threading.Event()
    running = [in_thread(processor.run_forever, 60, stop), in_thread(worker.run)]
    assert wait_for(lambda: processor.stats.leases_acquired == 1, 10)

    out = io.StringIO()
    try:
        call_command(
            "seed_demo", agents=12, callers=6, available=6, shipments=80, tasks=600, seed=11, stdout=out, stderr=out
        )
        # The processor did work on the seeded tasks meanwhile (so the race was on).
        assert wait_for(lambda: processor.stats.processed + processor.stats.failed >= 50, 20), processor.stats
        assert wait_for(lambda: worker.stats.completed + worker.stats.failed >= 10, 20), worker.stats
    finally:
        stop.set()
        worker.stop()
        for thread, failures in running:
            thread.join(15)
            assert not thread.is_alive() and not failures

    text = out.getvalue()
    assert "12 agents written" in text
    assert "80 shipments written" in text
    assert "600 tasks written" in text

    report = invariants.check(local_db, passes=1)
    assert report.violations == [], report.violations
    assert report.counts["shipments"] == 80
    assert report.counts["agents"] == 12
    found, seen = task_violations(local_db)
    assert found == []
    assert seen == 600  # none lost, none written twice
    out = io.StringIO()
    call_command("check_invariants", "--once", stdout=out)
    assert out.getvalue().startswith("OK: no violations")
