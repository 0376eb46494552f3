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
