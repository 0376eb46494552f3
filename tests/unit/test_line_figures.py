"""Figures per line, by the line's own promise: answered within its threshold, short
abandons apart, overflows counted; the lines add up to the centre; the report per line."""

import pytest

from queues_app.centre.call_center import CallCenter
from queues_app.figures import counters
from tests.helpers.api import agent, assert_problem


@pytest.fixture
def centre(moto_db, clock):
    center = CallCenter(clock=clock)
    center.lines.put({"line_id": "general", "name": "General", "service_level_seconds": 60})
    center.lines.put({"line_id": "support", "name": "Support", "service_level_seconds": 30, "short_abandon_seconds": 5})
    return center


def waited_then_answered(center, clock, line, seconds, name):
    call, _ = center.create_call({}, line=line)
    clock.advance(seconds)
    taken = center.make_available(agent(name, ["English"], "F").agent_id).call
    assert taken and taken.call_id == call.call_id
    return call


def totals(api, **query):
    params = "&".join(f"{k}={v}" for k, v in query.items())
    rows = api.get(f"/api/reports/intervals?interval=60&{params}").json()["intervals"]
    names = ("offered", "answered", "answered_within", "abandoned", "short_abandoned", "overflowed")
    return {name: sum(row[name] for row in rows if row["combination"] == "all") for name in names}


def test_each_line_is_counted_by_its_own_promise_and_the_lines_add_up(centre, clock, api):
    waited_then_answered(centre, clock, "general", 40, "Ann")  # within general's 60 s, not the centre's 20
    waited_then_answered(centre, clock, "support", 25, "Bob")  # within support's 30 s
    quick, _ = centre.create_call({}, line="support")
    clock.advance(3)
    centre.abandon(quick.call_id)  # sooner than support's 5 s: a short abandon
    late, _ = centre.create_call({}, line="general")
    clock.advance(70)
    centre.abandon(late.call_id)
    counters.MetricsStore(centre.db).flush()

    general, support, whole = totals(api, line="general"), totals(api, line="support"), totals(api)
    assert general == {
        "offered": 2, "answered": 1, "answered_within": 1, "abandoned": 1, "short_abandoned": 0, "overflowed": 0
    }  # fmt: skip
    assert support == {
        "offered": 2, "answered": 1, "answered_within": 1, "abandoned": 0, "short_abandoned": 1, "overflowed": 0
    }  # fmt: skip
    assert whole["offered"] == general["offered"] + support["offered"]
    assert whole["answered"] == general["answered"] + support["answered"]
    assert whole["abandoned"] == general["abandoned"] + support["abandoned"] + support["short_abandoned"]
    assert whole["answered_within"] == 0  # the centre's 20 s: neither was answered that fast
    report = api.get("/api/reports/intervals?line=support").json()
    assert (report["line"], report["service_level_seconds"]) == ("support", 30)


def test_an_overflowed_caller_is_counted_on_the_line_they_left(centre, clock, api):
    centre.lines.put({"line_id": "vip", "name": "VIP", "max_wait_seconds": 60, "overflow": {"end": "voicemail"}})
    centre.create_call({}, line="vip")
    clock.advance(61)
    assert len(centre.escalator.overflow()) == 1
    counters.MetricsStore(centre.db).flush()
    assert totals(api, line="vip")["overflowed"] == 1 and totals(api)["overflowed"] == 1


def test_a_report_of_a_line_that_does_not_exist_is_a_404_and_of_both_a_400(centre, api):
    assert_problem(api.get("/api/reports/intervals?line=billing"), 404)
    assert_problem(api.get("/api/reports/intervals?line=general&combination=all"), 400)
