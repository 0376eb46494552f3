"""Lines through the API as a phone system and an administrator use them: configured,
read with how they stand, callers arriving on them (refused when closed or full, sent on
when full), and removed once nobody waits."""

from datetime import timedelta

import pytest

from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import centre_zone, from_iso, now
from tests.helpers.api import agent, assert_problem

WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def put_line(api, line_id, **settings):
    return api.put(f"/api/lines/{line_id}", {"name": line_id.title(), **settings})


def call_on(api, line, **preferences):
    return api.post("/api/calls", {"preferences": preferences, "line": line})


def test_a_centre_without_lines_has_main_and_every_caller_waits_on_it(moto_db, api):
    lines = api.get("/api/lines").json()["lines"]
    assert [(line["line_id"], line["version"], line["open_now"], line["waiting"]) for line in lines] == [
        ("main", 0, True, 0)
    ]
    call = api.post("/api/calls", {"preferences": {"language": "French"}}).json()
    assert (call["status"], call["line"]) == ("waiting", "main")
    main = api.get("/api/lines/main").json()
    assert main["waiting"] == 1 and main["oldest_wait_seconds"] is not None


def test_a_line_is_created_changed_from_its_version_and_a_stale_change_refused(moto_db, api):
    created = put_line(api, "support", requires={"language": "French"}, service_level_seconds=30)
    assert created.status_code == 201 and created["Location"] == "/api/lines/support"
    body = created.json()
    assert (body["version"], body["requires"], body["service_level_target"]) == (1, {"language": "French"}, 0.8)
    changed = put_line(api, "support", service_level_seconds=60, version=1)
    assert changed.status_code == 200 and changed.json()["version"] == 2
    stale = assert_problem(put_line(api, "support", service_level_seconds=10, version=1), 409)
    assert "version 2" in stale["message"]
    again = assert_problem(put_line(api, "support"), 409)  # created twice
    assert "exists already" in again["message"]
    assert api.get("/api/lines/support").json()["service_level_seconds"] == 60
    assert [line["line_id"] for line in api.get("/api/lines").json()["lines"]] == ["support"]


def test_a_change_sent_again_after_a_timeout_is_answered_as_made_and_recorded_once(moto_db, api):
    for _attempt in range(2):
        created = put_line(api, "sales", service_level_seconds=30)
    assert created.status_code == 200 and created["Idempotent-Replayed"] == "true"
    assert created.json()["version"] == 1
    first = put_line(api, "sales", service_level_seconds=45, version=1)
    again = put_line(api, "sales", service_level_seconds=45, version=1)
    assert first["Idempotent-Replayed"] == "false" and again["Idempotent-Replayed"] == "true"
    assert again.json()["version"] == 2
    trail = AuditTrail().for_target(target("line", "sales"), limit=10).entries
    assert sorted(entry.action for entry in trail) == ["line.create", "line.update"]


@pytest.mark.parametrize(
    "given, field",
    [
        ({"requires": {"language": "Klingon"}}, "requires.language"),
        ({"service_level_target": 1.5}, "service_level_target"),
        ({"service_level_target": 1e-308}, "service_level_target"),  # under a thousandth: none
        ({"hours": {"mon": [["08:00", "25:00"]]}}, "hours.mon[0]"),
        ({"overflow": {"to_line": "nowhere"}, "max_waiting": 5}, "lines.sales.overflow.to_line"),
        ({"max_waiting": 5}, "overflow"),
    ],
)
def test_a_bad_setting_is_a_400_naming_it_and_stores_nothing(moto_db, api, given, field):
    body = assert_problem(put_line(api, "sales", **given), 400)
    assert field in body["fields"], body
    assert_problem(api.get("/api/lines/sales"), 404)


def test_a_caller_for_an_unknown_line_is_a_400_naming_line(moto_db, api):
    put_line(api, "sales")
    body = assert_problem(call_on(api, "billing"), 400)
    assert "line" in body["fields"] and "sales" in body["fields"]["line"]
    body = assert_problem(api.post("/api/calls", {"preferences": {}}), 400)  # no main among the lines
    assert "line" in body["fields"]


def test_a_line_adds_what_it_requires_and_refuses_a_caller_asking_otherwise(moto_db, api):
    put_line(api, "support", requires={"language": "French"})
    call = call_on(api, "support").json()
    assert call["preferences"]["language"] == "French" and call["line"] == "support"
    body = assert_problem(call_on(api, "support", language="Spanish"), 400)
    assert "preferences.language" in body["fields"]


def test_a_closed_line_refuses_with_when_it_opens_and_tells_the_count(moto_db, api):
    tomorrow = (now().astimezone(centre_zone()) + timedelta(days=1)).weekday()
    put_line(api, "support", hours={WEEKDAYS[tomorrow]: [["09:00", "17:00"]]})
    body = assert_problem(call_on(api, "support"), 409, "Caller refused")
    assert (body["reason"], body["line"]) == ("closed", "support")
    opens = from_iso(body["opens_at"]).astimezone(centre_zone())
    assert (opens.weekday(), opens.hour, opens.minute) == (tomorrow, 9, 0)
    line = api.get("/api/lines/support").json()
    assert line["open_now"] is False and line["opens_at"] == body["opens_at"] and line["waiting"] == 0
    assert api.get("/api/calls?status=waiting").json()["calls"] == []


def test_a_full_line_refuses_the_next_caller_and_an_overflow_sends_them_on(moto_db, api):
    put_line(api, "general")
    put_line(api, "vip", max_waiting=1, overflow={"end": "voicemail"})
    put_line(api, "sales", max_waiting=1, overflow={"to_line": "general"})
    assert call_on(api, "vip").json()["status"] == "waiting"
    body = assert_problem(call_on(api, "vip"), 409)
    assert (body["reason"], body["line"]) == ("full", "vip")
    first = call_on(api, "sales").json()
    sent_on = call_on(api, "sales").json()
    assert (first["line"], sent_on["line"]) == ("sales", "general")
    assert [(m["from"], m["to"]) for m in sent_on["overflowed"]] == [("sales", "general")]
    waiting = {line["line_id"]: line["waiting"] for line in api.get("/api/lines").json()["lines"]}
    assert waiting == {"general": 1, "sales": 1, "vip": 1}


def test_a_line_is_removed_only_once_nobody_waits_and_nothing_overflows_to_it(moto_db, api):
    put_line(api, "general")
    put_line(api, "sales", max_waiting=5, overflow={"to_line": "general"})
    call = call_on(api, "general").json()
    body = assert_problem(api.delete("/api/lines/general?version=1"), 409)
    assert "1 callers waiting" in body["message"] or "takes the overflow" in body["message"]
    api.post(f"/api/calls/{call['call_id']}/abandon")
    body = assert_problem(api.delete("/api/lines/general?version=1"), 409)
    assert "takes the overflow of sales" in body["message"]
    assert api.delete("/api/lines/sales?version=1").status_code == 200
    assert_problem(api.delete("/api/lines/general?version=7"), 409)
    assert api.delete("/api/lines/general?version=1").status_code == 200
    assert [line["line_id"] for line in api.get("/api/lines").json()["lines"]] == ["main"]


# --- past max_wait_seconds: the escalation loop's overflow ------------------------------


@pytest.fixture
def centre(moto_db, clock):
    return CallCenter(clock=clock)


def configure(center, *lines):
    for data in lines:
        center.lines.put({"name": data["line_id"].title(), **data})


def test_a_caller_past_max_wait_moves_once_to_the_overflow_line_keeping_their_arrival(centre, clock):
    configure(
        centre,
        {"line_id": "general"},
        {
            "line_id": "support",
            "requires": {"language": "French"},
            "max_wait_seconds": 60,
            "overflow": {"to_line": "general"},
        },
    )
    call, _ = centre.create_call({}, line="support")
    clock.advance(30)
    assert centre.escalator.overflow() == []
    clock.advance(31)
    moved = centre.escalator.overflow()
    assert [c.call_id for c in moved] == [call.call_id]
    assert centre.escalator.overflow() == []  # exactly once
    now_ = centre.get_call(call.call_id)
    assert (now_.status, now_.line, now_.arrived_at) == (CallStatus.WAITING, "general", call.arrived_at)
    assert now_.preferences["language"] is not call.preferences["language"]  # support's French dropped
    assert centre.line.on_line(["support", "general"]) == {"support": 0, "general": 1}
    french = agent("Flo", ["English"], "F")
    taken = centre.make_available(french.agent_id)
    assert taken.call and taken.call.call_id == call.call_id  # any agent of general takes them


def test_a_caller_past_max_wait_with_nowhere_to_go_is_ended_with_the_reason(centre, clock):
    configure(centre, {"line_id": "vip", "max_wait_seconds": 120, "overflow": {"end": "voicemail"}})
    call, _ = centre.create_call({}, line="vip")
    clock.advance(121)
    [ended] = centre.escalator.overflow()
    stored = centre.get_call(call.call_id)
    assert (stored.status, stored.end_reason, stored.wait_sk) == (CallStatus.OVERFLOWED, "voicemail", None)
    assert stored.overflowed[-1]["end"] == "voicemail"
    assert centre.line.on_line(["vip"]) == {"vip": 0}
    assert centre.line.count_waiting() == (0, False)
    assert ended.call_id == call.call_id


def test_what_a_line_requires_is_never_relaxed(centre, clock, settings):
    settings.SWITCHBOARD_ESCALATION = {"after_seconds": 10, "order": ["gender", "language"]}
    configure(centre, {"line_id": "main", "requires": {"language": "French"}})
    call, _ = centre.create_call({"gender": "F"})
    clock.advance(25)
    centre.escalator.escalate()
    stored = centre.get_call(call.call_id)
    assert stored.preferences["language"] == "French"
    assert [entry["dimension"] for entry in stored.relaxed] == ["gender"]


def test_priority_aging_lifts_a_long_waiting_caller_ahead_of_later_higher_ones(centre, clock):
    configure(centre, {"line_id": "main", "priority_aging_seconds": 60})
    old, _ = centre.create_call({"language": "French"})  # priority 0
    clock.advance(30)
    urgent, _ = centre.create_call({"language": "French"}, priority=1)
    clock.advance(35)  # old has waited 65 s: one step, to 1, and arrived before urgent
    [risen] = centre.escalator.escalate()
    assert (risen.call_id, risen.priority, risen.aged_from) == (old.call_id, 1, 0)
    assert centre.escalator.escalate() == []  # not again within the period
    clock.advance(60 * 20)
    centre.escalator.escalate()
    assert centre.get_call(old.call_id).priority == 9  # at most the top
    order = [call["call_id"] for call in centre.line.waiting_calls(limit=5)[0]]
    assert order == [old.call_id, urgent.call_id]  # urgent rose too (to 9), but arrived later
    taken = centre.make_available(agent("Flo", ["French"], "F").agent_id).call
    assert taken and taken.call_id == old.call_id
    assert centre.line.count_waiting() == (1, False) and centre.line.on_line(["main"]) == {"main": 1}
