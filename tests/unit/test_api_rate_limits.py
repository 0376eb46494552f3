"""API_RATE_LIMIT: each API token may make so many requests a window, counted in DynamoDB
so that every worker and host shares the count; over it, 429 with Retry-After and the
API's JSON error shape."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from queues_app.admission import TokenLimiter
from queues_app.ddb.client import Dynamo
from queues_app.ddb.errors import RateLimited
from queues_app.models import ApiToken
from tests.helpers.api import Api, assert_problem


def test_a_token_over_its_limit_gets_429_with_retry_after(moto_db, settings, supervisor):
    settings.SWITCHBOARD_API_RATE_LIMIT = (3, 60)
    one = Api(ApiToken.issue(supervisor, "phone system")[1])
    other = Api(ApiToken.issue(supervisor, "reports")[1])

    assert [one.get("/api/queues").status_code for _ in range(3)] == [200, 200, 200]
    refused = one.get("/api/queues")

    problem = assert_problem(refused, 429, "Rate limit exceeded")
    assert "3 requests of the last 60 s" in problem["message"]
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert one.post("/api/calls", {"preferences": {"language": "French"}}).status_code == 429  # changes too
    assert other.get("/api/queues").status_code == 200  # per token, not per user


def test_requests_without_a_valid_token_are_not_counted(moto_db, settings, supervisor):
    settings.SWITCHBOARD_API_RATE_LIMIT = (1, 60)
    assert Api("not-a-token").get("/api/queues").status_code == 401
    assert Api(ApiToken.issue(supervisor, "phone system")[1]).get("/api/queues").status_code == 200


def test_the_next_window_admits_again(moto_db, clock):
    limiter = TokenLimiter((2, 60), db=moto_db, clock=clock)
    limiter.admit(7)
    limiter.admit(7)
    with pytest.raises(RateLimited) as refused:
        limiter.admit(7)
    assert 1 <= refused.value.retry_after <= 60

    clock.advance(refused.value.retry_after)
    limiter.admit(7)


def test_no_limit_when_it_is_empty(moto_db):
    limiter = TokenLimiter((), db=moto_db)
    for _ in range(50):
        limiter.admit(7)


def test_workers_with_their_own_clients_share_one_quota(local_db, clock):
    """Two workers (each its own DynamoDB client), four threads each, 40 requests in one
    window against a quota of 25: exactly 25 are admitted."""
    admitted: list[int] = []
    lock = threading.Lock()
    workers = [TokenLimiter((25, 3600), db=Dynamo.from_settings(), clock=clock) for _ in range(2)]
    start = threading.Barrier(8)

    def requests(limiter: TokenLimiter) -> None:
        start.wait()
        for _ in range(5):
            try:
                limiter.admit(42)
            except RateLimited:
                continue
            with lock:
                admitted.append(1)

    threads = [threading.Thread(target=requests, args=(workers[n % 2],)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(admitted) == 25


def rate_limit_setting(tmp_path, **variables) -> subprocess.CompletedProcess:
    """The project's settings loaded with production values (and `variables`), as a
    process starting with them would; the limit read, or why it refused to start."""
    env = {name: value for name, value in os.environ.items() if name != "API_RATE_LIMIT"}
    env.update(
        SWITCHBOARD_ENV_FILE="",
        DJANGO_SETTINGS_MODULE="callcenter.settings",
        DEBUG="false",
        SECRET_KEY="p" + "x7$k2!pQ9@vL4#mZ8^rT1&wY6*hB3(nC5)jF0_dG-sA+eU=oI" * 2,
        ALLOWED_HOSTS="switchboard.example.com",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        **variables,
    )
    code = "from django.conf import settings; print(settings.SWITCHBOARD_API_RATE_LIMIT)"
    root = Path(__file__).resolve().parents[2]
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_setting_reads_requests_per_second_minute_or_hour(tmp_path):
    assert rate_limit_setting(tmp_path).stdout.strip() == "(600, 60)"  # the default
    assert rate_limit_setting(tmp_path, API_RATE_LIMIT="5/second").stdout.strip() == "(5, 1)"
    assert rate_limit_setting(tmp_path, API_RATE_LIMIT="").stdout.strip() == "None"
    refused = rate_limit_setting(tmp_path, API_RATE_LIMIT="lots")
    assert refused.returncode != 0
    assert "API_RATE_LIMIT must be requests per second, minute or hour" in refused.stderr
