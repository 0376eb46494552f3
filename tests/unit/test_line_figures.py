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


def one_answered_one_waiting(centre, clock):
    """General: one caller answered after 40 s (within its 60 s); support: one waiting."""
    waited_then_answered(centre, clock, "general", 40, "Ann")
    centre.create_call({}, line="support")
    counters.MetricsStore(centre.db).flush()


def totals(api, **query):
    params = "&".join(f"{k}={v}" for k, v in query.items())
    rows = api.get(f"/api/reports/intervals?interval=60&{params}").json()["intervals"]
    names = ("offered", "answered", "answered_within", "abandoned", "short_abandoned", "overflowed", "refused")
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
        "offered": 2, "answered": 1, "answered_within": 1, "abandoned": 1, "short_abandoned": 0, "overflowed": 0,
        "refused": 0,
    }  # fmt: skip
    assert support == {
        "offered": 2, "answered": 1, "answered_within": 1, "abandoned": 0, "short_abandoned": 1, "overflowed": 0,
        "refused": 0,
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


def test_the_wallboard_shows_each_line_by_its_promise_and_one_line_alone(centre, clock, supervisor_client):
    one_answered_one_waiting(centre, clock)
    board = supervisor_client.get("/wallboard/").content.decode()
    general = board.split('data-line="line:general"', 1)[1].split("</section>", 1)[0]
    support = board.split('data-line="line:support"', 1)[1].split("</section>", 1)[0]
    assert 'data-figure="answered">1<' in general and "100%" in general and "of 80% in 60 s" in general
    assert 'data-figure="waiting" class="warn">1<' in support
    alone = supervisor_client.get("/wallboard/?line=support").content.decode()
    assert 'data-line="line:support"' in alone and 'data-line="line:general"' not in alone
    assert 'hx-get="/wallboard/?line=support"' in alone
    assert 'data-line="English' not in alone  # the combinations are the whole centre's: not shown for one line
    missing = supervisor_client.get("/wallboard/?line=nope")
    assert missing.status_code == 404 and "There is no line" in missing.content.decode()


def test_metrics_give_each_line_by_its_promise(centre, clock, supervisor_client):
    one_answered_one_waiting(centre, clock)
    text = supervisor_client.get("/metrics").content.decode()
    assert 'switchboard_line_waiting{line="support"} 1.0' in text
    assert 'switchboard_line_answered{line="general"} 1.0' in text
    assert 'switchboard_line_service_level_ratio{line="general"} 1.0' in text
    assert 'switchboard_line_service_level_threshold_seconds{line="support"} 30.0' in text
    assert 'switchboard_line_service_level_ratio{line="support"}' not in text  # nobody left it yet


def test_metrics_say_nothing_of_lines_while_none_is_configured(moto_db, supervisor_client):
    assert "switchboard_line_" not in supervisor_client.get("/metrics").content.decode()


def test_the_overview_shows_each_line_and_nothing_of_lines_without_them(centre, clock, supervisor_client):
    one_answered_one_waiting(centre, clock)
    page = supervisor_client.get("/").content.decode()
    panel = page.split('id="lines-panel"', 1)[1].split("</section>", 1)[0]
    assert 'data-line="general"' in panel and 'data-line="support"' in panel
    support = panel.split('data-line="support"', 1)[1].split("</tr>", 1)[0]
    assert 'data-figure="waiting">1<' in support and "of 80% in 30 s" in support
    alone = supervisor_client.get("/?panel=lines").content.decode()
    assert 'id="lines-panel"' in alone and 'hx-get="/?panel=lines"' in alone


def test_without_lines_the_overview_has_no_lines_panel(moto_db, supervisor_client):
    page = supervisor_client.get("/").content.decode()
    panel = page.split('id="lines-panel"', 1)[1].split(">", 1)[0]
    assert panel.endswith(" hidden") and 'hx-get="/?panel=lines"' in panel  # polls: lines made elsewhere appear


def test_a_lines_handle_time_is_its_answered_calls_and_the_lines_add_up_to_the_centre(centre, clock, api):
    clock.moment = clock.moment.replace(minute=1)  # both calls end in this hour's interval
    short = waited_then_answered(centre, clock, "general", 10, "Ann")
    clock.advance(60)
    centre.end_call(short.call_id, then="wrap_up")  # Ann does not take the next caller
    long = waited_then_answered(centre, clock, "support", 10, "Bob")
    clock.advance(300)
    centre.end_call(long.call_id)
    counters.MetricsStore(centre.db).flush()

    def handle(**query):
        params = "&".join(f"{k}={v}" for k, v in query.items())
        rows = api.get(f"/api/reports/intervals?interval=60&{params}").json()["intervals"]
        return [row["aht_seconds"] for row in rows if row["combination"] == "all" and row["aht_seconds"] is not None]

    assert handle(line="general") == [60.0] and handle(line="support") == [300.0]
    assert handle() == [180.0]  # the centre's: both calls


def test_the_reports_page_and_csv_give_one_line_by_its_promise(centre, clock, supervisor_client):
    waited_then_answered(centre, clock, "support", 25, "Bob")  # within support's 30 s, not the centre's 20
    quick, _ = centre.create_call({}, line="support")
    clock.advance(2)
    centre.abandon(quick.call_id)  # a short abandon
    counters.MetricsStore(centre.db).flush()

    page = supervisor_client.get("/reports/?line=support&combination=all&interval=60").content.decode()
    assert '<option value="support" selected>Support</option>' in page
    assert "by its promise of 80% in 30 s" in page and "<th>Within 30 s</th>" in page
    assert "1 answered (1 within 30 s), 0 abandoned, 1 short abandons, 0 overflowed" in page
    assert "&amp;line=support" in page and "<th>Occupancy</th>" not in page
    whole = supervisor_client.get("/reports/?interval=60").content.decode()
    assert "1 answered (0 within 20 s), 1 abandoned." in whole  # the centre's threshold; a short abandon abandoned

    csv = supervisor_client.get("/reports/export.csv?line=support&interval=60")
    assert (
        csv.status_code == 200
        and "intervals-" in csv["Content-Disposition"]
        and "-support" in csv["Content-Disposition"]
    )
    header, *rows = b"".join(csv.streaming_content).decode().splitlines()
    assert header.split(",")[1:7] == [
        "Line",
        "Offered",
        "Answered",
        "Answered within 30 s",
        "Abandoned",
        "Short abandons",
    ]
    counted = [row.split(",") for row in rows if row.split(",")[3] != "0" or row.split(",")[6] != "0"]
    assert [(row[1], row[3], row[4], row[6]) for row in counted] == [("support", "1", "1", "1")]


def test_a_report_of_an_unknown_line_says_which_lines_there_are(centre, supervisor_client):
    missing = supervisor_client.get("/reports/?line=billing")
    assert missing.status_code == 404 and "the lines are general, support" in missing.content.decode()
    both = supervisor_client.get("/reports/?line=general&combination=English%23F")
    assert both.status_code == 400 and "not both" in both.content.decode()


def test_a_caller_a_full_line_turns_away_is_refused_on_that_line_and_never_offered(centre, api):
    centre.lines.put({"line_id": "vip", "name": "VIP", "max_waiting": 1, "overflow": {"end": "busy"}})
    assert call_on_vip(api).status_code == 201
    refused = call_on_vip(api)
    assert refused.status_code == 409 and refused.json()["reason"] == "full"
    counters.MetricsStore(centre.db).flush()
    vip = totals(api, line="vip")
    assert (vip["offered"], vip["refused"]) == (1, 1) and totals(api)["refused"] == 1


def call_on_vip(api):
    return api.post("/api/calls", {"preferences": {}, "line": "vip"})


def test_the_reports_day_links_keep_a_combination_whole(moto_db, supervisor_client):
    page = supervisor_client.get("/reports/?combination=English%23F").content.decode()
    assert '&amp;combination=English%23F">' in page  # a bare # would cut the link at the combination
