"""Each queue split into sub-queues by a hash of the queue token: where messages go, the
readers merging the sub-queues' heads, the audit, and the move of an earlier version's
messages. On moto."""

import pytest

from queues_app.agents.records import AgentStatus
from queues_app.agents.skills import SkillCatalog, SkillError
from queues_app.calls.records import CallStatus
from queues_app.centre import keys
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import meter
from queues_app.ddb.codec import marshal
from queues_app.monitoring.invariants import check_once
from queues_app.routing.escalation import EscalationPolicy
from queues_app.routing.queues import queue_heads
from queues_app.upgrades import callcenter

ENGLISH_F, SPANISH_F = ("English", "F"), ("Spanish", "F")


def make_router(moto_db, clock, **options):
    # No escalation within a test: a caller's preferences stay as given.
    return CallCenter(moto_db, clock=clock, escalation=EscalationPolicy(after_seconds=3600), **options)


@pytest.fixture
def router(moto_db, clock):
    return make_router(moto_db, clock)


def queue_agents(router, count, languages=("English",)):
    """`count` agents queued one after the other: the queue order is the list's."""
    queued = []
    for n in range(count):
        agent = router.agents.create(f"Agent {n:02d}", {"language": list(languages), "gender": ["F"]})
        queued.append(router.make_available(agent.agent_id)[0])
    return queued


def stored_messages(router, combo):
    """Every message item of the queue: its sub-queues and its unsplit partition."""
    pks = [keys.queue_name(combo), *keys.queue_partitions(combo)]
    return [item for pk in pks for item in router.db.partition_items(router.table.name, pk, ConsistentRead=True)]


def violations(router):
    return [str(v) for v in check_once(router.db, router.catalog).violations]


def move_to_old_layout(router, agent):
    """The agent's messages where an earlier version wrote them: the queue's own partition."""
    for combo in router.catalog.combinations(agent.skills):
        key = marshal(keys.queue_message(combo, agent.queue_token))
        item = router.db.call("get_item", TableName=router.table.name, Key=key, ConsistentRead=True)["Item"]
        router.db.call("delete_item", TableName=router.table.name, Key=key)
        router.db.call("put_item", TableName=router.table.name, Item={**item, "pk": {"S": keys.queue_name(combo)}})


# --- keys --------------------------------------------------------------------------------


def test_a_message_goes_to_the_sub_queue_its_token_picks():
    tokens = [keys.queue_token(f"2026-01-01T00:00:00.{n:06d}Z", f"agent-{n}") for n in range(64)]
    partitions = keys.queue_partitions(SPANISH_F)
    assert partitions == ["Q#Spanish#F@0", "Q#Spanish#F@1", "Q#Spanish#F@2", "Q#Spanish#F@3"]
    placed = [keys.queue_message(SPANISH_F, token) for token in tokens]
    assert all(key["pk"] in partitions and key["sk"] == token for key, token in zip(placed, tokens, strict=True))
    assert {key["pk"] for key in placed} == set(partitions)  # 64 tokens use every sub-queue
    assert placed == [keys.queue_message(SPANISH_F, token) for token in tokens]  # the same every time
    assert {keys.queue_of_partition(pk) for pk in partitions} == {"Q#Spanish#F"}
    assert keys.queue_of_partition("Q#Spanish#F") == "Q#Spanish#F"  # an earlier version's partition


def test_a_skill_value_may_not_hold_the_sub_queue_separator():
    with pytest.raises(SkillError, match="'#' or '@'"):
        SkillCatalog.from_mapping({"language": ["English", "Eng@lish"]})


# --- writers and readers -----------------------------------------------------------------------


def test_messages_spread_over_the_sub_queues_and_a_dequeue_deletes_each(router):
    queued = queue_agents(router, 12, languages=("English", "Spanish"))
    for combo in (ENGLISH_F, SPANISH_F):
        messages = stored_messages(router, combo)
        assert sorted(m["sk"] for m in messages) == sorted(a.queue_token for a in queued)
        assert all(m["pk"] == keys.queue_message(combo, m["sk"])["pk"] for m in messages)
        assert len({m["pk"] for m in messages}) > 1
    call, _ = router.create_call({"language": "Spanish", "gender": "F"})
    assert call.agent_id == queued[0].agent_id
    for combo in (ENGLISH_F, SPANISH_F):  # gone from its sub-queue of both queues
        assert queued[0].queue_token not in {m["sk"] for m in stored_messages(router, combo)}
        assert len(stored_messages(router, combo)) == 11
    router.log_off(queued[5].agent_id)
    assert len(stored_messages(router, ENGLISH_F)) == len(stored_messages(router, SPANISH_F)) == 10
    assert violations(router) == []


@pytest.mark.parametrize("candidate_limit", [16, 1])
def test_callers_get_agents_in_queue_order_across_the_sub_queues(moto_db, clock, candidate_limit):
    router = make_router(moto_db, clock, candidate_limit=candidate_limit)
    queued = queue_agents(router, 10)
    assert len({keys.queue_message(ENGLISH_F, a.queue_token)["pk"] for a in queued}) > 1
    for expected in queued:
        (english_f,) = [q for q in router.queues() if q.combination == ENGLISH_F]
        assert english_f.oldest_queued_at == expected.queued_at  # the oldest of the sub-queues' heads
        call, _ = router.create_call({"language": "English", "gender": "F"})
        assert call.agent_id == expected.agent_id
        assert [w["outcome"] for w in call.why if w["agent_id"] == expected.agent_id] == ["chosen"]
    assert router.create_call({"language": "English", "gender": "F"})[0].status == CallStatus.WAITING
    assert violations(router) == []


@pytest.mark.parametrize("candidate_limit", [16, 1])
def test_lifo_callers_get_the_newest_agent_across_the_sub_queues(moto_db, clock, candidate_limit):
    router = make_router(moto_db, clock, candidate_limit=candidate_limit)
    queued = queue_agents(router, 10)
    for expected in reversed(queued):
        call, _ = router.create_call({"language": "English", "gender": "F"}, order="lifo")
        assert call.agent_id == expected.agent_id
    assert violations(router) == []


def test_sub_queues_read_at_once_count_as_the_callers_requests(router):
    with meter.measure() as seen:
        queue_heads(router.db, router.table.name, [ENGLISH_F, SPANISH_F], 1)
    assert seen.calls == seen.calls_of("Query") == 2 * keys.QUEUE_SPLIT  # pool threads' too
    with meter.measure() as seen, meter.housekeeping():
        queue_heads(router.db, router.table.name, [ENGLISH_F, SPANISH_F], 1)
    assert seen.calls == 0  # a housekeeping read stays housekeeping on the pool's threads


def stored(router, combo, *sub_queues):
    """Message items put straight into each sub-queue (`tokens` of sub-queue 0, 1, ...)."""
    for n, tokens in enumerate(sub_queues):
        for token in tokens:
            item = {"pk": keys.queue_partitions(combo)[n], "sk": token, "agent_id": token, "type": "message"}
            router.db.call("put_item", TableName=router.table.name, Item=marshal(item))


def test_a_merge_stops_where_a_sub_queue_may_hold_more(router):
    # Read two a sub-queue: past t3 the second may hold t3.5, older than t4: the head stops at t3.
    stored(router, ENGLISH_F, ("t1", "t5", "t6"), ("t2", "t3", "t35"), ("t4",), ())
    (head,) = queue_heads(router.db, router.table.name, [ENGLISH_F], 2)
    assert [item["sk"] for item in head] == ["t1", "t2", "t3"]
    stored(router, SPANISH_F, ("t9", "t5", "t1"), ("t8", "t7", "t2"), ("t6",))
    (newest,) = queue_heads(router.db, router.table.name, [SPANISH_F], 2, newest_first=True)
    assert [item["sk"] for item in newest] == ["t9", "t8", "t7"]
    (whole,) = queue_heads(router.db, router.table.name, [SPANISH_F], 5)
    assert [item["sk"] for item in whole] == ["t1", "t2", "t5", "t6", "t7", "t8", "t9"]


# --- the audit ----------------------------------------------------------------------------------


def test_a_message_in_the_wrong_sub_queue_is_caught(router):
    ana, bo = queue_agents(router, 2)
    assert violations(router) == []
    right = keys.queue_message(ENGLISH_F, ana.queue_token)
    wrong = next(pk for pk in keys.queue_partitions(ENGLISH_F) if pk != right["pk"])
    item = router.db.call("get_item", TableName=router.table.name, Key=marshal(right), ConsistentRead=True)["Item"]
    router.db.call("delete_item", TableName=router.table.name, Key=marshal(right))
    router.db.call("put_item", TableName=router.table.name, Item={**item, "pk": {"S": wrong}})
    found = violations(router)
    assert f"[messages] agent {ana.agent_id} in Q#English#F: queued with token {ana.queue_token} " in found[0]
    assert (
        f"[orphan] message {wrong} / {ana.queue_token}: no queued agent owns it: in the wrong sub-queue" in (found[1])
    )
    assert len(found) == 2  # the depth still matches: the queue holds two messages

    router.db.call("put_item", TableName=router.table.name, Item=item)  # and a copy in the right one
    found = violations(router)
    assert found[0].startswith("[depth] Q#English#F: metadata depth 2 but 3 message item(s)")
    assert len(found) == 2 and found[1].startswith(f"[orphan] message {wrong} / {ana.queue_token}: ")


def test_a_message_in_the_unsplit_partition_counts_in_its_queue_and_is_reported(router):
    (ana,) = queue_agents(router, 1, languages=("English", "Spanish"))
    move_to_old_layout(router, ana)
    assert violations(router) == [
        "[messages] Q#English#F: 1 message(s) in the queue's partition from before it was split: "
        "run `dynamo_tables create`",
        "[messages] Q#Spanish#F: 1 message(s) in the queue's partition from before it was split: "
        "run `dynamo_tables create`",
    ]  # and no depth, missing message or orphan


# --- an earlier version's messages, moved ---------------------------------------------------------


def test_split_old_queues_moves_an_earlier_versions_messages_once(router):
    queued = queue_agents(router, 6, languages=("English", "Spanish"))
    for agent in queued[:4]:
        move_to_old_layout(router, agent)
    assert callcenter.sub_queues(router.table) == 8  # four agents, in two queues each
    assert callcenter.sub_queues(router.table) == 0
    for combo in (ENGLISH_F, SPANISH_F):
        messages = stored_messages(router, combo)
        assert sorted(m["sk"] for m in messages) == sorted(a.queue_token for a in queued)
        assert all(m["pk"] == keys.queue_message(combo, m["sk"])["pk"] for m in messages)
        assert {m["agent_id"] for m in messages} == {a.agent_id for a in queued}  # moved whole
    assert violations(router) == []

    # The moved agents are matched in queue order with the others, and dequeued cleanly.
    for expected in queued:
        call, _ = router.create_call({"language": "Spanish", "gender": "F"})
        assert call.agent_id == expected.agent_id
        assert router.agents.get(expected.agent_id).status == AgentStatus.ATTENDING
    assert stored_messages(router, ENGLISH_F) == stored_messages(router, SPANISH_F) == []
    assert violations(router) == []


def test_a_message_taken_while_it_is_moved_is_not_brought_back(router, monkeypatch):
    (ana,) = queue_agents(router, 1)
    move_to_old_layout(router, ana)
    old_key = marshal({"pk": keys.queue_name(ENGLISH_F), "sk": ana.queue_token})
    read = router.db.partition_items

    def read_then_taken(table, pk, **params):
        items = list(read(table, pk, **params))
        if items:  # a process of the earlier version dequeues the agent meanwhile
            router.db.call("delete_item", TableName=table, Key=old_key)
        return iter(items)

    monkeypatch.setattr(router.db, "partition_items", read_then_taken)
    assert callcenter.sub_queues(router.table) == 0
    assert stored_messages(router, ENGLISH_F) == []
