"""Fixtures for the three kinds of tests.

- unit tests run on moto (`moto_db`): fast, single-threaded;
- integration tests run on a DynamoDB Local that this session starts (free port,
  in memory) and stops (`local_db`); every concurrency test belongs here because
  moto is not thread-safe for transactions;
- browser tests drive Debian's Chromium through Playwright against `live_server`;
- `backend_db` runs a test on both backends: moto with the unit tests, DynamoDB Local
  with the integration tests.

Tests under tests/integration and tests/browser get their marker from the folder.
Fixtures more than one module uses live here or in a folder's conftest.py
(tests/unit/conftest.py); plain helpers in tests/helpers/. No test module imports
another.
"""

import copy
import os
import threading
import uuid
from pathlib import Path

import boto3.session
import botocore.auth
import pytest

# Plain asserts in the helpers report their values as the tests' own do.
pytest.register_assert_rewrite("tests.helpers")

# live_server flushes SQLite from Playwright's event loop thread.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# Every DynamoDB Local the tests start (in this process, and in the commands and
# benchmarks they run) compiles with the JVM's quick compiler only and collects garbage in
# one thread: its optimizing compiler cost more CPU than it saved over the few thousand
# requests a test makes (about half of the JVM's CPU; as fast at 20,000 writes).
os.environ.setdefault("JAVA_TOOL_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")

from queues_app.ddb import schema  # noqa: E402
from queues_app.ddb.client import default, reset_default  # noqa: E402
from queues_app.ddb.local import DynamoDBLocal  # noqa: E402
from tests.helpers.clock import ManualClock  # noqa: E402
from tests.helpers.users import make_user  # noqa: E402

TESTS_DIR = Path(__file__).parent


def pytest_collection_modifyitems(config, items):
    for item in items:
        path = Path(str(item.fspath))
        if TESTS_DIR / "integration" in path.parents:
            item.add_marker(pytest.mark.integration)
        if TESTS_DIR / "browser" in path.parents:
            item.add_marker(pytest.mark.browser)
            item.add_marker(pytest.mark.integration)
    # Under --dist worksteal, a worker that runs out of tests takes the last ones another
    # has left. First the longest tests (LONGEST_FIRST), so that none starts when the
    # others are almost done (the served day did, alone for its last 45 s); then the
    # modules that set something up once for all their tests (a module-scoped fixture of
    # their own: servers, a built wheel, a tally), each in one block, which a worker would
    # otherwise set up again for the part it took; then the browser and integration tests
    # (seconds each); the unit tests last, which even out the workers' ends.
    items[:] = sorted(
        items,
        key=lambda item: (
            LONGEST_FIRST.get(item.nodeid.split("::")[0], len(LONGEST_FIRST)),
            not has_a_module_fixture_of_its_own(item),
            item.get_closest_marker("integration") is None,
        ),
    )


# The modules whose tests took longest (`make test` on 2 cores, 2026-11-30: 66, 43, 28, 43,
# 33 and 20 s), longest first.
LONGEST = ("served_day", "bench_load", "run_local", "day", "several_hosts", "counting_reconciles")
LONGEST_FIRST = {f"tests/integration/test_{name}.py": rank for rank, name in enumerate(LONGEST)}


def has_a_module_fixture_of_its_own(item) -> bool:
    module = item.nodeid.split("::")[0]
    definitions = getattr(item, "_fixtureinfo", None)
    return definitions is not None and any(
        fixture.scope == "module" and fixture.baseid == module
        for fixtures in definitions.name2fixturedefs.values()
        for fixture in fixtures
    )


@pytest.fixture(scope="session")
def django_db_modify_db_settings(tmp_path_factory):
    """A test database in a file, not in memory: the browser tests' live server answers
    each request in its own thread, and threads cannot share an in-memory SQLite
    connection (htmx panels poll several at once). Another database (DATABASE_URL:
    PostgreSQL, as tests/integration/test_several_hosts.py runs some tests) keeps Django's
    test database of its own."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        database.setdefault("TEST", {})["NAME"] = str(tmp_path_factory.mktemp("db") / "test.sqlite3")


@pytest.fixture(autouse=True)
def quiet_contention():
    """Every test starts as a process that has lost no races lately."""
    from queues_app.routing import matching
    from queues_app.shipments import consuming

    matching.reset_contention()
    consuming.reset_contention()


@pytest.fixture(autouse=True)
def fresh_counts():
    """Every test starts with nothing counted and not yet written in this process, and
    leaves nothing behind: the counters a test makes go to its own tables or nowhere."""
    from queues_app.figures.counters import recorder

    recorder.take()
    recorder.take_tallies()
    recorder.take_facts()
    yield
    recorder.take()
    recorder.take_tallies()
    recorder.take_facts()


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


class SharedSession:
    """One boto3 session for the clients that the tests' fixtures build in this process.

    `Dynamo` builds its client from a new `boto3.session.Session()`, which reads botocore's
    endpoint and service models from disk again (about 0.1 s); a client from a session that
    has read them already takes a few milliseconds. A session is not thread-safe: clients
    are made from it one at a time."""

    def __init__(self, session: boto3.session.Session):
        self._session = session
        self._lock = threading.Lock()

    def client(self, *args, **kwargs):
        with self._lock:
            return self._session.client(*args, **kwargs)

    def get_credentials(self):
        with self._lock:
            return self._session.get_credentials()

    def __getattr__(self, name):
        return getattr(self._session, name)


MAKE_SESSION = boto3.session.Session
# Made after moto is imported: a session takes botocore's handlers as they are when it is
# made, and moto adds its own (off unless a mock is on) when imported.
import moto.core.models  # noqa: E402, F401

from tests.helpers import fast_moto  # noqa: E402

fast_moto.install()

SHARED_SESSION = SharedSession(MAKE_SESSION())


def _transact_on_its_own_tables(transact):
    """moto copies every table of the account before a transaction, to put them back if
    it is cancelled; with a page's worth of items that copy is most of a transaction's
    time. Shown only the tables the transaction names, it copies (and puts back) those:
    the others are not touched, so nothing else changes."""

    def transact_write_items(backend, transact_items):
        named = {op.get("TableName") for item in transact_items for op in item.values() if isinstance(op, dict)}
        others = {name: table for name, table in backend.tables.items() if name not in named}
        backend.tables = {name: table for name, table in backend.tables.items() if name in named}
        try:
            return transact(backend, transact_items)
        finally:
            backend.tables = {**backend.tables, **others}

    return transact_write_items


from moto.dynamodb.models import DynamoDBBackend  # noqa: E402

DynamoDBBackend.transact_write_items = _transact_on_its_own_tables(DynamoDBBackend.transact_write_items)


def shared_or_new_session(*args, **kwargs):
    """`boto3.session.Session()` while the fixture is on: the shared session, unless asked
    for one with arguments of its own."""
    return MAKE_SESSION(*args, **kwargs) if args or kwargs else SHARED_SESSION


@pytest.fixture
def shared_boto_session(monkeypatch):
    """During the test, `boto3.session.Session()` (which `Dynamo` calls to build its client)
    is the process's shared session."""
    monkeypatch.setattr(boto3.session, "Session", shared_or_new_session)


def serialize_moto() -> None:
    """moto answers one request at a time in this process. Its backend is not thread-safe
    (a transaction deep-copies the tables and puts the copy back when cancelled), and a
    few unit tests run threads (the matcher's dispatcher beside its lease): DynamoDB itself
    applies each request whole, which one lock around moto's answer models. Concurrency is
    still tested on DynamoDB Local."""
    from moto.core.botocore_stubber import BotocoreStubber

    if getattr(BotocoreStubber.process_request, "serialized", False):
        return
    answer, lock = BotocoreStubber.process_request, threading.RLock()

    def one_at_a_time(self, request):
        with lock:
            return answer(self, request)

    one_at_a_time.serialized = True  # type: ignore[attr-defined]
    BotocoreStubber.process_request = one_at_a_time  # type: ignore[method-assign]


def _unsigned(self, request) -> None:
    """No signature: moto reads none (the account is its default, the region the URL's)."""


@pytest.fixture
def moto_empty(settings, aws_credentials, shared_boto_session, monkeypatch):
    """moto running, no tables yet; the default client is built inside the mock. Requests
    go unsigned: SigV4 was a tenth of each request's time, and moto checks no signature."""
    from moto import mock_aws

    serialize_moto()
    monkeypatch.setattr(botocore.auth.SigV4Auth, "add_auth", _unsigned)
    with mock_aws():
        settings.DYNAMODB_ENDPOINT_URL = None
        settings.DYNAMODB_TABLE_PREFIX = "test-"
        settings.AWS_REGION = "us-east-1"
        reset_default()
        yield default()
    reset_default()


# moto's tables as `schema.create_tables` left them, empty, the first time a test of this
# process asked for them (per prefix and region): {(prefix, region): {name: moto's Table}}.
MOTO_TABLES: dict[tuple[str, str], dict] = {}


@pytest.fixture
def moto_db(moto_empty):
    """moto with every table created: by `schema.create_tables` for the first test of the
    process, and for the next ones a copy of what it made (moto's own objects, as moto
    copies a table for a transaction), without its twenty-odd requests. `schema`'s own
    tests use `moto_empty`."""
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.dynamodb.models import dynamodb_backends

    tables = dynamodb_backends[DEFAULT_ACCOUNT_ID][moto_empty.region].tables
    made = MOTO_TABLES.get((moto_empty.prefix, moto_empty.region))
    if made is None:
        schema.create_tables(moto_empty)
        MOTO_TABLES[(moto_empty.prefix, moto_empty.region)] = copy.deepcopy(dict(tables))
    else:
        assert not tables, f"moto has tables already: {sorted(tables)}"
        tables.update(copy.deepcopy(made))
    return moto_empty


@pytest.fixture(scope="session")
def dynamodb_local():
    """One in-memory DynamoDB Local for the whole test session."""
    server = DynamoDBLocal().start()
    yield server
    server.stop()


@pytest.fixture
def local_db(settings, dynamodb_local, shared_boto_session):
    """Fresh tables (a unique prefix) on the session's DynamoDB Local."""
    settings.DYNAMODB_ENDPOINT_URL = dynamodb_local.endpoint
    settings.DYNAMODB_TABLE_PREFIX = f"t{uuid.uuid4().hex[:8]}-"
    reset_default()
    db = default()
    schema.create_tables(db)
    yield db
    schema.delete_tables(db)
    reset_default()


@pytest.fixture(params=["moto", pytest.param("dynamodb-local", marks=pytest.mark.integration)])
def backend_db(request):
    """The test runs twice: on moto with the unit tests, and on DynamoDB Local with the
    integration tests; for what moto does not do as DynamoDB does (its limits, its order
    of items with equal sort keys)."""
    return request.getfixturevalue("moto_db" if request.param == "moto" else "local_db")


# --- HTTP -------------------------------------------------------------------------


@pytest.fixture
def wsgi_app():
    """Django's WSGI application. Like Django's test client, it must not close the
    test's database connection at the end of each request."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield WSGIHandler()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def fuzz_client(supervisor):
    """A supervisor's client that answers a server error as a response (to count it),
    instead of raising it."""
    from django.test import Client

    client = Client(raise_request_exception=False)
    client.force_login(supervisor)
    return client


# --- time -------------------------------------------------------------------------


@pytest.fixture
def clock():
    return ManualClock()


# --- users ------------------------------------------------------------------------


@pytest.fixture
def supervisor(db, django_user_model):
    return make_user(django_user_model, "sam-supervisor", "supervisors")


@pytest.fixture
def viewer(db, django_user_model):
    return make_user(django_user_model, "vic-viewer", "viewers")


@pytest.fixture
def staff(db, django_user_model):
    return make_user(django_user_model, "stella-staff", "supervisors", is_staff=True, is_superuser=True)


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
