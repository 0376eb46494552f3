"""Fixtures for the three kinds of tests.

- unit tests run on moto (`moto_db`): fast, single-threaded;
- integration tests run on a DynamoDB Local that this session starts (free port,
  in memory) and stops (`local_db`); every concurrency test belongs here because
  moto is not thread-safe for transactions;
- browser tests drive Debian's Chromium through Playwright against `live_server`.

Tests under tests/integration and tests/browser get their marker from the folder.
"""

import os
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

# live_server flushes SQLite from Playwright's event loop thread.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from queues_app.ddb import schema  # noqa: E402
from queues_app.ddb.client import default, reset_default  # noqa: E402
from queues_app.ddb.local import DynamoDBLocal  # noqa: E402

TESTS_DIR = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        if TESTS_DIR / "integration" in path.parents:
            item.add_marker(pytest.mark.integration)
        if TESTS_DIR / "browser" in path.parents:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory):
    """A test database in a file, not in memory: the browser tests' live server answers
    each request in its own thread, and threads cannot share an in-memory SQLite
    connection (htmx panels poll several at once)."""
    from django.conf import settings

    settings.DATABASES["default"].setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("db") / "test.sqlite3")


@pytest.fixture(autouse=True)
def quiet_contention():
    """Every test starts as a process that has lost no races lately."""
    from queues_app.agents import matching
    from queues_app.shipments import consuming

    matching.reset_contention()
    consuming.reset_contention()


@pytest.fixture(autouse=True)
def fresh_panels(settings):
    """Tests read panels right after changing data behind the pages' back: no panel cache
    (the cache has its own test)."""
    settings.SWITCHBOARD_PANEL_CACHE_SECONDS = 0


@pytest.fixture
def aws_credentials(monkeypatch):
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SECURITY_TOKEN": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def moto_empty(settings, aws_credentials):
    """moto running, no tables yet; the default client is built inside the mock."""
    from moto import mock_aws

    with mock_aws():
        settings.DYNAMODB_ENDPOINT_URL = None
        settings.DYNAMODB_TABLE_PREFIX = "test-"
        settings.AWS_REGION = "us-east-1"
        reset_default()
        yield default()
    reset_default()


@pytest.fixture
def moto_db(moto_empty):
    """moto with every table created."""
    schema.create_tables(moto_empty)
    return moto_empty


@pytest.fixture(scope="session")
def dynamodb_local():
    """One in-memory DynamoDB Local for the whole test session."""
    server = DynamoDBLocal().start()
    yield server
    server.stop()


@pytest.fixture
def local_db(settings, dynamodb_local):
    """Fresh tables (a unique prefix) on the session's DynamoDB Local."""
    settings.DYNAMODB_ENDPOINT_URL = dynamodb_local.endpoint
    settings.DYNAMODB_TABLE_PREFIX = f"t{uuid.uuid4().hex[:8]}-"
    reset_default()
    db = default()
    schema.create_tables(db)
    yield db
    schema.delete_tables(db)
    reset_default()


# --- time -------------------------------------------------------------------------


class ManualClock:
    """A clock the test moves by hand; each reading is a microsecond later than the last,
    so that timestamps written one after the other still sort in order."""

    def __init__(self):
        from queues_app.ddb.clock import now

        self.moment = now()

    def __call__(self):
        self.moment += timedelta(microseconds=1)
        return self.moment

    def advance(self, seconds):
        self.moment += timedelta(seconds=seconds)


@pytest.fixture
def clock():
    return ManualClock()


# --- users ------------------------------------------------------------------------

PASSWORD = "correct-horse-battery"


def _user(django_user_model, username, group=None, **extra):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(username=username, password=PASSWORD, **extra)
    if group:
        user.groups.add(Group.objects.get_or_create(name=group)[0])
    return user


@pytest.fixture
def supervisor(db, django_user_model):
    return _user(django_user_model, "sam-supervisor", "supervisors")


@pytest.fixture
def viewer(db, django_user_model):
    return _user(django_user_model, "vic-viewer", "viewers")


@pytest.fixture
def staff(db, django_user_model):
    return _user(django_user_model, "stella-staff", "supervisors", is_staff=True, is_superuser=True)


@pytest.fixture
def supervisor_client(client, supervisor):
    client.force_login(supervisor)
    return client


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client


# --- browser ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": "/usr/bin/chromium",
        "args": [
            "--no-sandbox",
            "--headless",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }
