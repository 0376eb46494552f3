"""API_RATE_LIMIT: each API token may make so many requests a window, counted in DynamoDB
so that every worker and host shares the count; over it, 429 with Retry-After and the
API's JSON error shape."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from queues_app import admission
from queues_app.admission import TokenLimiter
from queues_app.ddb.client import Dynamo
from queues_app.ddb.errors import RateLimited
from queues_app.models import ApiToken
from tests.helpers.api import Api, assert_problem
from tests.helpers.settings import read_setting


def test_a_token_over_its_limit_gets_429_with_retry_after(moto_db, settings, supervisor, monkeypatch):
    settings.SWITCHBOARD_API_RATE_LIMIT = (3, 60)
    # 12:00:42: the minute's window has 18 seconds left.
    monkeypatch.setattr(admission, "now", lambda: datetime(2026, 11, 25, 12, 0, 42, tzinfo=UTC))
    one = Api(ApiToken.issue(supervisor, "phone system")[1])
    other = Api(ApiToken.issue(supervisor, "reports")[1])

    assert [one.get("/api/queues").status_code for _ in range(3)] == [200, 200, 200]
    refused = one.get("/api/queues")

    problem = assert_problem(refused, 429, "Rate limit exceeded")
    assert "3 requests of the last 60 s" in problem["message"]
    assert refused["Retry-After"] == "18"
    assert one.post("/api/calls", {"preferences": {"language": "French"}}).status_code == 429  # changes too
    assert other.get("/api/queues").status_code == 200  # per token, not per user


def test_requests_without_a_valid_token_are_not_counted(moto_db, settings, supervisor):
    settings.SWITCHBOARD_API_RATE_LIMIT = (1, 60)
    assert Api("not-a-token").get("/api/queues").status_code == 401
    assert Api(ApiToken.issue(supervisor, "phone system")[1]).get("/api/queues").status_code == 200


def test_the_next_window_admits_again(moto_db, clock):
    clock.moment = datetime(2026, 11, 25, 12, 0, 42, tzinfo=UTC)
    limiter = TokenLimiter((2, 60), db=moto_db, clock=clock)
    limiter.admit(7)
    limiter.admit(7)
    with pytest.raises(RateLimited) as refused:
        limiter.admit(7)
    assert refused.value.retry_after == 18  # the window ends at 12:01:00

    clock.advance(17)  # 12:00:59: the same window, still full
    with pytest.raises(RateLimited) as again:
        limiter.admit(7)
    assert again.value.retry_after == 1
    clock.advance(1)  # 12:01:00: a new window
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


def test_the_setting_reads_requests_per_second_minute_or_hour(tmp_path):
    limit = "settings.SWITCHBOARD_API_RATE_LIMIT"
    assert read_setting(tmp_path, limit).stdout.strip() == "(100, 1)"  # the default
    assert read_setting(tmp_path, limit, API_RATE_LIMIT="5/second").stdout.strip() == "(5, 1)"
    assert read_setting(tmp_path, limit, API_RATE_LIMIT="").stdout.strip() == "None"
    refused = read_setting(tmp_path, limit, API_RATE_LIMIT="lots")
    assert refused.returncode != 0
    assert "API_RATE_LIMIT must be requests per second, minute or hour" in refused.stderr


def test_heartbeats_are_not_counted_against_the_limit(moto_db, settings, supervisor):
    from queues_app.agents.roster import Agents
    from queues_app.ddb import meter

    settings.SWITCHBOARD_API_RATE_LIMIT = (2, 60)
    agent = Agents().create("Ana", {"language": ["French"], "gender": ["F"]})
    phones = Api(ApiToken.issue(supervisor, "phone system")[1])
    with meter.measure() as seen:
        beats = [phones.post(f"/api/agents/{agent.agent_id}/heartbeat", {}).status_code for _ in range(5)]
    assert beats == [200] * 5 and seen.calls == 5  # the heartbeat's write alone, no counter's
    assert [phones.get("/api/queues").status_code for _ in range(3)] == [200, 200, 429]
    assert Api("not-a-token").post(f"/api/agents/{agent.agent_id}/heartbeat", {}).status_code == 401


def test_a_busy_token_costs_a_write_per_block_of_its_quota_and_no_more_than_its_quota(local_db, clock):
    """A quota of 1,000 an hour is taken 10 at a time: 25 requests of one worker cost 3
    writes; two workers, each taking blocks, admit at most the quota between them, and
    when the blocks no longer fit, the last requests of the quota one at a time."""
    from queues_app.ddb import meter

    # Early in this hour (DynamoDB Local deletes a window's item once its TTL, an hour after
    # the window, has passed: the window must be a recent one).
    clock.moment = clock.moment.replace(minute=0, second=1, microsecond=0)
    one, other = (TokenLimiter((1000, 3600), db=Dynamo.from_settings(), clock=clock) for _ in range(2))
    with meter.measure() as seen:
        for _ in range(25):
            one.admit(9)
    assert seen.calls == 3
    admitted = 25
    for turn in range(1100):
        try:
            (one if turn % 2 else other).admit(9)
        except RateLimited:
            continue
        admitted += 1
    # At most the quota; at most a block short per worker (what the other one holds unspent).
    assert 1000 - 2 * 9 <= admitted <= 1000
