"""What the browser tests share beyond tests/conftest.py."""

import os
import signal

import pytest

from queues_app.ddb import schema
from queues_app.ddb.client import default, reset_default
from queues_app.ddb.local import DynamoDBLocal


@pytest.fixture
def stoppable_db(settings):
    """Tables on a DynamoDB Local of this test's own, which the test may freeze (SIGSTOP:
    its requests hang) and thaw (SIGCONT)."""
    server = DynamoDBLocal().start()
    settings.DYNAMODB_ENDPOINT_URL = server.endpoint
    settings.DYNAMODB_TABLE_PREFIX = "stoppable-"
    reset_default()
    schema.create_tables(default())
    yield server
    assert server.process is not None
    os.kill(server.process.pid, signal.SIGCONT)
    reset_default()
    server.stop()
