"""Table definitions and the dynamo_tables command, on moto."""

import io

import pytest
from django.core.management import CommandError, call_command

from queues_app.ddb import schema
from queues_app.ddb.tables import TABLES


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


def test_create_adds_indexes_that_an_older_table_lacks(moto_empty, monkeypatch):
    import dataclasses

    from queues_app.ddb import tables

    older = dataclasses.replace(tables.CALLCENTER, indexes=())
    monkeypatch.setitem(tables.TABLES, "callcenter", older)
    schema.create_tables(moto_empty)
    monkeypatch.setitem(tables.TABLES, "callcenter", tables.CALLCENTER)
    lines = []
    schema.create_tables(moto_empty, log=lines.append)
    described = moto_empty.call("describe_table", TableName=moto_empty.table("callcenter"))["Table"]
    assert sorted(g["IndexName"] for g in described["GlobalSecondaryIndexes"]) == ["by_status", "waiting_by_arrival"]
    assert "added index by_status to test-callcenter" in lines


def test_waiting_callers_from_before_the_index_are_filled_in(moto_db):
    from queues_app.agents import keys
    from queues_app.ddb.codec import marshal
    from queues_app.agents.router import Router

    old = {"pk": keys.WAITING_PK, "sk": "9#2026-11-20T10:00:00.000000Z#c-old", "call_id": "c-old",
           "arrived_at": "2026-11-20T10:00:00.000000Z", "priority": 0}
    moto_db.call("put_item", TableName=moto_db.table("callcenter"), Item=marshal(old))
    router = Router(moto_db)
    assert router.longest_waiting_since() is None  # not in the index yet
    assert router.fill_waiting_index() == 1
    assert router.longest_waiting_since() == "2026-11-20T10:00:00.000000Z"
    assert router.fill_waiting_index() == 0
