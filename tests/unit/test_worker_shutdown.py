"""SIGTERM, as the commands receive it (one thread each, on moto): the shipment worker
gives back the shipment in hand past the grace, the task processor releases its lease."""

import io
import logging
import os
import signal
import threading

import pytest
from django.core.management import call_command

from queues_app.management.commands import run_shipment_worker
from queues_app.shipments.queue import ShipmentQueue, ShipmentState
from queues_app.shipments.worker import ShipmentWorker, demo_handler
from queues_app.tasks.processor import TaskProcessor
from queues_app.tasks.processor_lease import processor_lease
from queues_app.tasks.queue import TaskQueue, TaskStatus


def sigterm_when(ready: threading.Event) -> threading.Thread:
    """SIGTERM once `ready` is set (the command has work in hand), however long it took to
    get there, rather than after a fixed time. Only the signal comes from another thread:
    moto stays with the main thread."""

    def send():
        ready.wait(60)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def in_hand(monkeypatch):
    """Set once the worker's demo handler has a shipment in hand; the handler then does its
    work (`--work-seconds`) only after SIGTERM has reached the worker, so the signal always
    lands in the middle of the work."""
    holding, stopped = threading.Event(), threading.Event()
    stop = ShipmentWorker.stop

    def stop_and_say(self):
        stop(self)
        stopped.set()

    def handler_after_the_signal(**options):
        work = demo_handler(**options)

        def handle(shipment, stop_event):
            holding.set()
            if not stopped.wait(60):
                raise AssertionError("SIGTERM never stopped the worker")
            work(shipment, stop_event)

        return handle

    monkeypatch.setattr(ShipmentWorker, "stop", stop_and_say)
    monkeypatch.setattr(run_shipment_worker, "demo_handler", handler_after_the_signal)
    return holding


def test_sigterm_makes_the_worker_give_back_the_shipment_in_hand(moto_db, caplog, in_hand):
    queue = ShipmentQueue(moto_db)
    queue.submit({}, shipment_id="held")
    before = signal.getsignal(signal.SIGTERM)
    out = io.StringIO()
    timer = sigterm_when(in_hand)
    with caplog.at_level(logging.INFO, logger="queues_app"):
        call_command(
            "run_shipment_worker",
            *("--fail-share", "0", "--work-seconds", "60", "--grace", "0.2", "--visibility", "1"),
            stdout=out,
        )
    timer.join()
    assert signal.getsignal(signal.SIGTERM) is before
    assert "0 completed, 0 failed, 1 given back" in out.getvalue()
    back = queue.get("held")
    assert back.state == ShipmentState.QUEUED and back.failure_reasons == []
    assert any(r.getMessage().startswith("shipment held given back after ") for r in caplog.records)


def test_sigterm_lets_the_worker_finish_within_the_grace(moto_db, in_hand):
    queue = ShipmentQueue(moto_db)
    queue.submit({}, shipment_id="quick")
    out = io.StringIO()
    timer = sigterm_when(in_hand)
    call_command(
        "run_shipment_worker",
        *("--fail-share", "0", "--work-seconds", "1", "--grace", "30", "--visibility", "1", "--max", "1"),
        stdout=out,
    )
    timer.join()
    assert "1 completed, 0 failed, 0 given back" in out.getvalue()
    assert queue.get("quick").state == ShipmentState.COMPLETED


def test_sigterm_makes_the_processor_release_its_lease(moto_db, caplog, monkeypatch):
    tasks = TaskQueue(moto_db)
    tasks.create(task_id="t1")
    out = io.StringIO()
    finished = threading.Event()  # t1 is done: the processor holds the lease, with nothing left
    finish = TaskProcessor._finish

    def finish_and_say(self, *args, **kwargs):
        finish(self, *args, **kwargs)
        finished.set()

    monkeypatch.setattr(TaskProcessor, "_finish", finish_and_say)
    timer = sigterm_when(finished)
    with caplog.at_level(logging.INFO, logger="queues_app"):
        call_command(
            "run_task_processor",
            *("--time-box", "60", "--poll", "0.05", "--rate", "100", "--fail-share", "0", "--holder", "stopping"),
            *("--lease", "30", "--no-streams"),
            stdout=out,
        )
    timer.join()
    assert "1 processed" in out.getvalue()
    assert tasks.get("t1").status == TaskStatus.SUCCESS
    successor = processor_lease(moto_db, holder="someone-else")
    assert successor.current() is None and successor.acquire()  # free at once, not when it runs out
    assert "lease task-processor released by stopping" in [r.getMessage() for r in caplog.records]
