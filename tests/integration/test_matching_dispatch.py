"""The matching dispatcher on DynamoDB Local (it commits from several threads, which moto
cannot take): new callers of several processes matched by the one dispatcher holding the
lease, in order of priority then arrival, nobody twice; a request nobody answers is
withdrawn and never assigned afterwards."""

from __future__ import annotations

import threading

import pytest

from queues_app.agents import dispatch, keys
from queues_app.agents.calls import call_to_item
from queues_app.agents.records import AgentStatus, Call, CallStatus
from queues_app.agents.roster import Agents
from queues_app.agents.router import Router
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import marshal
from queues_app.monitoring import invariants


@pytest.fixture(autouse=True)
def no_dispatchers_left(local_db):
    yield  # stopped before the tables are dropped
    dispatch.stop_dispatchers()


def process_like(db: Dynamo, **options) -> Router:
    """A router on a client of its own, as another process would have (claims and the
    dispatcher are per client)."""
    own = Dynamo(prefix=db.prefix, endpoint_url=db.endpoint_url, region=db.region)
    router = Router(own)
    router.matcher.use_dispatcher(**options)
    return router


def queued_agents(router: Router, count: int) -> list[str]:
    agents = Agents(router.db, router.catalog)
    ids = []
    for i in range(count):
        agent = agents.create(f"Agent {i:02d}", {"language": ["Spanish"], "gender": ["F"]})
        router.make_available(agent.agent_id)
        ids.append(agent.agent_id)
    return ids


def request_items(db: Dynamo) -> list[dict]:
    return list(
        db.items(
            "query",
            TableName=db.table("callcenter"),
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": keys.MATCHING_PK}},
            ConsistentRead=True,
        )
    )


def test_callers_of_several_processes_get_distinct_agents_from_the_one_dispatcher(local_db):
    routers = [process_like(local_db) for _ in range(3)]
    agent_ids = queued_agents(routers[0], 12)
    given: list[tuple[str, str]] = []
    start = threading.Barrier(6)

    def caller(router: Router) -> None:
        start.wait()
        for _ in range(2):
            call, _created = router.create_call({"language": "Spanish", "gender": "F"})
            assert call.status == CallStatus.ASSIGNED
            given.append((call.call_id, call.agent_id))

    threads = [threading.Thread(target=caller, args=(routers[i % 3],)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(given) == 12
    assert sorted(agent for _call, agent in given) == sorted(agent_ids)  # each agent once
    holders = {r.matcher.dispatcher.lease.holder for r in routers if r.matcher.dispatcher.lease.held}
    assert len(holders) == 1  # one dispatcher at a time
    assert request_items(local_db) == []
    assert invariants.find_violations(local_db, routers[0].catalog, passes=1) == []


def test_the_dispatcher_serves_requests_by_priority_then_arrival(local_db):
    router = Router(local_db)
    first, second, third = queued_agents(router, 3)
    dispatcher = dispatch.Dispatcher(router.matcher)
    assert dispatcher.lease.hold()
    # Three requests waiting before the dispatcher looks: arrivals 1, 2, 3, the last one urgent.
    base = now()
    for n, priority in ((1, 0), (2, 0), (3, 5)):
        call = Call(
            call_id=f"call-{n}",
            status=CallStatus.WAITING,
            preferences={"language": "Spanish", "gender": "F"},
            priority=priority,
            arrived_at=to_iso(base.replace(microsecond=n)),
        )
        item = {**call_to_item(call), **keys.match_request(priority, call.arrived_at, call.call_id)}
        local_db.call("put_item", TableName=local_db.table("callcenter"), Item=marshal({**item, "deadline": 9e9}))

    assert dispatcher.dispatch_once() == 3
    dispatcher.stop()

    agents_of = {n: router.get_call(f"call-{n}").agent_id for n in (1, 2, 3)}
    assert agents_of == {3: first, 1: second, 2: third}
    assert request_items(local_db) == []


def test_a_request_nobody_answers_is_withdrawn_and_matched_directly(local_db):
    router = Router(local_db)
    (agent_id,) = queued_agents(router, 1)
    # Another holder has the lease and never dispatches: the request times out.
    other = dispatch.DispatchLease(local_db, holder="elsewhere", duration=60)
    assert other.hold()
    router.matcher.use_dispatcher(bound=0.3)

    call, _created = router.create_call({"language": "Spanish", "gender": "F"})

    assert call.status == CallStatus.ASSIGNED and call.agent_id == agent_id  # by the caller's own matcher
    assert request_items(local_db) == []  # withdrawn: no dispatcher can assign it any more
    assert Agents(local_db, router.catalog).get(agent_id).status == AgentStatus.ATTENDING


def test_a_withdrawn_request_is_never_assigned(local_db):
    router = Router(local_db)
    queued_agents(router, 1)
    dispatcher = dispatch.Dispatcher(router.matcher)
    assert dispatcher.lease.hold()
    call = Call(call_id="late", status=CallStatus.WAITING, preferences={"language": "Spanish", "gender": "F"})
    call.arrived_at = to_iso(now())
    key = keys.match_request(0, call.arrived_at, call.call_id)
    table = local_db.table("callcenter")
    local_db.call("put_item", TableName=table, Item=marshal({**call_to_item(call), **key, "deadline": 9e9}))
    planned = dispatcher.pending()
    local_db.call("delete_item", TableName=table, Key=marshal(key))  # the caller gave up meanwhile

    candidates = router.matcher.queue_candidates(call.preferences)
    dispatcher._commit(dispatch._Planned(planned[0], call, candidates[0], candidates, []))
    dispatcher.stop()

    assert router.find_call("late") is None
    assert Agents(local_db, router.catalog).get(candidates[0].agent_id).status == AgentStatus.QUEUED
    assert invariants.find_violations(local_db, router.catalog, passes=1) == []


def test_nobody_fits_is_answered_by_the_dispatcher(local_db, monkeypatch):
    router = Router(local_db)
    queued_agents(router, 1)  # Spanish F; the caller wants French
    router.matcher.use_dispatcher(bound=30)
    monkeypatch.setattr(router.matcher, "_match_claiming", lambda *a, **k: pytest.fail("matched directly"))

    assert (
        router.matcher.match(
            Call(
                call_id="nobody",
                status=CallStatus.WAITING,
                preferences={"language": "French", "gender": "F"},
                arrived_at=to_iso(now()),
            ),
            new_call=True,
        )
        is None
    )
    assert request_items(local_db) == []
