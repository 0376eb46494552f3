"""The status index spread over 8 partitions a status: every write of an agent's status
keeps `status_q` with it, and lists, counts and the logged-in agents read the status's
partitions as one. The paging scenarios run on moto and on DynamoDB Local (`backend_db`;
DynamoDB Local orders equal names in a partition its own way, not by key as moto does)."""

from __future__ import annotations

import pytest

from queues_app.agents.records import Agent, AgentStatus
from queues_app.agents.roster import Agents, agent_to_item
from queues_app.centre import keys
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import batch, meter
from queues_app.ddb.codec import marshal, unmarshal

SKILLS = {"language": ["Spanish"], "gender": ["F"]}


def order(agent: Agent) -> tuple[str, int]:
    """A status list's order: name, then partition (then as DynamoDB orders them in it)."""
    partition = keys.status_partition(agent.status, agent.agent_id)
    return agent.name.lower(), keys.status_partitions(agent.status).index(partition)


def ids_in_shard(shard: int, count: int, status: str = AgentStatus.QUEUED) -> list[str]:
    """`count` agent ids whose partition of `status` is `shard`."""
    found, n = [], 0
    while len(found) < count:
        agent_id = f"same{n:04d}"
        if keys.status_partition(status, agent_id) == f"{status}#{shard}":
            found.append(agent_id)
        n += 1
    return found


def put_agents(db, status: str, names: list[str], ids: list[str] | None = None, skills=None) -> list[Agent]:
    """Agents in `status`, written as the roster writes them (with their status_q)."""
    agents = Agents(db)
    built = []
    for n, name in enumerate(names):
        agent = agents.build(name, skills or SKILLS, agent_id=ids[n] if ids else None)
        agent.status = status
        built.append(agent)
    batch.put_items(db, agents.table_name, (agent_to_item(a) for a in built))
    return built


def roster_with_equal_names(db) -> list[Agent]:
    """45 queued agents over every partition: distinct names, a name shared across
    partitions (and by case), and a name shared by 9 agents of one partition (more than
    a page, so a read stops inside it), besides offline agents that no queued list shows."""
    # Fixed ids, so that every partition holds some of them whatever the run.
    distinct = put_agents(
        db, AgentStatus.QUEUED, [f"Agent {n:02d}" for n in range(24)], ids=[f"distinct{n:02d}" for n in range(24)]
    )
    shared = put_agents(
        db,
        AgentStatus.QUEUED,
        ["Kim Lee", "kim lee", "KIM LEE", "Kim Lee", "Kim Lee", "Kim Lee"],
        ids=[f"shared{n}" for n in range(6)],
    )
    crowded = put_agents(db, AgentStatus.QUEUED, ["Sam"] * 9, ids=ids_in_shard(3, 9))
    tail = put_agents(db, AgentStatus.QUEUED, ["Zed", "Zoe", "Sam", "Sammy", "Aaron", "Kim"])
    put_agents(db, AgentStatus.OFFLINE, [f"Agent {n:02d}" for n in range(5)])
    made = distinct + shared + crowded + tail
    assert len({keys.status_partition(a.status, a.agent_id) for a in made}) == keys.STATUS_SHARDS
    return made


def every_page(agents: Agents, limit: int, **filters) -> tuple[list[list[Agent]], list[str | None]]:
    """Every page forward from the first, and each page's previous-page cursor."""
    pages, previous, cursor = [], [], None
    while True:
        page = agents.list(cursor=cursor, limit=limit, **filters)
        pages.append(page.items)
        previous.append(page.previous_cursor)
        cursor = page.next_cursor
        if not cursor:
            return pages, previous
        assert len(pages) < 100, "the list does not end"


def assert_pages_forward_and_back(db, expected: list[Agent], limit: int, **filters) -> list[list[Agent]]:
    agents = Agents(db)
    pages, previous = every_page(agents, limit, **filters)
    listed = [a.agent_id for page in pages for a in page]
    assert sorted(listed) == sorted(a.agent_id for a in expected)  # no loss, no repeat
    shown = [order(a) for page in pages for a in page]
    assert shown == sorted(shown)  # in name order
    # Back from the last page: each previous page is the page before it.
    back, cursor = [], previous[-1]
    while cursor:
        page = agents.list(before=cursor, limit=limit, **filters)
        back.append(page.items)
        cursor = page.previous_cursor
    assert [[a.agent_id for a in page] for page in reversed(back)] == [
        [a.agent_id for a in page] for page in pages[:-1]
    ]
    return pages


def test_agents_are_spread_over_the_status_partitions_by_id():
    partitions = {keys.status_partition(AgentStatus.QUEUED, f"agent-{n}") for n in range(200)}
    assert partitions == set(keys.status_partitions(AgentStatus.QUEUED))
    assert keys.status_partition("queued", "a1") == keys.status_partition("queued", "a1")
    assert keys.status_partition("attending", "a1").startswith("attending#")


def test_a_status_list_pages_forward_and_back_over_its_partitions(backend_db):
    made = roster_with_equal_names(backend_db)
    for limit in (4, 7, 50):
        pages = assert_pages_forward_and_back(backend_db, made, limit, status=AgentStatus.QUEUED)
        assert all(len(page) == limit for page in pages[:-1])
        assert len(pages) == -(-len(made) // limit)


def test_a_status_page_reads_each_partition_once(backend_db):
    put_agents(backend_db, AgentStatus.QUEUED, [f"Agent {n:03d}" for n in range(120)])
    agents = Agents(backend_db)
    with meter.measure() as seen:
        first = agents.list(status=AgentStatus.QUEUED, limit=25)
        second = agents.list(status=AgentStatus.QUEUED, limit=25, cursor=first.next_cursor)
    assert [a.name for a in first.items + second.items] == [f"Agent {n:03d}" for n in range(50)]
    # One Query of each partition a page (names are not shared here), none of the table.
    assert seen.calls == seen.calls_of("Query") == 2 * keys.STATUS_SHARDS


def test_filtered_status_lists_page_without_loss_or_repeat(backend_db):
    made = roster_with_equal_names(backend_db)
    french = put_agents(
        backend_db,
        AgentStatus.QUEUED,
        [f"Agent {n:02d}" for n in range(0, 30, 3)],
        skills={"language": ["French"], "gender": ["M"]},
    )
    assert_pages_forward_and_back(backend_db, french, 3, status=AgentStatus.QUEUED, skill=("language", "French"))
    named = [a for a in made + french if "am" in a.name.lower()]
    assert_pages_forward_and_back(backend_db, named, 4, status=AgentStatus.QUEUED, search="am")


def test_a_sparse_filter_pages_within_its_rounds_without_loss(moto_db, monkeypatch):
    from queues_app.agents import listing

    monkeypatch.setattr(listing, "FILTERED_READ", 3)  # a few agents a Query, so reads stop early
    made = roster_with_equal_names(moto_db)
    agents = Agents(moto_db)
    wanted = sorted((a for a in made if "z" in a.name.lower()), key=order)
    found, cursor, pages = [], None, 0
    while True:
        with meter.measure() as seen:
            page = agents.list(status=AgentStatus.QUEUED, search="z", cursor=cursor, limit=10, max_reads=2)
        assert seen.calls_of("Query") <= 2 * keys.STATUS_SHARDS
        found += page.items
        pages += 1
        cursor = page.next_cursor
        if not cursor:
            break
    assert pages > 1  # short pages, ending where every partition was read up to
    assert [a.name for a in found] == ["Zed", "Zoe"]
    assert sorted(a.agent_id for a in found) == sorted(a.agent_id for a in wanted)


def test_counts_per_status_sum_the_partitions_and_cap(moto_db):
    put_agents(moto_db, AgentStatus.QUEUED, [f"Q {n}" for n in range(30)])
    put_agents(moto_db, AgentStatus.WRAP_UP, [f"W {n}" for n in range(3)])
    agents = Agents(moto_db)
    with meter.measure() as seen:
        counts = agents.count_by_status(cap=1000)
    assert counts[AgentStatus.QUEUED] == (30, False)
    assert counts[AgentStatus.WRAP_UP] == (3, False)
    assert counts[AgentStatus.ATTENDING] == (0, False)
    assert seen.calls_of("Query") == len(AgentStatus.ALL) * keys.STATUS_SHARDS
    assert agents.count_by_status(cap=30)[AgentStatus.QUEUED] == (30, True)  # reached: "30+"
    assert agents.count_by_status(cap=10)[AgentStatus.QUEUED] == (10, True)
    assert agents.count(status=AgentStatus.QUEUED, cap=10) == (10, True)
    assert agents.count(status=AgentStatus.QUEUED, search="q 1") == (11, False)  # Q 1, Q 10..Q 19
    assert agents.count(status=AgentStatus.WRAP_UP, skill=("language", "Spanish")) == (3, False)
    assert agents.count(status=AgentStatus.WRAP_UP, skill=("language", "French")) == (0, False)


def test_logged_in_reads_every_partition_of_every_status_but_offline(moto_db):
    queued = put_agents(moto_db, AgentStatus.QUEUED, [f"Q {n}" for n in range(20)])
    attending = put_agents(moto_db, AgentStatus.ATTENDING, [f"A {n}" for n in range(5)])
    put_agents(moto_db, AgentStatus.OFFLINE, [f"O {n}" for n in range(5)])
    agents, more = Agents(moto_db).logged_in()
    assert sorted(a.agent_id for a in agents) == sorted(a.agent_id for a in queued + attending)
    assert not more
    _, capped = Agents(moto_db).logged_in(cap=1)
    assert capped


def status_q_of(db, agent_id: str) -> tuple[str, str]:
    item = unmarshal(db.call("get_item", TableName=db.table("callcenter"), Key=marshal(keys.agent(agent_id)))["Item"])
    return item["status"], item["status_q"]


def test_every_change_of_status_moves_status_q_with_it(moto_db):
    from queues_app.monitoring.invariants import check_once

    router = CallCenter(moto_db)
    ana = router.agents.create("Ana", SKILLS)
    bo = router.agents.create("Bo", SKILLS)
    steps = []

    def note(agent_id: str) -> None:
        status, status_q = status_q_of(moto_db, agent_id)
        assert status_q == keys.status_partition(status, agent_id)
        steps.append(status)

    note(ana.agent_id)  # created offline
    router.make_available(ana.agent_id)  # queued
    note(ana.agent_id)
    router.create_call({"language": "Spanish", "gender": "F"})  # assigned from the queue
    note(ana.agent_id)
    router.release(ana.agent_id, then=AgentStatus.WRAP_UP)
    note(ana.agent_id)
    waiting, _ = router.create_call({"language": "Spanish", "gender": "F"})  # nobody queued: waits
    router.make_available(bo.agent_id)  # the free agent takes the waiting caller at once
    note(bo.agent_id)
    router.release(bo.agent_id, then="queue")  # back to the queue
    note(bo.agent_id)
    router.log_off(bo.agent_id)
    note(bo.agent_id)
    router.log_off(ana.agent_id)
    note(ana.agent_id)
    assert steps == ["offline", "queued", "attending", "wrap_up", "attending", "queued", "offline", "offline"]
    assert router.get_call(waiting.call_id).agent_id == bo.agent_id
    assert check_once(moto_db, router.catalog).ok
    assert [a.name for a in router.agents.list(status=AgentStatus.OFFLINE).items] == ["Ana", "Bo"]


def test_a_status_q_that_disagrees_with_the_status_is_an_invariant_violation(moto_db):
    from queues_app.monitoring.invariants import check_once

    router = CallCenter(moto_db)
    ana = router.agents.create("Ana", SKILLS)
    moto_db.call(
        "update_item",
        TableName=moto_db.table("callcenter"),
        Key=marshal(keys.agent(ana.agent_id)),
        UpdateExpression="SET status_q = :q",
        ExpressionAttributeValues=marshal({":q": keys.status_partition(AgentStatus.QUEUED, ana.agent_id)}),
    )
    violations = check_once(moto_db, router.catalog).violations
    assert [v.check for v in violations] == ["status_q"]


def test_calls_in_progress_page_through_the_attending_partitions(backend_db):
    router = CallCenter(backend_db)
    made = [router.agents.create(f"Agent {n:02d}", SKILLS) for n in range(30)]
    for agent in made:
        router.make_available(agent.agent_id)
    calls = [router.create_call({"language": "Spanish", "gender": "F"})[0] for _ in range(23)]
    assert all(c.agent_id for c in calls)
    seen, cursor = [], None
    while True:
        page = router.calls.in_progress(cursor=cursor, limit=4)
        seen += [c.call_id for c in page.items]
        cursor = page.next_cursor
        if not cursor:
            break
    assert sorted(seen) == sorted(c.call_id for c in calls) and len(seen) == len(set(seen))
    found = router.calls.find_by_prefix(calls[0].call_id[:6])
    assert calls[0].call_id in [c.call_id for c in found.calls]
    assert found.searched["assigned"][0] == 23


@pytest.mark.parametrize("cursor", ["before", "cursor"])
def test_a_cursor_of_the_list_of_all_agents_is_refused_by_a_status_list(moto_db, cursor):
    from queues_app.ddb import errors

    put_agents(moto_db, AgentStatus.QUEUED, [f"Agent {n}" for n in range(4)])
    agents = Agents(moto_db)
    everyone = agents.list(limit=2)
    with pytest.raises(errors.InvalidRequest):
        agents.list(status=AgentStatus.QUEUED, **{cursor: everyone.next_cursor})
