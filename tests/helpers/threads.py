"""Helpers for tests that run product code in threads (on DynamoDB Local only: moto is
not thread-safe)."""

import threading
import time


def in_thread(target, *args, **kwargs):
    """Start `target` in a daemon thread; returns the thread and the list its exception
    lands in, so that the test can surface it."""
    failures = []

    def run():
        try:
            target(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - surfaced by the test
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, failures


def wait_for(condition, timeout, step=0.02):
    """True as soon as `condition()` is; else its value once `timeout` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()
