"""The audit trail as people read it: what the queues do on their own is on the items it
concerns (system events), before/after in the domain's words with the raw fields
behind a toggle, search by id, prefix or name, filters, and an agent's day."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.audit.day import agent_day
from queues_app.audit.records import TrailEntry, TrailFilter, target
from queues_app.audit.store import AUDIT_SHARDS, AuditTrail
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import batch
from queues_app.ddb.client import default
from queues_app.operations import Operations
from queues_app.operations.system import RecordedShipmentQueue, RecordedTaskQueue
from queues_app.shipments.queue import ShipmentQueue, ShipmentStatus
from queues_app.tasks.queue import TaskQueue
from queues_app.tasks.records import ExpiryPolicy

ACTOR = "sam-supervisor"


def agent(name="Ana", languages=("Spanish",), gender="F"):
    return Agents().create(name, {"language": list(languages), "gender": [gender]})


def history(kind, item_id):
    return AuditTrail().for_target(target(kind, item_id)).entries


def actions(entries):
    return [(e.action, e.actor, e.source) for e in entries]


# --- what the queues do on their own ---------------------------------------------------


def test_a_caller_assigned_on_arrival_is_on_the_agents_history_too(moto_db):
    ana = agent()
    CallCenter().make_available(ana.agent_id)
    call, _ = Operations(ACTOR, "page").create_call({"language": "Spanish", "gender": "any"})
    # One event, one actor: the assignment the new call brought about is the supervisor's.
    assert actions(history("agent", ana.agent_id)) == [("agent.assigned", ACTOR, "page")]
    [taken] = history("agent", ana.agent_id)
    assert taken.call_taken == call.call_id
    assert f"took waiting call {call.call_id}" in taken.summary
    assert actions(history("call", call.call_id)) == [("call.create", ACTOR, "page")]


def test_an_agent_taking_a_waiting_caller_is_on_the_calls_history(moto_db):
    waiting, _ = CallCenter().create_call({"language": "Spanish", "gender": "any"})
    ana = agent()
    Operations(ACTOR, "page").make_available(ana.agent_id)
    [assigned] = history("call", waiting.call_id)
    assert (assigned.action, assigned.actor, assigned.source) == ("call.assigned", ACTOR, "page")
    assert assigned.described[:2] == [("status", "waiting", "assigned"), ("agent", "–", "Ana")]
    [available] = history("agent", ana.agent_id)
    assert available.summary.startswith(f"Ana took waiting call {waiting.call_id}")


def test_a_release_that_took_a_waiting_caller_says_so_and_ends_the_first_call(moto_db):
    ana = agent()
    router = CallCenter()
    router.make_available(ana.agent_id)
    first, _ = router.create_call({"language": "Spanish", "gender": "any"})
    second, _ = router.create_call({"language": "Spanish", "gender": "any"})
    assert second.status == CallStatus.WAITING
    _, took = Operations(ACTOR, "page").release(ana.agent_id, then="queue")
    assert took and took.call_id == second.call_id
    [release] = history("agent", ana.agent_id)
    assert f"took waiting call {second.call_id}" in release.summary and "then queue" not in release.summary
    assert actions(history("call", first.call_id)) == [("call.end", ACTOR, "page")]
    assert actions(history("call", second.call_id)) == [("call.assigned", ACTOR, "page")]


def test_escalation_records_the_relaxed_preferences_and_the_assignment(moto_db, settings):
    settings.SWITCHBOARD_ESCALATION = {"after_seconds": 0.01, "order": ["gender"]}
    call, _ = CallCenter().create_call({"language": "Spanish", "gender": "F"})
    carlos = agent("Carlos", gender="M")
    CallCenter().make_available(carlos.agent_id)
    import time

    time.sleep(0.05)
    call_command("escalate_callers", stdout=__import__("io").StringIO())
    entries = {e.action: e for e in history("call", call.call_id)}
    relaxed = entries["call.relaxed"]
    assert (relaxed.actor, relaxed.source) == ("escalation", "system")
    assert relaxed.described == [("preferences", "language: Spanish, gender: F", "language: Spanish, gender: any")]
    assert entries["call.assigned"].actor == "escalation"
    assert actions(history("agent", carlos.agent_id)) == [("agent.assigned", "escalation", "system")]


def test_the_worker_dead_lettering_a_shipment_puts_it_on_its_history(moto_db, settings):
    settings.SWITCHBOARD_SHIPMENT_RETRY = {"max_receives": 1}
    queue = RecordedShipmentQueue()
    shipment = queue.submit({"n": 1})
    lease = queue.receive()
    after = queue.fail(shipment.shipment_id, lease.receipt, "carrier refused")
    assert after.status == ShipmentStatus.IN_DLQ
    [entry] = history("shipment", shipment.shipment_id)
    assert (entry.action, entry.actor, entry.source) == ("shipment.dlq", "shipment worker", "system")
    assert "carrier refused" in entry.summary


def test_the_sweeper_shedding_tasks_leaves_one_entry_with_the_total(moto_db):
    TaskQueue(expiry=ExpiryPolicy(pending_seconds=-60)).create({"n": 1})
    TaskQueue(expiry=ExpiryPolicy(pending_seconds=-60)).create({"n": 2})
    report = RecordedTaskQueue().sweep_expired()
    assert report.shed == 2
    [entry] = history("queue", "tasks")
    assert (entry.action, entry.actor, entry.source) == ("tasks.shed", "task processor", "system")
    assert entry.summary.startswith("shed 2 expired tasks")


# --- before and after in the domain's words ----------------------------------------------


def test_a_priority_change_reads_as_priorities_with_the_sort_keys_left_to_the_raw_fields(moto_db):
    queue = ShipmentQueue()
    shipment = queue.enqueue(queue.create({"n": 1}, ready=True).shipment_id)
    Operations(ACTOR, "page").set_priority(shipment.shipment_id, 7)
    [entry] = history("shipment", shipment.shipment_id)
    assert ("priority", "0", "7") in entry.described
    assert all("#" not in old + new for _, old, new in entry.described)
    assert {"ready_sk", "version"} <= {name for name, _, _ in entry.internal_changes}
    assert not {"priority"} & {name for name, _, _ in entry.internal_changes}


def test_an_entry_stores_only_what_changed_and_the_status(moto_db):
    queue = ShipmentQueue()
    shipment = queue.enqueue(queue.create({"to": "Porto", "notes": "x" * 2000}, ready=True).shipment_id)
    Operations(ACTOR, "page").set_priority(shipment.shipment_id, 7)
    [entry] = history("shipment", shipment.shipment_id)
    changed = {name for name, _, _ in entry.changes}
    # The 2 KB payload did not change, so the entry does not carry it (nor anything else
    # unchanged but the status, which an item's timeline follows).
    assert set(entry.before) == set(entry.after) == changed | {"status"}
    assert "data" not in entry.after and entry.before["status"] == entry.after["status"]
    assert {"priority", "ready_sk", "version"} <= changed
    # A new item keeps all of it.
    created = AuditTrail().entry_item(
        actor="a", source="page", action="x", target="shipment:s", before=None, after={"data": {"n": 1}, "status": "q"}
    )
    assert '"data"' in created["after"]


def test_an_agent_status_reads_as_people_say_it():
    entry = TrailEntry(
        "e1",
        "2026-11-22T10:00:00.000000Z",
        ACTOR,
        "page",
        "agent.release",
        "agent:a1",
        before={"status": "attending", "call_id": "c1", "queue_token": "x#y"},
        after={"status": "wrap_up", "call_id": None, "queue_token": None},
    )
    assert entry.described == [("status", "attending", "wrap-up"), ("call", "c1", "–")]
    assert [name for name, _, _ in entry.internal_changes] == ["queue_token"]


def test_the_trail_page_keeps_the_fields_behind_a_toggle(supervisor_client, moto_db):
    queue = ShipmentQueue()
    shipment = queue.enqueue(queue.create({"n": 1}, ready=True).shipment_id)
    Operations(ACTOR, "page").set_priority(shipment.shipment_id, 3)
    html = supervisor_client.get(reverse("audit")).content.decode()
    shown, details = html.split('<details class="entry-details">', 1)
    assert "Priority set to 3" in shown.rsplit('<p class="sentence">', 1)[1]  # the sentence says it
    assert "ready_sk" not in shown and "<th>priority</th>" not in shown
    details = details.split("</details>", 1)[0]
    assert "<th>priority</th>" in details and "<code>ready_sk</code>" in details


# --- search and filters ------------------------------------------------------------------


@pytest.fixture
def acted(moto_db):
    """Ana and Bea with a little history each; a call the phone system placed, given to Ana."""
    ana, bea = agent("Ana Lopez"), agent("Bea", ("French",))
    sam, api = Operations(ACTOR, "page"), Operations("phone-system", "api")
    sam.make_available(ana.agent_id)
    api.make_available(bea.agent_id)
    call, _ = api.create_call({"language": "Spanish", "gender": "any"})
    return {"ana": ana, "bea": bea, "call": call}


def page(client, **query):
    response = client.get(reverse("audit"), query)
    return response.status_code, response.content.decode()


def test_a_bare_id_finds_the_item_it_names(supervisor_client, acted):
    status, html = page(supervisor_client, target=acted["call"].call_id)
    assert status == 200
    assert f"History of call:{acted['call'].call_id}" in html
    assert 'data-action="call.create"' in html and 'data-action="agent.available"' not in html


def test_a_name_finds_the_agent(supervisor_client, acted):
    status, html = page(supervisor_client, target="lopez")
    assert status == 200
    assert f"History of agent:{acted['ana'].agent_id}" in html
    assert 'data-action="agent.assigned"' in html and 'data-action="agent.available"' in html


def test_an_id_prefix_finds_the_entries_of_the_items_it_starts(supervisor_client, acted):
    prefix = acted["bea"].agent_id[:5]
    status, html = page(supervisor_client, target=prefix)
    assert status == 200
    assert "Items whose id starts with" in html
    assert 'data-entry="' in html and f"agent {prefix}" in html


def test_filters_by_who_where_from_and_action(moto_db, acted):
    trail = AuditTrail()
    by_sam = trail.recent(filters=TrailFilter(actor=ACTOR)).entries
    assert {e.actor for e in by_sam} == {ACTOR} and len(by_sam) == 1
    by_api = trail.recent(filters=TrailFilter(source="api")).entries
    assert sorted(actions(by_api)) == [
        ("agent.assigned", "phone-system", "api"),
        ("agent.available", "phone-system", "api"),
        ("call.create", "phone-system", "api"),
    ]
    calls = trail.recent(filters=TrailFilter(action="call.")).entries
    assert [e.action for e in calls] == ["call.create"]
    ana = trail.for_target(target("agent", acted["ana"].agent_id), filters=TrailFilter(source="api")).entries
    assert actions(ana) == [("agent.assigned", "phone-system", "api")]


def test_a_time_range_reads_only_entries_inside_it(moto_db, acted):
    trail = AuditTrail()
    everything = trail.recent().entries
    newest, oldest = everything[0].moment, everything[-1].moment
    assert trail.recent(filters=TrailFilter(since=newest + timedelta(seconds=1))).entries == []
    assert trail.recent(filters=TrailFilter(until=oldest - timedelta(seconds=1))).entries == []
    assert len(trail.recent(filters=TrailFilter(since=oldest, until=newest)).entries) == len(everything)


def test_the_page_filters_and_says_what_is_wrong_with_a_filter(supervisor_client, acted):
    status, html = page(supervisor_client, source="page")
    assert status == 200 and 'data-action="agent.available"' in html and 'data-action="agent.assigned"' not in html
    status, html = page(supervisor_client, since="2026-11-22T10:00", until="2026-11-21T10:00")
    assert status == 400 and "The start of the time range is after its end." in html
    status, _ = page(supervisor_client, source="carrier-pigeon")
    assert status == 400


def test_a_filter_that_matches_little_reads_a_bounded_number_of_pages(moto_db):
    trail = AuditTrail()
    today = datetime.now(UTC)
    items = [  # a day's worth a Query of its shards reads at once, on each of five days
        trail.entry_item(
            actor="loader", source="command", action="agent.update", target="agent:x", moment=today - timedelta(days=n)
        )
        for n in range(5)
        for _ in range(30)
    ]
    batch.put_items(default(), trail.table_name, items)
    trail.mark_days([item["at"][:10] for item in items])
    from queues_app.ddb import meter

    with meter.measure() as seen:
        result = trail.recent(filters=TrailFilter(actor="nobody"), limit=10, max_reads=3)
    assert result.entries == [] and result.next_cursor
    # The days that have entries (one Query), then three rounds, each at most one Query of
    # every partition of a day (16 shards, unsharded day).
    assert seen.calls_of("Query") <= 1 + 3 * (AUDIT_SHARDS + 1)


# --- an agent's day ------------------------------------------------------------------------


def the_day_of(trail: AuditTrail, agent: str, changes: list[tuple]) -> None:
    """Audit entries of one agent's changes on 2026-11-22: (hour, minute, before, after[, action])."""
    noon = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    entries = [
        trail.entry_item(
            actor=ACTOR,
            source="page",
            action=action[0] if action else "agent.update",
            target=f"agent:{agent}",
            before=before,
            after=after,
            moment=noon.replace(hour=hour, minute=minute),
        )
        for hour, minute, before, after, *action in changes
    ]
    batch.put_items(default(), trail.table_name, entries)


def test_an_agents_day_is_the_stretches_between_its_status_changes(moto_db):
    noon = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    trail = AuditTrail(clock=lambda: noon)
    the_day_of(
        trail,
        "a1",
        [
            (8, 0, {"status": "offline"}, {"status": "queued"}),
            (9, 0, {"status": "queued"}, {"status": "attending", "call_id": "c1"}, "agent.assigned"),
            (9, 30, {"status": "attending", "call_id": "c1"}, {"status": "wrap_up"}),
            (10, 0, {"status": "wrap_up"}, {"status": "offline"}),
        ],
    )
    day = agent_day(trail, "a1", current_status=AgentStatus.OFFLINE, current_since="2026-11-22T10:00:00.000000Z")
    assert [(s.status, s.start.hour, s.start.minute, s.seconds, s.call_id) for s in day.stretches] == [
        ("offline", 0, 0, 8 * 3600, None),
        ("queued", 8, 0, 3600, None),
        ("attending", 9, 0, 1800, "c1"),
        ("wrap_up", 9, 30, 1800, None),
        ("offline", 10, 0, 2 * 3600, None),
    ]
    assert day.totals == [("Queued", 3600), ("Attending a call", 1800), ("Wrap-up", 1800), ("Offline", 10 * 3600)]
    assert [call_id for call_id, _ in day.calls] == ["c1"]


def test_an_agents_day_shows_each_reason_for_not_ready_apart(moto_db):
    noon = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    trail = AuditTrail(clock=lambda: noon)

    the_day_of(
        trail,
        "a2",
        [
            (8, 0, {"status": "offline"}, {"status": "queued"}),
            (9, 0, {"status": "queued"}, {"status": "not_ready", "reason": "break"}),
            (9, 15, {"status": "not_ready"}, {"status": "queued", "reason": ""}),
            (10, 0, {"status": "queued"}, {"status": "not_ready", "reason": "lunch"}),
            (10, 30, {"reason": "lunch"}, {"reason": "training"}),  # not ready still, for another reason
        ],
    )
    day = agent_day(
        trail,
        "a2",
        current_status=AgentStatus.NOT_READY,
        current_since="2026-11-22T10:00:00.000000Z",
        current_reason="training",
    )
    assert [(s.label, s.start.hour, s.start.minute, s.seconds) for s in day.stretches][1:] == [
        ("Queued", 8, 0, 3600),
        ("Not ready: break", 9, 0, 900),
        ("Queued", 9, 15, 2700),
        ("Not ready: lunch", 10, 0, 1800),
        ("Not ready: training", 10, 30, 5400),
    ]
    assert day.totals == [
        ("Queued", 6300),
        ("Not ready: break", 900),
        ("Not ready: lunch", 1800),
        ("Not ready: training", 5400),
        ("Offline", 8 * 3600),
    ]


def test_an_agents_day_starts_at_the_centres_midnight(moto_db, settings):
    """In New York at 12:00 UTC (07:00 there) the day began at 05:00 UTC: an agent queued
    at 03:00 UTC (22:00 the evening before) is queued for all of today's 7 hours."""
    settings.TIME_ZONE = "America/New_York"
    noon = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    trail = AuditTrail(clock=lambda: noon)
    evening = trail.entry_item(
        actor=ACTOR,
        source="page",
        action="agent.available",
        target="agent:a3",
        before={"status": "offline"},
        after={"status": "queued"},
        moment=noon.replace(hour=3),
    )
    batch.put_items(default(), trail.table_name, [evening])
    day = agent_day(trail, "a3", current_status=AgentStatus.QUEUED, current_since="2026-11-22T03:00:00.000000Z")
    assert day.day_start == datetime(2026, 11, 22, 5, 0, tzinfo=UTC)
    assert [(s.status, s.seconds) for s in day.stretches] == [("queued", 7 * 3600)]


def test_an_agent_with_nothing_recorded_today_is_in_their_last_status_all_day(moto_db):
    noon = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
    trail = AuditTrail(clock=lambda: noon)
    yesterday = trail.entry_item(
        actor=ACTOR,
        source="page",
        action="agent.available",
        target="agent:a2",
        before={"status": "offline"},
        after={"status": "queued"},
        moment=noon - timedelta(days=1),
    )
    batch.put_items(default(), trail.table_name, [yesterday])
    day = agent_day(trail, "a2", current_status=AgentStatus.QUEUED, current_since="2026-11-21T12:00:00.000000Z")
    assert [(s.status, s.seconds) for s in day.stretches] == [("queued", 12 * 3600)]


def test_the_agent_page_shows_the_day_and_the_calls_taken(supervisor_client, moto_db):
    ana = agent()
    Operations(ACTOR, "page").make_available(ana.agent_id)
    call, _ = Operations(ACTOR, "page").create_call({"language": "Spanish", "gender": "any"})
    html = supervisor_client.get(reverse("agent-detail", args=[ana.agent_id])).content.decode()
    assert "Calls taken today (1)" in html
    assert reverse("call-detail", args=[call.call_id]) in html.split("Calls taken today", 1)[1]
    assert "<svg" in html.split('class="card agent-day"', 1)[1]


def test_an_entry_reads_as_a_sentence_with_its_fields_behind_details(supervisor_client, moto_db):
    ana = agent("Ana Lopez")
    Operations(ACTOR, "page").make_available(ana.agent_id)
    html = supervisor_client.get(reverse("audit")).content.decode()
    entry = html[html.index('data-action="agent.available"') :]
    entry = entry[: entry.index("</tr>")]
    sentence = entry[entry.index('<p class="sentence">') : entry.index("</p>")]
    assert "<bdi>Ana Lopez queued</bdi>" in sentence and f"by <bdi>{ACTOR}</bdi> on the dashboard." in sentence
    # No action code, id or stored field in the sentence: those are in the details.
    assert "agent.available" not in sentence and ana.agent_id not in sentence.split("item-link")[0]
    details = entry[entry.index('<details class="entry-details">') :]
    assert "Agent made available" in details and f"agent <code>{ana.agent_id}</code>" in details
    assert "<th>status</th>" in details


def test_the_time_range_is_typed_in_the_centres_time(settings):
    from queues_app.views.audit import TrailSearchForm

    settings.TIME_ZONE = "America/New_York"
    form = TrailSearchForm({"since": "2026-11-25T09:00", "until": "2026-11-25T17:30"})
    assert form.is_valid(), form.errors
    assert form.filters.since == datetime(2026, 11, 25, 14, 0, tzinfo=UTC)
    assert form.filters.until == datetime(2026, 11, 25, 22, 30, tzinfo=UTC)
