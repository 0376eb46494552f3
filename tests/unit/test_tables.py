"""Table definitions and the dynamo_tables command, on moto."""

import io

import pytest
from django.core.management import CommandError, call_command

from queues_app.dynamo import schema
from queues_app.dynamo.tables import TABLES


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
