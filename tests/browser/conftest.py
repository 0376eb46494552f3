"""What the browser tests share beyond tests/conftest.py."""

import os
import signal

import pytest


@pytest.fixture
def stoppable_db(local_db, dynamodb_local):
    """Fresh tables on the session's DynamoDB Local, which the test may freeze (SIGSTOP: its
    requests hang) and thaw (SIGCONT). Nothing else asks it anything meanwhile (each xdist
    worker has its own, and runs one test at a time); it is thawed after the test, whatever
    happened."""
    yield dynamodb_local
    assert dynamodb_local.process is not None
    os.kill(dynamodb_local.process.pid, signal.SIGCONT)


@pytest.fixture(autouse=True)
def no_live_overview_left_open():
    """A page the test leaves open keeps its overview's stream, and the live server's hub
    would go on reading tables that are gone: ended after each test, as a worker stopping
    ends its streams."""
    yield
    from queues_app.views import live

    live.close_all(wait_seconds=5)


@pytest.fixture
def quick_pushes(monkeypatch):
    """The live server pushes the overview's panels four times as often (every half second,
    each panel at a quarter of its period): a test that waits for the next redraws waits for
    fewer of the server's seconds. What is pushed, and when the page polls, is unchanged."""
    from queues_app.views import live

    monkeypatch.setattr(live, "TICK_SECONDS", live.TICK_SECONDS / 4)
    monkeypatch.setattr(live, "PERIODS", {name: period / 4 for name, period in live.PERIODS.items()})
