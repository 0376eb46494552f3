"""Tables an earlier release left, upgraded by `dynamo_tables create` and used by this
version: the callcenter table of release 0.3.0, written by that release's own code
(scripts/tables-of-release.py: its demo data, a release to wrap-up, a release back to
the queue, a log-off) and kept in tests/fixtures/tables/."""

import io
import json
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command

from queues_app import upgrades
from queues_app.agents.records import AgentStatus
from queues_app.calls.records import CallStatus
from queues_app.centre import keys
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import batch, schema
from queues_app.ddb.codec import unmarshal
from queues_app.ddb.tables import TABLES
from queues_app.monitoring.invariants import check_once

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tables"


def load_release(db, release: str) -> list[dict]:
    """The release's callcenter table (its own indexes and items) and this version's
    other tables, as a deployment of that release has them."""
    document = json.loads((FIXTURES / f"{release}.json").read_text())
    definition = document["table"]
    db.call(
        "create_table",
        TableName=db.table("callcenter"),
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=definition["AttributeDefinitions"],
        KeySchema=definition["KeySchema"],
        GlobalSecondaryIndexes=definition["GlobalSecondaryIndexes"],
    )
    for logical in TABLES:
        if logical != "callcenter":
            db.call("create_table", **schema.create_table_params(TABLES[logical], db.table(logical)))
    items = [unmarshal(item) for item in document["items"]]
    batch.put_items(db, db.table("callcenter"), items)
    return items


@pytest.fixture
def release_030(moto_empty, settings):
    # The audit trail's step reads each day of the retention: a short one keeps it quick.
    settings.SWITCHBOARD_AUDIT_RETENTION_DAYS = 2
    return load_release(moto_empty, "0.3.0")


def test_the_fixture_is_what_release_0_3_0_wrote(release_030):
    agents = Counter(i["status"] for i in release_030 if i["sk"].startswith(keys.AGENT_PREFIX))
    calls = Counter(i["status"] for i in release_030 if i["sk"] == keys.CALL_SK)
    assert agents == {"offline": 11, "attending": 7, "queued": 5, "wrap_up": 1}
    assert calls == {"assigned": 7, "ended": 2, "waiting": 1}
    assert not any(i["pk"] == keys.LAYOUT["pk"] for i in release_030)  # it numbered no upgrade step


def test_create_upgrades_a_0_3_0_table_and_this_version_reads_and_changes_it(moto_empty, release_030):
    db = moto_empty
    out = io.StringIO()
    call_command("dynamo_tables", "create", stdout=out)
    assert upgrades.applied(db) == upgrades.LATEST
    assert check_once(db).ok, check_once(db).violations

    center = CallCenter(db)
    stored = {i["agent_id"]: i for i in release_030 if i["sk"].startswith(keys.AGENT_PREFIX)}
    for status in (AgentStatus.OFFLINE, AgentStatus.ATTENDING, AgentStatus.QUEUED, AgentStatus.WRAP_UP):
        listed = center.agents.list(status=status, limit=50).items
        assert sorted(a.agent_id for a in listed) == sorted(i for i, a in stored.items() if a["status"] == status)
    waiting = [i for i in release_030 if i["sk"] == keys.CALL_SK and i["status"] == CallStatus.WAITING]
    line, _ = center.line.waiting_calls(limit=10)
    assert [item["call_id"] for item in line] == [w["call_id"] for w in waiting]

    # Changes made by this version on what 0.3.0 wrote: every attending agent's call ends,
    # every agent in wrap-up comes back, and a new caller is matched or waits; nothing breaks.
    for agent in center.agents.list(status=AgentStatus.ATTENDING, limit=50).items:
        center.release(agent.agent_id, "queue", call_id=agent.call_id)
    for agent in center.agents.list(status=AgentStatus.WRAP_UP, limit=50).items:
        center.make_available(agent.agent_id, expected_version=agent.version)
    call, _ = center.create_call({"language": "English", "gender": None})
    assert call.status in (CallStatus.ASSIGNED, CallStatus.WAITING)
    assert check_once(db).ok, check_once(db).violations


def test_a_second_create_applies_no_step_again(moto_empty, release_030, monkeypatch):
    call_command("dynamo_tables", "create", stdout=io.StringIO())
    ran = []
    counted = tuple(
        upgrades.Step(s.number, s.moved, lambda table, n=s.number: ran.append(n) or 0) for s in upgrades.STEPS
    )
    monkeypatch.setattr(upgrades, "STEPS", counted)
    assert upgrades.upgrade(CallCenter(moto_empty).table) == []
    assert ran == []
    monkeypatch.setattr(upgrades, "applied", lambda db: upgrades.LATEST - 2)  # two steps behind: those two run
    assert [done.step.number for done in upgrades.upgrade(CallCenter(moto_empty).table)] == ran == [6, 7]


def test_the_days_of_an_earlier_versions_audit_trail_are_marked_and_read(moto_db, settings):
    from datetime import UTC, datetime

    from queues_app.audit.store import AuditTrail
    from tests.helpers.old_layouts import an_unmarked_audit_entry

    settings.SWITCHBOARD_AUDIT_RETENTION_DAYS = 8  # each day of it read once: a short one keeps it quick
    today = datetime.now(UTC)
    old = [an_unmarked_audit_entry(moto_db, moment=today - timedelta(days=n)) for n in (0, 3, 7)]
    trail = AuditTrail(moto_db)
    assert trail.recent().entries == []  # days nobody marked are not read
    out = io.StringIO()
    call_command("dynamo_tables", "create", stdout=out)
    assert "3 day(s) of the audit trail marked as having entries" in out.getvalue()
    assert [entry.entry_id for entry in trail.recent().entries] == [item["entry_id"] for item in old]
