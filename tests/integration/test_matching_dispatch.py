"""The matching dispatcher on DynamoDB Local (its holder matches from several threads,
which moto cannot take): new callers of several web workers matched by the one holder of
the lease, nobody twice; with no holder, or one that does not answer or has died, a
worker matches by itself, and the lease moves to a process standing by."""

from __future__ import annotations

import functools
import socket
import threading
import time

import pytest
from django.core import signing

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.client import Dynamo
from queues_app.monitoring import invariants
from queues_app.routing import dispatch
from tests.helpers.threads import wait_for

SPANISH_F = {"language": "Spanish", "gender": "F"}


@pytest.fixture(autouse=True)
def workers_match_by_themselves_afterwards(local_db):
    yield
    dispatch.stop_sending()


@pytest.fixture
def dispatchers(local_db):
    """Holders' sides started by a test, stopped before the tables are dropped."""
    started: list[dispatch.Dispatcher] = []
    yield started
    for dispatcher in started:
        dispatcher.stop()


def process_like(db: Dynamo) -> CallCenter:
    """A router on a client of its own, as another process would have (claims and the
    dispatcher's client are per client)."""
    return CallCenter(Dynamo(prefix=db.prefix, endpoint_url=db.endpoint_url, region=db.region))


def matcher_process(db: Dynamo, started: list, lease_seconds: float = 60.0) -> dispatch.Dispatcher:
    """What `run_matcher` runs, on a client of its own. A lease of a minute (3 s in
    production): a holder whose renewals a slow or paused machine holds back for a few
    seconds keeps it (the lease passing on is tested below)."""
    router = process_like(db)
    dispatcher = dispatch.Dispatcher(
        router.db, functools.partial(router.matcher.match_here, new_call=True), lease_seconds=lease_seconds
    )
    dispatcher.start()
    started.append(dispatcher)
    return dispatcher


def queued_agents(router: CallCenter, count: int) -> list[str]:
    agents = Agents(router.db, router.catalog)
    ids = []
    for i in range(count):
        agent = agents.create(f"Agent {i:02d}", {"language": ["Spanish"], "gender": ["F"]})
        router.make_available(agent.agent_id)
        ids.append(agent.agent_id)
    return ids


def die(dispatcher: dispatch.Dispatcher) -> None:
    """What kill -9 leaves: nothing listens any more, the lease is not given up."""
    dispatcher._stop.set()
    assert dispatcher._server is not None and dispatcher._thread is not None
    dispatcher._thread.join(timeout=10)
    dispatcher._server.shutdown()
    dispatcher._server.close_connections()
    dispatcher._server.server_close()


def test_callers_of_several_web_workers_are_matched_by_the_holder_of_the_lease(local_db, dispatchers, monkeypatch):
    holder = matcher_process(local_db, dispatchers)
    assert wait_for(lambda: holder.holding, timeout=10)
    # Six callers at once at one holder, on a machine loaded by the rest of the suite: its answers
    # took over the production bound (2 s) there, and a caller left to its worker is what the
    # bound is for (tested below with a holder that never answers), not what this test checks.
    dispatch.send_new_callers(bound=30.0)
    workers = [process_like(local_db) for _ in range(3)]
    matched_here: list[str] = []
    for router in workers:
        monkeypatch.setattr(router.matcher, "match_here", lambda call, **kw: matched_here.append(call.call_id))
    agent_ids = queued_agents(workers[0], 12)
    given: list[str] = []
    start = threading.Barrier(6)

    def caller(router: CallCenter) -> None:
        start.wait()
        for _ in range(2):
            call, _created = router.create_call(SPANISH_F)
            assert call.status == CallStatus.ASSIGNED
            given.append(call.agent_id)

    threads = [threading.Thread(target=caller, args=(workers[i % 3],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(given) == sorted(agent_ids)  # every agent once
    assert matched_here == []  # the workers' callers went to the holder
    assert holder.matched == 12
    assert invariants.find_violations(local_db, workers[0].catalog, passes=1) == []


def test_with_nobody_holding_the_lease_a_worker_matches_by_itself(local_db):
    router = CallCenter(local_db)
    (agent_id,) = queued_agents(router, 1)
    other = dispatch.matching_lease(local_db, holder="elsewhere", duration=60)
    assert other.acquire()  # held, but with no address to send callers to
    dispatch.send_new_callers()

    call, _created = router.create_call(SPANISH_F)

    assert call.status == CallStatus.ASSIGNED and call.agent_id == agent_id
    assert dispatch.client_for(local_db).here == 1


def test_a_holder_that_does_not_answer_in_time_leaves_the_caller_to_this_worker(local_db):
    router = CallCenter(local_db)
    (agent_id,) = queued_agents(router, 1)
    silent = socket.create_server(("127.0.0.1", 0))  # accepts, never answers
    host, port = silent.getsockname()[:2]
    try:
        other = dispatch.matching_lease(local_db, holder="elsewhere", address=f"{host}:{port}", duration=60)
        assert other.acquire()
        dispatch.send_new_callers()
        dispatch.client_for(local_db).bound = 0.3

        call, _created = router.create_call(SPANISH_F)
    finally:
        silent.close()

    assert call.status == CallStatus.ASSIGNED and call.agent_id == agent_id
    assert Agents(local_db, router.catalog).get(agent_id).status == AgentStatus.ATTENDING
    assert invariants.find_violations(local_db, router.catalog, passes=1) == []


def test_when_the_holder_dies_callers_are_matched_by_their_worker_and_the_lease_moves(local_db, dispatchers):
    first = matcher_process(local_db, dispatchers, lease_seconds=1.0)
    assert wait_for(lambda: first.holding, timeout=10)
    second = matcher_process(local_db, dispatchers, lease_seconds=1.0)
    worker = process_like(local_db)
    queued_agents(worker, 16)
    dispatch.send_new_callers()
    call, _created = worker.create_call(SPANISH_F)
    assert call.status == CallStatus.ASSIGNED and first.matched == 1

    die(first)
    call, _created = worker.create_call(SPANISH_F)  # nobody answers at the old address

    assert call.status == CallStatus.ASSIGNED
    assert dispatch.client_for(worker.db).here == 1
    assert wait_for(lambda: second.holding, timeout=15)  # once the dead holder's lease ran out

    def a_caller_goes_to_the_new_holder() -> bool:
        call, _created = worker.create_call(SPANISH_F)
        assert call.status == CallStatus.ASSIGNED  # directly until the worker reads the lease again
        return second.matched > 0

    assert wait_for(a_caller_goes_to_the_new_holder, timeout=10, step=0.5)
    assert invariants.find_violations(local_db, worker.catalog, passes=1) == []


class SignedLongAgo(signing.TimestampSigner):
    def timestamp(self) -> str:
        return signing.b62_encode(int(time.time()) - dispatch.MAX_AGE - 5)


def signed_long_ago(value: str) -> str:
    return SignedLongAgo(salt=dispatch.SALT).sign(value)


def test_the_holder_answers_only_requests_signed_for_it(local_db, dispatchers):
    router = CallCenter(local_db)
    (agent_id,) = queued_agents(router, 1)
    holder = matcher_process(local_db, dispatchers)
    assert wait_for(lambda: holder.holding, timeout=10)
    call = b'{"call_id": "x"}'

    assert holder.answer(b"0123 " + call) == {"error": "bad signature"}
    other_purpose = signing.TimestampSigner(salt="something else").sign(call.decode()).encode()
    assert holder.answer(other_purpose) == {"error": "bad signature"}
    assert holder.answer(signed_long_ago(call.decode()).encode()) == {"error": "bad signature"}  # a replay
    signed = dispatch.signer().sign(call.decode())
    assert holder.answer(signed.encode()) == {"error": "not a call"}
    assert Agents(local_db, router.catalog).get(agent_id).status == AgentStatus.QUEUED


def test_only_one_process_holds_the_lease_until_it_runs_out(local_db):
    now = [1000.0]
    first = dispatch.matching_lease(local_db, holder="one", address="h:1", duration=3, now=lambda: now[0])
    second = dispatch.matching_lease(local_db, holder="two", address="h:2", duration=3, now=lambda: now[0])
    assert first.acquire()
    assert not second.acquire()
    now[0] += 1.5
    assert first.renew()  # runs out at 1004.5
    now[0] += 2.0
    assert not second.acquire()
    holder = dispatch.current_holder(local_db)
    assert holder is not None and (holder.address, holder.lease_until) == ("h:1", 1004.5)
    now[0] += 1.5  # run out
    assert second.acquire()
    assert not first.renew()  # fenced: another generation holds it now
    holder = dispatch.current_holder(local_db)
    assert holder is not None and (holder.holder, holder.address, holder.lease_until) == ("two", "h:2", 1008.0)
    assert holder.generation == 2
