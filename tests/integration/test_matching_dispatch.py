"""The matching dispatcher on DynamoDB Local (its holder matches from several threads,
which moto cannot take): new callers of several processes matched by the one holder of
the lease, nobody twice; with no holder, or one that does not answer, a process matches
by itself."""

from __future__ import annotations

import socket
import threading

import pytest

from queues_app.agents import dispatch
from queues_app.agents.call_center import CallCenter
from queues_app.agents.records import AgentStatus, CallStatus
from queues_app.agents.roster import Agents
from queues_app.ddb.client import Dynamo
from queues_app.monitoring import invariants
from tests.helpers.threads import wait_for

SPANISH_F = {"language": "Spanish", "gender": "F"}


@pytest.fixture(autouse=True)
def no_dispatchers_left(local_db):
    yield  # stopped before the tables are dropped
    dispatch.stop_dispatchers()


def process_like(db: Dynamo) -> CallCenter:
    """A router on a client of its own, as another process would have (claims and the
    dispatcher are per client)."""
    return CallCenter(Dynamo(prefix=db.prefix, endpoint_url=db.endpoint_url, region=db.region))


def queued_agents(router: CallCenter, count: int) -> list[str]:
    agents = Agents(router.db, router.catalog)
    ids = []
    for i in range(count):
        agent = agents.create(f"Agent {i:02d}", {"language": ["Spanish"], "gender": ["F"]})
        router.make_available(agent.agent_id)
        ids.append(agent.agent_id)
    return ids


def test_callers_of_several_processes_are_matched_by_the_holder_of_the_lease(local_db, monkeypatch):
    # A lease of a minute (3 s in production): a holder whose renewals a slow or paused
    # machine holds back for a few seconds keeps it (the lease passing on is tested below).
    holder = process_like(local_db)
    holder.matcher.use_dispatcher(bound=30, lease_seconds=60)
    assert wait_for(lambda: holder.matcher.dispatcher.lease.held, timeout=10)
    others = [process_like(local_db) for _ in range(2)]
    matched_here: list[str] = []
    for router in others:
        router.matcher.use_dispatcher(bound=30, lease_seconds=60)
        monkeypatch.setattr(router.matcher, "match_here", lambda call, **kw: matched_here.append(call.call_id))
    agent_ids = queued_agents(holder, 12)
    given: list[str] = []
    start = threading.Barrier(6)

    def caller(router: CallCenter) -> None:
        start.wait()
        for _ in range(2):
            call, _created = router.create_call(SPANISH_F)
            assert call.status == CallStatus.ASSIGNED
            given.append(call.agent_id)

    threads = [threading.Thread(target=caller, args=([holder, *others][i % 3],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(given) == sorted(agent_ids)  # every agent once
    assert matched_here == []  # the other processes' callers went to the holder
    assert not any(router.matcher.dispatcher.lease.held for router in others)
    assert invariants.find_violations(local_db, holder.catalog, passes=1) == []


def test_with_nobody_holding_the_lease_a_process_matches_by_itself(local_db):
    router = CallCenter(local_db)
    (agent_id,) = queued_agents(router, 1)
    other = dispatch.DispatchLease(local_db, holder="elsewhere", address="", duration=60)
    assert other.hold()  # held, but with no address to send callers to
    router.matcher.use_dispatcher()

    call, _created = router.create_call(SPANISH_F)

    assert call.status == CallStatus.ASSIGNED and call.agent_id == agent_id


def test_a_holder_that_does_not_answer_in_time_leaves_the_caller_to_this_process(local_db):
    router = CallCenter(local_db)
    (agent_id,) = queued_agents(router, 1)
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    host, port = silent.getsockname()[:2]
    try:
        other = dispatch.DispatchLease(local_db, holder="elsewhere", address=f"{host}:{port}", duration=60)
        assert other.hold()
        router.matcher.use_dispatcher(bound=0.3)

        call, _created = router.create_call(SPANISH_F)
    finally:
        silent.close()

    assert call.status == CallStatus.ASSIGNED and call.agent_id == agent_id
    assert Agents(local_db, router.catalog).get(agent_id).status == AgentStatus.ATTENDING
    assert invariants.find_violations(local_db, router.catalog, passes=1) == []


def test_the_holder_answers_only_signed_requests(local_db):
    router = CallCenter(local_db)
    (agent_id,) = queued_agents(router, 1)
    dispatcher = router.matcher.use_dispatcher()
    assert wait_for(lambda: dispatcher.lease.held, timeout=10)

    assert dispatcher.answer(b'0123 {"call_id": "x"}') == {"error": "bad signature"}
    unreadable = b'{"call_id": "x"}'
    assert dispatcher.answer(dispatch._sign(dispatcher.secret, unreadable).encode() + b" " + unreadable) == {
        "error": "not a call"
    }
    assert Agents(local_db, router.catalog).get(agent_id).status == AgentStatus.QUEUED


def test_only_one_process_holds_the_lease_until_it_runs_out(local_db):
    now = [1000.0]
    first = dispatch.DispatchLease(local_db, holder="one", address="h:1", duration=3, now=lambda: now[0])
    second = dispatch.DispatchLease(local_db, holder="two", address="h:2", duration=3, now=lambda: now[0])
    assert first.hold()
    assert not second.hold()
    now[0] += 1.5
    assert first.hold()  # renewed: runs out at 1004.5
    now[0] += 2.0
    assert not second.hold()
    assert second.current() == ("h:1", 1004.5)
    now[0] += 1.5  # run out
    assert second.hold()
    assert first.current() == ("h:2", 1008.0)
