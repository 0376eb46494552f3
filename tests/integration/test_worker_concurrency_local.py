"""`run_shipment_worker --concurrency N` on DynamoDB Local (moto is not thread-safe):
N shipments at once in one process, each handled once, and on SIGTERM each thread
finishes or gives back what it holds."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from django.conf import settings

from queues_app.shipments.queue import ShipmentQueue, ShipmentState

ROOT = Path(__file__).resolve().parents[2]


def start_worker(*args):
    env = {
        **os.environ,
        "DYNAMODB_ENDPOINT_URL": settings.DYNAMODB_ENDPOINT_URL,
        "DYNAMODB_TABLE_PREFIX": settings.DYNAMODB_TABLE_PREFIX,
        "LOG_LEVEL": "INFO",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)  # manage.py's own settings
    return subprocess.Popen(
        [sys.executable, "manage.py", "run_shipment_worker", "--fail-share", "0", *args],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def fill(queue, n):
    for i in range(n):
        queue.submit({}, shipment_id=f"s{i:02d}")
    return [f"s{i:02d}" for i in range(n)]


def states(queue, ids):
    return [queue.get(i).state for i in ids]


def wait_for(predicate, timeout=30.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_n_threads_drain_the_queue_each_shipment_once(local_db):
    queue = ShipmentQueue(local_db)
    ids = fill(queue, 12)
    worker = start_worker("--concurrency", "3", "--work-seconds", "0.3", "--until-empty")
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert "12 completed, 0 failed" in out
    assert all(state == ShipmentState.COMPLETED for state in states(queue, ids))
    assert all(queue.get(i).receive_count == 1 for i in ids)
    completed = [line for line in err.splitlines() if " completed in " in line]
    assert len(completed) == 12


def test_sigterm_gives_back_what_each_thread_holds_past_the_grace(local_db):
    queue = ShipmentQueue(local_db)
    ids = fill(queue, 5)
    worker = start_worker("--concurrency", "3", "--work-seconds", "60", "--grace", "0.5", "--visibility", "3")
    try:
        assert wait_for(lambda: states(queue, ids).count(ShipmentState.PROCESSING) == 3)
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    finally:
        worker.kill()
    assert worker.returncode == 0, err
    assert "0 completed, 0 failed, 3 given back" in out
    assert states(queue, ids) == [ShipmentState.QUEUED] * 5
    assert err.count(": stopping") == 3


def test_sigterm_lets_each_thread_finish_within_the_grace(local_db):
    queue = ShipmentQueue(local_db)
    ids = fill(queue, 5)
    worker = start_worker("--concurrency", "3", "--work-seconds", "1", "--grace", "30", "--visibility", "3")
    try:
        assert wait_for(lambda: states(queue, ids).count(ShipmentState.PROCESSING) == 3)
        worker.send_signal(signal.SIGTERM)
        out, err = worker.communicate(timeout=60)
    finally:
        worker.kill()
    assert worker.returncode == 0, err
    assert "0 failed, 0 given back" in out
    done = states(queue, ids)
    # The three in hand finished (a thread may have finished one more just before the signal).
    assert done.count(ShipmentState.COMPLETED) >= 3 and ShipmentState.PROCESSING not in done
    assert done.count(ShipmentState.COMPLETED) + done.count(ShipmentState.QUEUED) == 5


def test_max_is_shared_by_the_threads(local_db):
    queue = ShipmentQueue(local_db)
    ids = fill(queue, 10)
    worker = start_worker("--concurrency", "3", "--work-seconds", "0.1", "--max", "4")
    out, err = worker.communicate(timeout=120)
    assert worker.returncode == 0, err
    assert "4 completed" in out
    assert states(queue, ids).count(ShipmentState.COMPLETED) == 4
