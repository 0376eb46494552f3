"""Several hosts, as docs/deploy.md describes them: Django's users, sessions and API tokens
in one PostgreSQL (DATABASE_URL), the overview's panel cache in one Redis (CACHE_URL),
both started here from Debian's packages (tests/helpers/postgres_redis.py; `make test`
installs them when missing, and these tests fail when they are).

- The tests of logins, sessions, API tokens, rate limits and the panel cache run again
  unchanged, in a pytest of their own whose settings name that PostgreSQL and Redis.
- Two `manage.py serve` on different ports share them, the DynamoDB tables and the
  secret key (the second `--web-only`, as a host whose background processes another
  runs): a session made on one is valid on the other, a panel read on one is served
  from the cache on the other, a token revoked on one is refused by the other.
"""

from __future__ import annotations

import os
import re
import secrets
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from queues_app.centre.call_center import CallCenter
from queues_app.ddb import schema
from queues_app.ddb.client import Dynamo
from queues_app.ddb.local import free_port
from tests.helpers.commands import ROOT, child_env, manage_env, start_manage
from tests.helpers.pages import figure
from tests.helpers.postgres_redis import LocalPostgres, LocalRedis, ServerMissing

pytestmark = pytest.mark.integration


# The tests that touch Django's database or its cache in the ways several hosts share:
# logins and their throttle (django-axes counts failures in the database), the session's
# length, API tokens and their revocation, the per-token rate limit, the panel cache.
REUSED = [
    "tests/unit/test_security_login.py",
    "tests/unit/test_api_tokens.py",
    "tests/unit/test_api_rate_limits.py",
    "tests/unit/test_overview_freshness.py",
    "tests/unit/test_api.py::test_it_refuses_an_unknown_token",
    "tests/unit/test_api.py::test_it_rejects_a_revoked_token",
    "tests/unit/test_api.py::test_it_rejects_the_token_of_an_inactive_user",
    "tests/unit/test_api.py::test_a_session_login_is_not_enough_for_the_api",
    "tests/unit/test_api.py::test_the_admin_lists_tokens_without_their_hash_and_revokes_them",
    "tests/unit/test_pages.py::test_pages_need_login",
    "tests/unit/test_pages.py::test_an_htmx_request_after_the_session_ended_is_sent_to_the_login_page",
    "tests/unit/test_metrics.py::test_open_tabs_share_one_read_of_a_panel_until_a_change",
    "tests/unit/test_metrics.py::test_a_supervisors_own_change_shows_at_once_for_them_then_for_everyone",
    "tests/unit/test_metrics.py::test_changes_from_the_phone_system_or_a_worker_show_when_the_cache_expires",
]
# The limit is counted in DynamoDB, which every host shares already: this one runs on
# DynamoDB Local, and the other reads the setting in fresh processes.
LEFT_OUT = [
    "tests/unit/test_api_rate_limits.py::test_workers_with_their_own_clients_share_one_quota",
    "tests/unit/test_api_rate_limits.py::test_the_setting_reads_requests_per_second_minute_or_hour",
]

USERNAME, PASSWORD = "olga-ops", "several-hosts-" + secrets.token_urlsafe(12)
HTMX = {"HX-Request": "true"}


@pytest.fixture(scope="module")
def stores():
    """A PostgreSQL and a Redis of this module's own."""
    missing = ""
    try:
        postgres, redis = LocalPostgres(), LocalRedis()
    except ServerMissing as exc:
        missing = str(exc)
    if missing:  # under `make test` they are installed: fail, never skip
        pytest.fail(missing, pytrace=False)
    try:
        postgres.start()
        redis.start()
        yield postgres, redis
    finally:
        postgres.stop()
        redis.stop()


def test_the_login_session_token_rate_limit_and_panel_cache_tests_pass_on_postgresql_and_redis(stores):
    postgres, redis = stores
    env = child_env(DATABASE_URL=postgres.url("switchboard"), CACHE_URL=redis.url(1))
    # --reuse-db keeps the test database, to show where the tests ran.
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--reuse-db", *REUSED]
    command += [f"--deselect={test}" for test in LEFT_OUT]
    started = time.monotonic()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    print(f"{len(REUSED)} selections on PostgreSQL and Redis: {time.monotonic() - started:.1f} s")
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-4000:]
    # Every one ran and passed: none skipped, none left out but those named.
    assert re.fullmatch(rf"\d+ passed, {len(LEFT_OUT)} deselected in [\d.]+s( \(.*\))?", summary.strip("= ")), summary
    assert "test_switchboard" in postgres.databases()
    commands = redis.client(1).info("commandstats")
    assert commands["cmdstat_set"]["calls"] > 0 and commands["cmdstat_get"]["calls"] > 0, commands


# --- two serve instances --------------------------------------------------------------


class Host:
    def __init__(self, name: str, port: int, process: subprocess.Popen, log: Path):
        self.name, self.base, self.process, self.log = name, f"http://127.0.0.1:{port}", process, log

    def client(self, session: str | None = None) -> httpx.Client:
        client = httpx.Client(base_url=self.base, timeout=10)
        if session:
            client.cookies.set("sessionid", session, domain="127.0.0.1")
        return client


def wait_for_line(host: Host, line: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while line not in host.log.read_text():
        if host.process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"serve did not say {line!r}:\n{host.log.read_text()}")
        time.sleep(0.1)


def wait_until_it_answers(host: Host, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if host.process.poll() is not None:
            raise AssertionError(f"serve exited with code {host.process.returncode}:\n{host.log.read_text()}")
        try:
            if httpx.get(f"{host.base}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"serve did not answer within {timeout:.0f} s:\n{host.log.read_text()}")


def manage(env: dict[str, str], *args: str) -> subprocess.Popen:
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    return subprocess.Popen([sys.executable, "manage.py", *args], cwd=ROOT, env=env, **pipes)


@pytest.fixture(scope="module")
def hosts(stores, dynamodb_local, tmp_path_factory):
    """Host A (`serve`: gunicorn and the background processes) and host B (`serve
    --web-only`), on PostgreSQL, Redis, one set of DynamoDB tables and one secret key;
    a superuser with a password, and an API token made with the command."""
    postgres, redis = stores
    folder = tmp_path_factory.mktemp("hosts")
    prefix = f"hosts{uuid.uuid4().hex[:6]}-"
    shared = manage_env(
        DATABASE_URL=postgres.create_database("hosts"),
        CACHE_URL=redis.url(2),
        DYNAMODB_ENDPOINT_URL=dynamodb_local.endpoint,
        DYNAMODB_TABLE_PREFIX=prefix,
        SERVE_SECRET_KEY=secrets.token_urlsafe(50),
        WEB_CONCURRENCY="1",
        # Long enough that nothing but the other host can have filled the cache.
        SWITCHBOARD_PANEL_CACHE_SECONDS="120",
    )
    started: list[Host] = []
    logs = []

    def serve(name: str, *extra: str) -> Host:
        port = free_port()
        log_path = folder / f"serve-{name}.log"
        logs.append(log := open(log_path, "w"))
        env = {**shared, "STATIC_ROOT": str(folder / f"static-{name}")}
        process = start_manage(["serve", "--port", str(port), *extra], env, log)
        started.append(host := Host(name, port, process, log_path))
        return host

    try:
        begun = time.monotonic()
        a = serve("a")
        # Once A has migrated the database, B starts (its migrate finds nothing to do, and
        # creating the tables is idempotent) and the superuser and the token are made.
        wait_for_line(a, "$ manage.py dynamo_tables create")
        b = serve("b", "--web-only")
        user = manage(
            {**shared, "DJANGO_SUPERUSER_PASSWORD": PASSWORD},
            *("createsuperuser", "--noinput", "--username", USERNAME, "--email", "olga@example.com"),
        )
        assert user.wait(60) == 0, user.communicate()
        token = manage(shared, "create_api_token", USERNAME, "--name", "phone system")
        out, err = token.communicate(timeout=60)
        assert token.returncode == 0, err
        wait_until_it_answers(a)
        wait_until_it_answers(b)
        print(f"hosts A and B answered after {time.monotonic() - begun:.1f} s")
        db = Dynamo(prefix=prefix, endpoint_url=dynamodb_local.endpoint, region="us-east-1")
        yield a, b, out.strip(), db, redis.client(2)
    finally:
        for host in started:
            if host.process.poll() is None:
                os.killpg(host.process.pid, signal.SIGTERM)
        for host in started:
            try:
                host.process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(host.process.pid, signal.SIGKILL)
                host.process.wait()
        for log in logs:
            log.close()
        schema.delete_tables(Dynamo(prefix=prefix, endpoint_url=dynamodb_local.endpoint, region="us-east-1"))


@contextmanager
def log_in(host: Host) -> Iterator[httpx.Client]:
    """A client logged in through the host's login form."""
    with host.client() as client:
        form = client.get("/login/")
        assert form.status_code == 200
        answer = client.post(
            "/login/", data={"username": USERNAME, "password": PASSWORD, "csrfmiddlewaretoken": csrf_of(form.text)}
        )
        assert answer.status_code == 302 and answer.headers["Location"] == "/", answer.text[:2000]
        yield client


def csrf_of(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def test_two_serve_instances_share_sessions_the_panel_cache_and_revoked_tokens(hosts):
    """One test, not three: xdist would start the two hosts once per worker."""
    a, b, token, db, redis = hosts
    a_session_made_on_one_is_valid_on_the_other(a, b)
    a_panel_read_on_one_is_served_from_the_cache_on_the_other(a, b, db, redis)
    a_token_revoked_on_one_is_refused_by_the_other(a, b, token)


def a_session_made_on_one_is_valid_on_the_other(a: Host, b: Host) -> None:
    with log_in(a) as on_a, b.client() as stranger:
        assert stranger.get("/").status_code == 302  # B sends a stranger to log in
        with b.client(on_a.cookies["sessionid"]) as on_b:
            page = on_b.get("/")
            assert page.status_code == 200, page.text[:2000]
            assert USERNAME in page.text
            # Logged out on B: the session is gone on A too.
            csrf = on_b.cookies.get("csrftoken") or on_b.get("/").cookies["csrftoken"]
            assert on_b.post("/logout/", headers={"X-CSRFToken": csrf}).status_code == 302
        assert on_a.get("/").status_code == 302


def a_panel_read_on_one_is_served_from_the_cache_on_the_other(a: Host, b: Host, db: Dynamo, redis) -> None:
    with log_in(a) as on_a, b.client(on_a.cookies["sessionid"]) as on_b:
        read_on_a = on_a.get("/", params={"panel": "calls"}, headers=HTMX)
        assert read_on_a.status_code == 200
        key = f":1:panel:{db.prefix}:calls"  # cached_panel's key as Django's cache writes it (version 1)
        assert redis.exists(key)
        assert figure(read_on_a.text, "agents-offline") == "0"
        CallCenter(db).agents.create("Ada", {"language": ["French"], "gender": ["F"]})

        served_on_b = on_b.get("/", params={"panel": "calls"}, headers=HTMX)
        assert figure(served_on_b.text, "agents-offline") == "0"  # A's figures, not read again
        assert updated(served_on_b.text) == updated(read_on_a.text)

        redis.delete(key)
        read_on_b = on_b.get("/", params={"panel": "calls"}, headers=HTMX)
        assert figure(read_on_b.text, "agents-offline") == "1"
        assert redis.exists(key)


def updated(html: str) -> str:
    start = html.index("<span data-updated>")
    return html[start : html.index("</span>", start)]


def a_token_revoked_on_one_is_refused_by_the_other(a: Host, b: Host, token: str) -> None:
    bearer = {"Authorization": f"Bearer {token}"}
    with b.client() as api_b, a.client() as api_a:
        assert api_b.get("/api/queues", headers=bearer).status_code == 200
        assert api_a.get("/api/queues", headers=bearer).status_code == 200

        with log_in(a) as admin:
            listing = admin.get("/admin/queues_app/apitoken/")
            pk = re.search(r'name="_selected_action" value="(\d+)"', listing.text).group(1)
            revoked = admin.post(
                "/admin/queues_app/apitoken/",
                data={"action": "revoke", "_selected_action": pk, "csrfmiddlewaretoken": csrf_of(listing.text)},
            )
            assert revoked.status_code == 302, revoked.text[:2000]

        refused = api_b.get("/api/queues", headers=bearer)
        assert refused.status_code == 401
        assert refused.headers["WWW-Authenticate"].startswith("Bearer")
        assert api_a.get("/api/queues", headers=bearer).status_code == 401
