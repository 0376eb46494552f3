"""The agent queue and caller matching, single-threaded on moto."""

import boto3
import pytest
from botocore.stub import Stubber

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.agents.skills import SkillCatalog, SkillError, matching_combinations
from queues_app.calls.records import CallStatus
from queues_app.centre import keys
from queues_app.centre.call_center import AgentTooBroad, CallCenter
from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal
from queues_app.routing.escalation import EscalationPolicy


@pytest.fixture
def router(moto_db, clock):
    return CallCenter(moto_db, clock=clock, escalation=EscalationPolicy(after_seconds=60, order=("gender", "language")))


def agent(router, name, languages, gender):
    return Agents(router.db, router.catalog).create(name, {"language": languages, "gender": [gender]})


def queue_items(router, combo):
    """Every message of the queue, from each of its sub-queues."""
    return [
        item
        for pk in keys.queue_partitions(combo)
        for item in router.db.partition_items(router.table.name, pk, ConsistentRead=True)
    ]


def depth(router, combo):
    return {q.combination: q.depth for q in router.queues()}[combo]


def test_enqueue_writes_one_message_per_combination_and_counts_them(router):
    ana = agent(router, "Ana", ["English", "Spanish"], "F")
    queued, call = router.make_available(ana.agent_id)
    assert call is None
    assert queued.status == AgentStatus.QUEUED
    assert queued.queue_token.endswith(ana.agent_id)
    for combo in (("English", "F"), ("Spanish", "F")):
        assert len(queue_items(router, combo)) == 1
        assert depth(router, combo) == 1
    assert depth(router, ("French", "F")) == 0
    assert {q.name: q for q in router.queues()}["Q#English#F"].oldest_queued_at == queued.queued_at


def test_enqueueing_a_queued_agent_is_refused_without_duplicates(router):
    ana = agent(router, "Ana", ["English"], "F")
    router.make_available(ana.agent_id)
    with pytest.raises(errors.Conflict, match="already queued"):
        router.make_available(ana.agent_id)
    assert len(queue_items(router, ("English", "F"))) == 1
    assert depth(router, ("English", "F")) == 1


def test_an_agent_over_the_transaction_limit_is_refused_up_front(moto_db):
    catalog = SkillCatalog.from_mapping({"language": [f"L{i}" for i in range(10)], "gender": list("ABCDE")})
    router = CallCenter(moto_db, catalog)
    wide = Agents(moto_db, catalog).create("Wide", {"language": [f"L{i}" for i in range(10)], "gender": list("ABCDE")})
    with pytest.raises(AgentTooBroad, match="50 skill combinations.*110 actions.*limit of 100"):
        router.make_available(wide.agent_id)
    assert Agents(moto_db, catalog).get(wide.agent_id).status == AgentStatus.OFFLINE


def test_caller_gets_the_earliest_queued_agent_who_fits(router):
    first = agent(router, "First", ["Spanish"], "M")
    second = agent(router, "Second", ["Spanish", "English"], "M")
    other = agent(router, "Other", ["Spanish"], "F")
    for a in (other, first, second):
        router.make_available(a.agent_id)
    call, created = router.create_call({"language": "Spanish", "gender": "M"})
    assert created
    assert call.status == CallStatus.ASSIGNED
    assert call.agent_id == first.agent_id
    assert call.why[0]["agent_id"] == first.agent_id
    assert call.why[0]["outcome"] == "chosen"
    assert any(w["agent_id"] == second.agent_id and w["outcome"] == "later" for w in call.why)
    taken = Agents(router.db, router.catalog).get(first.agent_id)
    assert taken.status == AgentStatus.ATTENDING and taken.call_id == call.call_id
    assert depth(router, ("Spanish", "M")) == 1
    assert router.get_call(call.call_id).agent_id == first.agent_id


def test_assignment_removes_every_message_of_the_agent(router):
    polyglot = agent(router, "Poly", ["English", "French", "Spanish"], "X")
    router.make_available(polyglot.agent_id)
    router.create_call({"language": "French", "gender": "X"})
    for language in ("English", "French", "Spanish"):
        assert queue_items(router, (language, "X")) == []
        assert depth(router, (language, "X")) == 0


def test_any_preference_looks_across_queues_in_queue_order(router):
    m = agent(router, "M", ["English"], "M")
    f = agent(router, "F", ["English"], "F")
    router.make_available(m.agent_id)
    router.make_available(f.agent_id)
    call, _ = router.create_call({"language": "English", "gender": "any"})
    assert call.agent_id == m.agent_id


def test_lifo_order_takes_the_most_recently_queued_agent(router):
    early = agent(router, "Early", ["French"], "F")
    late = agent(router, "Late", ["French"], "F")
    router.make_available(early.agent_id)
    router.make_available(late.agent_id)
    call, _ = router.create_call({"language": "French", "gender": "F"}, order="lifo")
    assert call.agent_id == late.agent_id


def test_unmatched_callers_wait_in_priority_then_arrival_order(router):
    a, _ = router.create_call({"language": "Spanish", "gender": "F"})
    b, _ = router.create_call({"language": "Spanish", "gender": "any"})
    vip, _ = router.create_call({"language": "Spanish", "gender": "F"}, priority=5)
    assert {a.status, b.status, vip.status} == {CallStatus.WAITING}
    waiting, _ = router.line.waiting_calls()
    assert [w["call_id"] for w in waiting] == [vip.call_id, a.call_id, b.call_id]

    ana = agent(router, "Ana", ["Spanish"], "F")
    bea = agent(router, "Bea", ["Spanish"], "F")
    cid = agent(router, "Cid", ["Spanish"], "M")
    # An agent who becomes available takes the longest-waiting caller they fit instead of queueing.
    _, got = router.make_available(ana.agent_id)
    assert got.call_id == vip.call_id
    assert got.why[0]["outcome"] == "returned"
    _, got = router.make_available(cid.agent_id)  # a male agent only fits b (gender any)
    assert got.call_id == b.call_id
    _, got = router.make_available(bea.agent_id)
    assert got.call_id == a.call_id
    assert router.line.waiting_calls()[0] == []
    assert queue_items(router, ("Spanish", "F")) == []


def test_an_agent_who_fits_no_waiting_caller_is_queued(router):
    router.create_call({"language": "French", "gender": "M"})
    ana = agent(router, "Ana", ["Spanish"], "F")
    queued, call = router.make_available(ana.agent_id)
    assert call is None and queued.status == AgentStatus.QUEUED
    assert len(router.line.waiting_calls()[0]) == 1


def test_a_caller_arriving_while_the_agent_queues_is_not_missed(router, monkeypatch):
    """The lost wake-up race: the agent looked for callers (none), a caller starts
    waiting, then the agent is queued. The agent's second look must find the caller."""
    ana = agent(router, "Ana", ["English"], "F")
    other_router = CallCenter(router.db, router.catalog, clock=router.clock)
    real_enqueue = router.enqueue
    arrived = {}

    def enqueue_while_a_caller_arrives(a, change=None):
        call = other_router.line.start_waiting(other_router_call())
        arrived["call"] = call
        return real_enqueue(a, change)

    def other_router_call():
        from queues_app.calls.records import Call

        return Call(
            call_id="racer",
            status=CallStatus.WAITING,
            preferences={"language": "English", "gender": None},
            arrived_at="2026-01-01T00:00:00.000000Z",
        )

    monkeypatch.setattr(router.availability, "enqueue", enqueue_while_a_caller_arrives)
    agent_now, call = router.make_available(ana.agent_id)
    assert call is not None and call.call_id == "racer"
    assert agent_now.status == AgentStatus.ATTENDING
    assert router.get_call("racer").status == CallStatus.ASSIGNED
    assert queue_items(router, ("English", "F")) == []
    assert depth(router, ("English", "F")) == 0


def test_the_look_before_queueing_reads_the_line_eventually_and_the_look_after_strongly(router):
    """The look before queueing may miss a caller who just joined (the look after finds
    them), so it reads the counts and the heads at half the units; the look after may not."""
    router.create_call({"language": "French", "gender": "M"})
    ana = agent(router, "Ana", ["Spanish"], "F")
    marie = agent(router, "Marie", ["French"], "M")
    reads: list[tuple[str, bool]] = []

    def note(params, model, **kwargs):
        if model.name == "Query" and params.get("KeyConditionExpression") == "pk = :pk":
            if params["ExpressionAttributeValues"][":pk"]["S"].startswith(keys.WAIT_PREFIX):
                reads.append(("head", bool(params.get("ConsistentRead"))))
        if model.name == "BatchGetItem":
            (request,) = params["RequestItems"].values()
            if all(k["pk"]["S"].startswith(keys.WAIT_COUNT_PREFIX) for k in request["Keys"]):
                reads.append(("counts", bool(request.get("ConsistentRead"))))

    router.db.client.meta.events.register("provide-client-params.dynamodb", note)
    try:
        _queued, nothing = router.make_available(ana.agent_id)  # fits nobody: looks before and after
        assert nothing is None
        assert reads == [("counts", False), ("counts", True)]  # no partition she fits has callers
        reads.clear()
        _attending, call = router.make_available(marie.agent_id)  # takes the caller at the first look
    finally:
        router.db.client.meta.events.unregister("provide-client-params.dynamodb", note)
    assert call is not None
    assert reads == [("counts", False), ("head", False)]


def test_a_new_callers_look_reads_the_queues_eventually_and_the_look_after_joining_strongly(router):
    """A new caller's look may miss an agent who queued a moment ago: the look after the
    caller joins the line finds them, so only that look pays for strong reads."""
    ana = agent(router, "Ana", ["English"], "F")
    router.make_available(ana.agent_id)
    reads: list[bool] = []

    def note(params, model, **kwargs):
        if model.name == "Query" and params.get("KeyConditionExpression") == "pk = :pk":
            if params["ExpressionAttributeValues"][":pk"]["S"].startswith(keys.QUEUE_PREFIX):
                reads.append(bool(params.get("ConsistentRead")))

    router.db.client.meta.events.register("provide-client-params.dynamodb", note)
    try:
        call, _ = router.create_call({"language": "English", "gender": "F"})  # Ana, at the first look
        assert call.agent_id == ana.agent_id
        assert reads and not any(reads)
        reads.clear()
        waiting, _ = router.create_call({"language": "English", "gender": "F"})  # nobody: joins, looks again
    finally:
        router.db.client.meta.events.unregister("provide-client-params.dynamodb", note)
    assert waiting.status == CallStatus.WAITING
    looks = keys.QUEUE_SPLIT * len(matching_combinations(router.catalog, {"language": "English", "gender": "F"}))
    assert reads == [False] * looks + [True] * looks


def test_idempotency_key_returns_the_same_call(router):
    first, created = router.create_call({"language": "English", "gender": "F"}, idempotency_key="req-1")
    again, created_again = router.create_call({"language": "English", "gender": "F"}, idempotency_key="req-1")
    assert created and not created_again
    assert again.call_id == first.call_id
    assert len(router.line.waiting_calls()[0]) == 1


@pytest.mark.parametrize(
    "prefs, field",
    [
        ({"language": "Klingon", "gender": "F"}, "language"),
        ({"language": "English", "gender": "Q"}, "gender"),
        ({"language": "English", "mood": "happy"}, "mood"),
    ],
)
def test_invalid_preferences_name_the_field(router, prefs, field):
    with pytest.raises(SkillError) as caught:
        router.create_call(prefs)
    assert caught.value.field == field


def test_invalid_priority_is_refused(router):
    with pytest.raises(errors.InvalidRequest, match="priority"):
        router.create_call({"language": "English"}, priority=12)


def test_release_ends_the_call_and_queues_the_agent_at_the_back(router):
    ana = agent(router, "Ana", ["English"], "F")
    bea = agent(router, "Bea", ["English"], "F")
    router.make_available(ana.agent_id)
    router.make_available(bea.agent_id)
    call, _ = router.create_call({"language": "English", "gender": "F"})
    assert call.agent_id == ana.agent_id
    released, next_call = router.release(ana.agent_id)
    assert next_call is None and released.status == AgentStatus.QUEUED
    assert router.get_call(call.call_id).status == CallStatus.ENDED
    # Bea has waited longer, so she is next; Ana is at the back.
    nxt, _ = router.create_call({"language": "English", "gender": "F"})
    assert nxt.agent_id == bea.agent_id


@pytest.mark.parametrize("then", ["wrap_up", "offline"])
def test_release_to_wrap_up_or_offline(router, then):
    ana = agent(router, "Ana", ["English"], "F")
    router.make_available(ana.agent_id)
    router.create_call({"language": "English", "gender": "F"})
    released, _ = router.release(ana.agent_id, then=then)
    assert released.status == then
    assert released.call_id is None
    assert depth(router, ("English", "F")) == 0


def test_release_gives_the_agent_a_waiting_caller_first(router):
    ana = agent(router, "Ana", ["English"], "F")
    router.make_available(ana.agent_id)
    router.create_call({"language": "English", "gender": "F"})
    waiting, _ = router.create_call({"language": "English", "gender": "F"})
    assert waiting.status == CallStatus.WAITING
    released, next_call = router.release(ana.agent_id)
    assert next_call.call_id == waiting.call_id
    assert released.status == AgentStatus.ATTENDING


def test_release_of_an_agent_not_on_a_call_is_refused(router):
    ana = agent(router, "Ana", ["English"], "F")
    with pytest.raises(errors.Conflict, match="not on a call"):
        router.release(ana.agent_id)
    with pytest.raises(errors.InvalidRequest):
        router.release(ana.agent_id, then="lunch")


def test_log_off_leaves_every_queue_at_once(router):
    poly = agent(router, "Poly", ["English", "French"], "M")
    router.make_available(poly.agent_id)
    off = router.log_off(poly.agent_id).agent
    assert off.status == AgentStatus.OFFLINE
    assert queue_items(router, ("English", "M")) == [] and queue_items(router, ("French", "M")) == []
    assert depth(router, ("English", "M")) == 0 and depth(router, ("French", "M")) == 0
    assert router.log_off(poly.agent_id).agent.status == AgentStatus.OFFLINE  # already offline: no-op


def test_log_off_of_an_agent_on_a_call_is_refused(router):
    ana = agent(router, "Ana", ["English"], "F")
    router.make_available(ana.agent_id)
    router.create_call({"language": "English", "gender": "F"})
    with pytest.raises(errors.Conflict, match="release the call first"):
        router.log_off(ana.agent_id)


def test_escalation_relaxes_gender_then_language_and_records_it(router, clock):
    call, _ = router.create_call({"language": "Spanish", "gender": "F"})
    cid = agent(router, "Cid", ["English"], "M")
    router.make_available(cid.agent_id)
    assert router.escalate() == []  # not waited long enough
    clock.advance(61)
    changed = router.escalate()
    assert [c.call_id for c in changed] == [call.call_id]
    waiting = router.get_call(call.call_id)
    assert waiting.status == CallStatus.WAITING  # Cid speaks no Spanish
    assert waiting.preferences == {"language": "Spanish", "gender": None}
    assert [r["dimension"] for r in waiting.relaxed] == ["gender"]
    clock.advance(60)
    router.escalate()
    assigned = router.get_call(call.call_id)
    assert assigned.status == CallStatus.ASSIGNED and assigned.agent_id == cid.agent_id
    assert [(r["dimension"], r["from"]) for r in assigned.relaxed] == [("gender", "F"), ("language", "Spanish")]


def test_edit_agent_checks_version_and_state(router):
    directory = Agents(router.db, router.catalog)
    ana = agent(router, "Ana", ["English"], "F")
    edited = directory.update(
        ana.agent_id, name="Ana B", skills={"language": ["French"], "gender": ["F"]}, expected_version=ana.version
    )
    assert edited.name == "Ana B" and edited.version == ana.version + 1
    with pytest.raises(errors.Conflict, match="changed by someone else"):
        directory.update(
            ana.agent_id, name="Stale", skills={"language": ["French"], "gender": ["F"]}, expected_version=ana.version
        )
    router.make_available(ana.agent_id)
    current = directory.get(ana.agent_id)
    with pytest.raises(errors.Conflict, match="log them off"):
        directory.update(
            ana.agent_id, name="X", skills={"language": ["French"], "gender": ["F"]}, expected_version=current.version
        )


def test_a_lost_transaction_conflict_is_retried(clock):
    """Real DynamoDB cancels with TransactionConflict under contention (DynamoDB Local never
    does): the matcher retries the same candidate instead of failing."""
    client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    catalog = SkillCatalog.from_mapping({"language": ["English"], "gender": ["F"]})
    router = CallCenter(Dynamo(client, prefix="s-"), catalog, clock=clock, order="fifo")
    token = "2026-01-01T00:00:00.000000Z#a1"
    message = {
        **keys.queue_message(("English", "F"), token),
        "agent_id": "a1",
        "name": "Ana",
        "skills": {"language": ["English"], "gender": ["F"]},
    }
    with Stubber(client) as stub:
        stub.add_response("query", {"Items": []}, None)  # the lines (none: main), read once a few seconds
        stub.add_response("query", {"Items": []}, None)  # the routing profiles (none), likewise
        # One Query of each sub-queue, sent at once: which one gets the message does not matter.
        stub.add_response("query", {"Items": [marshal(message)]}, None)
        for _ in range(keys.QUEUE_SPLIT - 1):
            stub.add_response("query", {"Items": []}, None)
        stub.add_response("get_item", {}, None)  # who listens to agents (nobody), read once a few seconds
        stub.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            service_message="Transaction cancelled",
            http_status_code=400,
            modeled_fields={"CancellationReasons": [{"Code": "TransactionConflict"}] + [{"Code": "None"}] * 3},
        )
        stub.add_response("transact_write_items", {}, None)
        call, created = router.create_call({"language": "English", "gender": "F"})
        stub.assert_no_pending_responses()
    assert created and call.agent_id == "a1"


def test_a_condition_failure_moves_on_to_the_next_candidate(clock):
    client = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    catalog = SkillCatalog.from_mapping({"language": ["English"], "gender": ["F"]})
    router = CallCenter(Dynamo(client, prefix="s-"), catalog, clock=clock, order="fifo")
    skills = {"language": ["English"], "gender": ["F"]}
    tokens = [f"2026-01-01T00:00:0{i}.000000Z#a{i}" for i in (1, 2)]
    items = [
        marshal(
            {
                **keys.queue_message(("English", "F"), tokens[i - 1]),
                "agent_id": f"a{i}",
                "name": f"A{i}",
                "skills": skills,
            }
        )
        for i in (1, 2)
    ]
    with Stubber(client) as stub:
        stub.add_response("query", {"Items": []}, None)  # the lines (none: main)
        stub.add_response("query", {"Items": []}, None)  # the routing profiles (none)
        stub.add_response("query", {"Items": items}, None)
        for _ in range(keys.QUEUE_SPLIT - 1):
            stub.add_response("query", {"Items": []}, None)
        stub.add_response("get_item", {}, None)  # who listens to agents (nobody)
        stub.add_client_error(
            "transact_write_items",
            service_error_code="TransactionCanceledException",
            http_status_code=400,
            modeled_fields={"CancellationReasons": [{"Code": "ConditionalCheckFailed"}] + [{"Code": "None"}] * 3},
        )
        stub.add_response("transact_write_items", {}, None)
        call, _ = router.create_call({"language": "English", "gender": "F"})
        stub.assert_no_pending_responses()  # one read of the sub-queues only: no starting over
    assert call.agent_id == "a2"
    assert call.why[1] == {
        "agent_id": "a1",
        "name": "A1",
        "queued_at": "2026-01-01T00:00:01.000000Z",
        "outcome": "taken",
    }


def test_an_agent_another_matcher_of_this_process_is_trying_is_passed_over(router):
    from queues_app.routing.matching import claims_for

    first = agent(router, "First", ["English"], "F")
    second = agent(router, "Second", ["English"], "F")
    queued = [router.make_available(a.agent_id)[0] for a in (first, second)]
    claims = claims_for(router.db)
    held = (router.table.name, queued[0].queue_token)
    assert claims.claim(held)  # another thread is trying First
    call, _ = router.create_call({"language": "English", "gender": "F"})
    assert call.agent_id == second.agent_id
    claims.release(held)  # that try failed: First is still queued, and next in line
    call, _ = router.create_call({"language": "English", "gender": "F"})
    assert call.agent_id == first.agent_id


def test_a_matcher_waits_for_another_threads_try_of_its_only_candidate(router, monkeypatch):
    import threading

    from queues_app.routing.matching import claims_for

    only = agent(router, "Only", ["English"], "F")
    queued, _ = router.make_available(only.agent_id)
    claims = claims_for(router.db)
    held = (router.table.name, queued.queue_token)
    assert claims.claim(held)
    waits, others = [], []
    wait_while_held = claims.wait_while_held

    def waiting(keys, timeout):
        waits.append(list(keys))
        other = threading.Thread(target=claims.release, args=(held,))  # the other try fails meanwhile
        other.start()
        others.append(other)
        return wait_while_held(keys, timeout)

    monkeypatch.setattr(claims, "wait_while_held", waiting)
    call, _ = router.create_call({"language": "English", "gender": "F"})
    for other in others:
        other.join()
    assert waits == [[held]]  # waited for the other thread's try instead of racing it
    assert call.agent_id == only.agent_id


def test_an_agent_taken_by_another_matcher_of_this_process_is_not_tried_again(router):
    from queues_app.routing.matching import claims_for

    first = agent(router, "First", ["English"], "F")
    second = agent(router, "Second", ["English"], "F")
    queued = [router.make_available(a.agent_id)[0] for a in (first, second)]
    claims = claims_for(router.db)
    held = (router.table.name, queued[0].queue_token)
    claims.claim(held)
    router.create_call({"language": "English", "gender": "F"})  # Second, First being held
    claims.mark_gone(held)  # the other thread took First (as far as this process knows)
    claims.release(held)
    third = agent(router, "Third", ["English"], "F")
    router.make_available(third.agent_id)
    call, _ = router.create_call({"language": "English", "gender": "F"})
    assert call.agent_id == third.agent_id  # no transaction spent on First


def test_matchers_running_at_the_same_moment_share_a_fresh_read(router, moments):
    from queues_app.ddb import meter
    from queues_app.routing.matching import claims_for

    # No time passes between the callers (`moments`), however slow the machine.
    first = agent(router, "First", ["English"], "F")
    second = agent(router, "Second", ["English"], "F")
    for a in (first, second):
        router.make_available(a.agent_id)
    claims = claims_for(router.db)
    claims.enter()  # another matcher of this process is running
    try:
        one, _ = router.create_call({"language": "English", "gender": "F"})
        with meter.measure() as measured:
            two, _ = router.create_call({"language": "English", "gender": "F"})
        assert measured.calls_of("Query") == 0  # the first caller's read, a moment old
        with meter.measure() as measured:
            three, _ = router.create_call({"language": "English", "gender": "F"})
        assert measured.calls_of("Query") >= 1  # "nobody left" always comes from a fresh read
    finally:
        claims.leave()
    assert (one.agent_id, two.agent_id) == (first.agent_id, second.agent_id)
    assert three.status == CallStatus.WAITING


def test_a_read_older_than_a_moment_is_not_shared(router, moments):
    from queues_app.ddb import meter
    from queues_app.routing import matching
    from queues_app.routing.matching import claims_for

    for name in ("First", "Second"):
        router.make_available(agent(router, name, ["English"], "F").agent_id)
    claims = claims_for(router.db)
    claims.enter()  # another matcher of this process is running
    try:
        router.create_call({"language": "English", "gender": "F"})
        moments.advance(matching.SHARED_READ_AGE * 2)
        with meter.measure() as measured:
            router.create_call({"language": "English", "gender": "F"})
        assert measured.calls_of("Query") == keys.QUEUE_SPLIT  # a fresh read: one Query of each sub-queue
    finally:
        claims.leave()


def test_a_caller_alone_always_reads_the_queue(router):
    from queues_app.ddb import meter

    for name in ("First", "Second"):
        router.make_available(agent(router, name, ["English"], "F").agent_id)
    router.lines.current()  # the lines, read once every few seconds, not by each arrival
    router.matcher.profiles.current()  # and the routing profiles
    for _ in range(2):
        with meter.measure() as measured:
            router.create_call({"language": "English", "gender": "F"})
        assert measured.calls_of("Query") == keys.QUEUE_SPLIT  # one of each sub-queue of English#F


def test_calls_in_progress_page_through_their_agents_without_loss_or_repeat(router):
    made = set()
    for n in range(30):
        a = agent(router, f"Agent {n:02d}", ["English"], "F")
        router.make_available(a.agent_id)
        call, _ = router.create_call({"language": "English", "gender": "F"})
        made.add(call.call_id)
    router.release(a.agent_id, then="offline")  # the last call ended: no longer in progress
    made.discard(call.call_id)
    router.create_call({"language": "French", "gender": "M"})  # waits: not in progress
    seen: list[str] = []
    cursor = None
    for _ in range(20):
        page = router.calls.in_progress(cursor=cursor, limit=7)
        assert all(c.status == CallStatus.ASSIGNED for c in page.items)
        seen += [c.call_id for c in page.items]
        cursor = page.next_cursor
        if not cursor:
            break
    assert sorted(seen) == sorted(made)
    # A cursor serves the list it came from, not the agents' list of the same index.
    agents_cursor = router.agents.list(status=AgentStatus.ATTENDING, limit=3).next_cursor
    with pytest.raises(errors.InvalidRequest):
        router.calls.in_progress(cursor=agents_cursor)
