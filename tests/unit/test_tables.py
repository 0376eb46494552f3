"""Table definitions and the dynamo_tables command, on moto."""

import io

import pytest
from django.core.management import CommandError, call_command

from queues_app import upgrades
from queues_app.ddb import errors, schema
from queues_app.ddb.tables import TABLES
from queues_app.upgrades import callcenter
from tests.helpers.old_layouts import (
    AGENT_FIELDS,
    BEFORE_STEPS_INDEXES,
    OLDER_INDEXES,
    PREVIOUS_INDEXES,
    SHARDED_INDEXES,
    make_old_style,
    without_status_partition,
)


def test_create_is_idempotent(moto_empty):
    first = schema.create_tables(moto_empty)
    assert sorted(first) == sorted(moto_empty.table(n) for n in TABLES)
    assert schema.create_tables(moto_empty) == []
    assert schema.missing_tables(moto_empty) == []


def test_describe_shows_keys_and_item_counts(moto_db):
    out = io.StringIO()
    call_command("dynamo_tables", "describe", "--exact", stdout=out)
    text = out.getvalue()
    assert "test-callcenter" in text
    assert "pk (HASH), sk (RANGE)" in text
    assert "items:    0 (exact)" in text
    assert "ttl:" in text


def test_describe_reports_missing_tables(moto_empty):
    out = io.StringIO()
    with pytest.raises(CommandError, match="table.s. missing"):
        call_command("dynamo_tables", "describe", stdout=out)
    assert "missing (run `dynamo_tables create`)" in out.getvalue()


def test_delete_needs_confirmation_when_not_asked_interactively(moto_db, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    with pytest.raises(CommandError, match="--yes"):
        call_command("dynamo_tables", "delete")
    assert schema.missing_tables(moto_db) == []


def test_delete_with_yes_removes_every_table(moto_db):
    call_command("dynamo_tables", "delete", "--yes", stdout=io.StringIO())
    assert sorted(schema.missing_tables(moto_db)) == sorted(moto_db.table(n) for n in TABLES)


def test_create_command_reports_what_it_did(moto_empty):
    out = io.StringIO()
    call_command("dynamo_tables", "create", stdout=out)
    assert "created test-callcenter" in out.getvalue()
    out = io.StringIO()
    call_command("dynamo_tables", "create", stdout=out)
    assert "exists  test-callcenter" in out.getvalue()


@pytest.mark.parametrize(
    "layout, added, deleted",
    [
        (OLDER_INDEXES, ["agents_by_status_since", "agents_by_name", "waiting_by_step"], ["by_status", "by_name"]),
        (PREVIOUS_INDEXES, ["agents_by_status_since", "waiting_by_step"], ["agents_by_status"]),
        (SHARDED_INDEXES, ["agents_by_status_since", "waiting_by_step"], ["agents_by_status_shard"]),
        (BEFORE_STEPS_INDEXES, ["waiting_by_step"], []),
    ],
    ids=[
        "before agents had their own indexes",
        "before the status index was spread",
        "before the status index projected since when and why",
        "before routing steps",
    ],
)
def test_create_adds_the_indexes_an_older_table_lacks_and_deletes_the_ones_it_replaced(
    moto_empty, monkeypatch, layout, added, deleted
):
    import dataclasses

    from queues_app.ddb import tables

    older = dataclasses.replace(
        tables.CALLCENTER, indexes=tuple(tables.Index(*index) for index in layout), retired_indexes=()
    )
    monkeypatch.setitem(tables.TABLES, "callcenter", older)
    schema.create_tables(moto_empty)
    monkeypatch.setitem(tables.TABLES, "callcenter", tables.CALLCENTER)
    lines = []
    schema.create_tables(moto_empty, log=lines.append)
    described = moto_empty.call("describe_table", TableName=moto_empty.table("callcenter"))["Table"]
    assert sorted(g["IndexName"] for g in described["GlobalSecondaryIndexes"]) == sorted(
        index.name for index in tables.CALLCENTER.indexes
    )
    assert [line for line in lines if "index" in line] == [
        *(f"added index {name} to test-callcenter" for name in added),
        *(f"deleted index {name} of test-callcenter" for name in deleted),
    ]  # the replacements first
    again: list[str] = []
    schema.create_tables(moto_empty, log=again.append)
    assert not [line for line in again if "index" in line]


def test_the_status_index_projects_what_a_status_list_shows():
    from queues_app.ddb import tables

    (index,) = [i for i in tables.CALLCENTER.indexes if i.name == "agents_by_status_since"]
    assert (index.partition_key, index.sort_key) == ("status_q", "name_lower")
    # The old index's key was the status, projected without being listed; this one's is not.
    assert set(index.include) == {*AGENT_FIELDS, "status", "status_since", "reason"}


def test_callers_waiting_in_the_old_single_partition_are_moved_into_theirs(moto_db):
    from queues_app.centre.call_center import CallCenter
    from queues_app.monitoring.invariants import check_once

    router = CallCenter(moto_db)
    call, _ = router.create_call({"language": "Spanish", "gender": "F"})
    make_old_style(moto_db, router, call)
    assert router.line.longest_waiting_since() is None  # not in the line's indexes
    assert router.line.heads_for({"language": ["Spanish"], "gender": ["F"]}) == []
    assert [v.check for v in check_once(moto_db, router.catalog).violations] == ["line"]

    assert callcenter.waiting_line_by_preferences(router.table) == 1
    assert router.line.longest_waiting_since() == call.arrived_at
    assert [h["call_id"] for h in router.line.heads_for({"language": ["Spanish"], "gender": ["F"]})] == [call.call_id]
    assert callcenter.waiting_line_by_preferences(router.table) == 0
    assert check_once(moto_db, router.catalog).ok


def test_waiting_counts_kept_in_one_copy_get_their_other_copies_from_create(moto_db):
    from queues_app.centre import keys
    from queues_app.centre.call_center import CallCenter
    from queues_app.ddb.codec import marshal
    from queues_app.monitoring.invariants import check_once

    router = CallCenter(moto_db)
    for _ in range(3):
        router.create_call({"language": "Spanish", "gender": "F"})
    router.create_call({"language": "French", "gender": None})
    wanted = [("Spanish", "F"), ("French", "*")]
    for partition in wanted:  # as an earlier version kept them: copy 0 only
        for copy in range(1, keys.WAIT_COUNT_COPIES):
            key = keys.waiting_count(partition, copy)
            moto_db.call("delete_item", TableName=moto_db.table("callcenter"), Key=marshal(key))
    assert {v.check for v in check_once(moto_db, router.catalog).violations} == {"line"}

    out = io.StringIO()
    call_command("dynamo_tables", "create", stdout=out)
    written = len(wanted) * (keys.WAIT_COUNT_COPIES - 1)
    assert f"{written} copies of the waiting counts written." in out.getvalue()
    assert check_once(moto_db, router.catalog).ok
    for copy in range(keys.WAIT_COUNT_COPIES):
        found = moto_db.call(
            "get_item", TableName=moto_db.table("callcenter"), Key=marshal(keys.waiting_count(("Spanish", "F"), copy))
        )
        assert found["Item"]["waiting"] == {"N": "3"}
    assert callcenter.waiting_count_copies(router.table) == 0


def test_every_copy_of_a_waiting_count_moves_with_the_line_and_any_one_is_read(moto_db, monkeypatch):
    from queues_app.centre import keys
    from queues_app.centre.call_center import CallCenter
    from queues_app.ddb.codec import marshal
    from queues_app.routing import line as waiting

    router = CallCenter(moto_db)
    calls = [router.create_call({"language": "English", "gender": "M"})[0] for _ in range(2)]
    router.abandon(calls[0].call_id)
    table = moto_db.table("callcenter")
    for copy in range(keys.WAIT_COUNT_COPIES):
        item = moto_db.call("get_item", TableName=table, Key=marshal(keys.waiting_count(("English", "M"), copy)))
        assert item["Item"]["waiting"] == {"N": "1"}
    # A reader reads the copy it picks: set copy 1 apart to see which was read.
    moto_db.call(
        "update_item",
        TableName=table,
        Key=marshal(keys.waiting_count(("English", "M"), 1)),
        UpdateExpression="SET waiting = :n",
        ExpressionAttributeValues={":n": {"N": "5"}},
    )
    for copy, expected in ((0, 1), (1, 5)):
        monkeypatch.setattr(waiting.random, "randrange", lambda n, copy=copy: copy)
        assert router.line.counts([("English", "M")]) == {("English", "M"): expected}


# --- waiting for tables, counting, listing -------------------------------------------


def test_creating_waits_with_botocores_waiter_and_the_meter_sees_it(moto_empty):
    from queues_app.ddb import meter

    with meter.measure() as seen:
        schema.create_tables(moto_empty)
    assert seen.calls_of("CreateTable") == len(TABLES)
    assert seen.calls_of("DescribeTable") >= len(TABLES)


def _stubbed(responses, monkeypatch):
    """A Dynamo whose client answers DescribeTable with `responses`, in order."""
    import boto3
    from botocore.stub import Stubber

    from queues_app.ddb import client as client_module

    raw = boto3.client("dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")
    stubber = Stubber(raw)
    for response in responses:
        if isinstance(response, str):
            stubber.add_client_error("describe_table", service_error_code=response)
        else:
            stubber.add_response("describe_table", {"Table": response})
    stubber.activate()
    monkeypatch.setattr("botocore.waiter.time.sleep", lambda seconds: None)
    monkeypatch.setattr(schema.time, "sleep", lambda seconds: None)
    return client_module.Dynamo(raw, prefix="test-"), stubber


def test_a_table_that_stays_creating_is_unavailable_after_the_timeout(monkeypatch):
    db, stubber = _stubbed([{"TableName": "tbl", "TableStatus": "CREATING"}] * 3, monkeypatch)
    with pytest.raises(errors.Unavailable, match="table tbl is still CREATING after 3s"):
        schema._wait_active(db, "tbl", timeout=3)
    stubber.assert_no_pending_responses()


def test_a_refused_describe_while_waiting_is_a_domain_error(monkeypatch):
    db, _ = _stubbed(["AccessDeniedException"], monkeypatch)
    with pytest.raises(errors.Unavailable, match="refused the credentials"):
        schema._wait_active(db, "tbl", timeout=3)


def test_a_new_index_is_waited_for_after_its_table(monkeypatch):
    def table(status, index_status):
        return {
            "TableName": "tbl",
            "TableStatus": status,
            "GlobalSecondaryIndexes": [{"IndexName": "idx", "IndexStatus": index_status}],
        }

    db, stubber = _stubbed(
        [
            table("UPDATING", "CREATING"),
            table("ACTIVE", "CREATING"),
            table("ACTIVE", "CREATING"),
            table("ACTIVE", "ACTIVE"),
        ],
        monkeypatch,
    )
    schema._wait_active(db, "tbl", timeout=30, index="idx")
    stubber.assert_no_pending_responses()


def test_count_items_reads_every_page(moto_db, monkeypatch):
    from queues_app.ddb import batch

    table = moto_db.table("tasks")
    batch.put_items(moto_db, table, [{"task_id": f"t-{i}"} for i in range(30)])
    pages = []
    real_pages = moto_db.pages

    def small_pages(operation, **params):
        for page in real_pages(operation, Limit=7, **params):
            pages.append(page["Count"])
            yield page

    monkeypatch.setattr(moto_db, "pages", small_pages)
    assert schema.count_items(moto_db, table) == 30
    assert len(pages) >= 5


def test_missing_tables_reads_every_page_of_table_names(moto_db):
    from queues_app.ddb import meter

    for n in range(3):
        moto_db.call(
            "create_table",
            TableName=f"other-{n}",
            BillingMode="PAY_PER_REQUEST",
            KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        )
    with meter.measure() as seen:
        assert schema.missing_tables(moto_db) == []
    assert seen.calls_of("ListTables") == 1
    moto_db.call("delete_table", TableName=moto_db.table("audit"))
    assert schema.missing_tables(moto_db) == [moto_db.table("audit")]


# --- the roster, the queue metadata and the queues, spread over partitions ------------------


def partitions_holding(db, pks: list[str]) -> dict[str, int]:
    table = db.table("callcenter")
    counts = {}
    for pk in pks:
        response = db.call(
            "query",
            TableName=table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
            Select="COUNT",
        )
        if response["Count"]:
            counts[pk] = response["Count"]
    return counts


def test_agents_queue_metadata_and_queues_are_spread_over_partitions(moto_db):
    from queues_app.centre import keys
    from queues_app.centre.call_center import CallCenter

    router = CallCenter(moto_db)
    agents = [router.agents.create(f"Agent {n}", {"language": ["French"], "gender": ["M"]}) for n in range(40)]
    for agent in agents:
        router.make_available(agent.agent_id)
    for _ in range(10):
        router.create_call({"language": "French", "gender": "M"})

    roster = partitions_holding(moto_db, keys.agent_partitions())
    assert sum(roster.values()) == 40 and len(roster) > 4
    assert partitions_holding(moto_db, [keys.AGENTS_PK]) == {}
    metadata = partitions_holding(moto_db, keys.queue_meta_partitions())
    assert len(metadata) > 4  # 50 changes of one queue, each on a shard picked at random
    assert partitions_holding(moto_db, [keys.QUEUES_PK]) == {}
    queue = partitions_holding(moto_db, keys.queue_partitions(("French", "M")))
    assert sum(queue.values()) == 30 and len(queue) > 2  # 30 tokens hashed over 4 sub-queues
    assert partitions_holding(moto_db, [keys.queue_name(("French", "M"))]) == {}

    (french_m,) = [q for q in router.queues() if q.combination == ("French", "M")]
    assert (french_m.depth, french_m.version) == (30, 50)
    assert router.agents.any_exist()


def make_old_layout(db, router) -> tuple[str, str]:
    """A queued agent, its message and its queue's metadata as an earlier version wrote
    them: the agent in the single AGENTS partition, the message in the queue's single
    partition, the metadata in the single QUEUES partition."""
    from queues_app.agents.roster import agent_to_item
    from queues_app.centre import keys
    from queues_app.ddb.codec import marshal

    table = db.table("callcenter")
    agent = router.agents.create("Old Timer", {"language": ["Spanish"], "gender": ["F"]})
    router.make_available(agent.agent_id)
    current = router.agents.get(agent.agent_id)
    db.call("delete_item", TableName=table, Key=marshal(keys.agent(agent.agent_id)))
    old_agent = {**agent_to_item(current), "queued_at": current.queued_at, "queue_token": current.queue_token}
    db.call("put_item", TableName=table, Item=marshal({**old_agent, "pk": keys.AGENTS_PK}))
    for pk in keys.queue_meta_partitions():
        db.call("delete_item", TableName=table, Key=marshal({"pk": pk, "sk": "Q#Spanish#F"}))
    old_meta = {"pk": keys.QUEUES_PK, "sk": "Q#Spanish#F", "depth": 1, "version": 7, "combination": ["Spanish", "F"]}
    db.call("put_item", TableName=table, Item=marshal(old_meta))
    message = keys.queue_message(("Spanish", "F"), current.queue_token)
    item = db.call("get_item", TableName=table, Key=marshal(message), ConsistentRead=True)["Item"]
    db.call("delete_item", TableName=table, Key=marshal(message))
    db.call("put_item", TableName=table, Item={**item, "pk": {"S": "Q#Spanish#F"}})
    return agent.agent_id, current.queue_token or ""


def test_agents_metadata_and_messages_in_the_old_single_partitions_are_moved_by_create(moto_db):
    from queues_app.centre import keys
    from queues_app.centre.call_center import CallCenter
    from queues_app.monitoring.invariants import check_once

    router = CallCenter(moto_db)
    agent_id, token = make_old_layout(moto_db, router)
    with pytest.raises(errors.NotFound):
        router.agents.get(agent_id)

    out = io.StringIO()
    call_command("dynamo_tables", "create", stdout=out)
    assert "1 agent(s) moved into the roster's partitions." in out.getvalue()
    assert "1 queue metadata item(s) spread over the metadata shards." in out.getvalue()
    assert "1 queued agent message(s) moved into their sub-queues." in out.getvalue()
    assert partitions_holding(moto_db, ["Q#Spanish#F"]) == {}
    assert partitions_holding(moto_db, keys.queue_partitions(("Spanish", "F"))) == {
        keys.queue_message(("Spanish", "F"), token)["pk"]: 1
    }

    moved = router.agents.get(agent_id)
    assert (moved.name, moved.status, moved.queue_token) == ("Old Timer", "queued", token)
    (spanish_f,) = [q for q in router.queues() if q.combination == ("Spanish", "F")]
    assert (spanish_f.depth, spanish_f.version) == (1, 7)
    assert check_once(moto_db, router.catalog).ok
    call, _ = router.create_call({"language": "Spanish", "gender": "F"})
    assert call.agent_id == agent_id  # the moved agent is matched from its queue as before
    assert partitions_holding(moto_db, keys.queue_partitions(("Spanish", "F"))) == {}  # and dequeued
    assert check_once(moto_db, router.catalog).ok

    assert [step.run(router.table) for step in upgrades.STEPS] == [0] * len(upgrades.STEPS)  # each step once


def test_agents_without_a_status_partition_are_given_one_by_create(moto_db):
    from queues_app.centre.call_center import CallCenter
    from queues_app.monitoring.invariants import check_once

    router = CallCenter(moto_db)
    skills = {"language": ["Spanish"], "gender": ["F"]}
    queued = [router.agents.create(f"Queued {n}", skills) for n in range(12)]
    for agent in queued:
        router.make_available(agent.agent_id)
    offline = [router.agents.create(f"Offline {n}", skills) for n in range(3)]
    for agent in queued[:10] + offline:
        without_status_partition(moto_db, agent.agent_id)
    assert [a.agent_id for a in router.agents.list(status="queued").items] == [a.agent_id for a in queued[10:]]
    assert router.agents.count(status="queued") == (2, False)
    assert router.agents.count(status="offline") == (0, False)
    assert {v.check for v in check_once(moto_db, router.catalog).violations} == {"status_q"}

    out = io.StringIO()
    call_command("dynamo_tables", "create", stdout=out)
    assert "13 agent(s) given their partition of the status index." in out.getvalue()

    assert [a.name for a in router.agents.list(status="queued").items] == sorted(a.name for a in queued)
    assert router.agents.count(status="queued") == (12, False)
    assert [a.name for a in router.agents.list(status="offline").items] == sorted(a.name for a in offline)
    assert check_once(moto_db, router.catalog).ok
    assert callcenter.status_partitions(router.table) == 0


def test_a_status_partition_left_behind_by_an_older_process_is_mended(moto_db):
    from queues_app.centre import keys
    from queues_app.centre.call_center import CallCenter
    from queues_app.ddb.codec import marshal

    router = CallCenter(moto_db)
    ana = router.agents.create("Ana", {"language": ["Spanish"], "gender": ["F"]})
    router.make_available(ana.agent_id)
    # A process of the earlier version logs her off: the status changes, status_q does not.
    moto_db.call(
        "update_item",
        TableName=moto_db.table("callcenter"),
        Key=marshal(keys.agent(ana.agent_id)),
        UpdateExpression="SET #s = :offline",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues=marshal({":offline": "offline"}),
    )
    assert [a.status for a in router.agents.list(status="queued").items] == ["offline"]
    assert callcenter.status_partitions(router.table) == 1
    assert router.agents.list(status="queued").items == []
    assert [a.name for a in router.agents.list(status="offline").items] == ["Ana"]
