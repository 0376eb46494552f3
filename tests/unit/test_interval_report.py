"""The interval report: a day of the centre (its TIME_ZONE) in 15, 30 or 60 minute
intervals, overall and per combination, from the quarter hours the counters write; on
the API in the documented shape, on the Reports page and as CSV; kept for
REPORT_RETENTION_DAYS."""

import csv
import io
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.codec import unmarshal
from queues_app.figures import service_level
from queues_app.figures.counters import MetricsStore
from queues_app.figures.intervals import IntervalReader
from queues_app.operations import Operations
from tests.helpers import figures as seeded
from tests.helpers.api import assert_problem

NY = "America/New_York"
# 2026-11-24 in New York (UTC-05:00): 09:00 there is 14:00 UTC.
MORNING = datetime(2026, 11, 24, 14, 0, tzinfo=UTC)


@pytest.fixture
def day_of_calls(moto_db, settings):
    """Three callers answered and one abandoned between 09:00 and 09:40 in New York, one
    handled call, and one answered at 23:50 the day before (another day there)."""
    settings.TIME_ZONE = NY
    settings.SERVICE_LEVEL_SECONDS = 20
    at = MORNING
    seeded.answered(moto_db, 5, ("Spanish", "F"), moment=at + timedelta(minutes=2))
    seeded.answered(moto_db, 45, ("Spanish", "F"), moment=at + timedelta(minutes=14))
    seeded.answered(moto_db, 10, ("English", None), moment=at + timedelta(minutes=31))
    seeded.abandoned(moto_db, 70, ("Spanish", "F"), moment=at + timedelta(minutes=40))
    seeded.handled(moto_db, 180, ("Spanish", "F"), moment=at + timedelta(minutes=5))
    seeded.answered(moto_db, 3, ("Spanish", "F"), moment=datetime(2026, 11, 24, 4, 50, tzinfo=UTC))
    service_level.sample_occupancy(moto_db, 3, 4, moment=at + timedelta(minutes=1))
    MetricsStore(moto_db).flush()
    return moto_db


def test_the_day_in_half_hours_overall_and_per_combination(day_of_calls):
    report = IntervalReader(day_of_calls).day(date(2026, 11, 24), 30)
    assert len(report.intervals) == 48 and report.zone == NY
    nine, half_past = report.intervals[18], report.intervals[19]
    assert nine.start.isoformat() == "2026-11-24T09:00:00-05:00"
    assert (nine.overall.offered, nine.overall.figures.answered, nine.overall.figures.answered_within) == (2, 2, 1)
    assert nine.overall.figures.wait_max == 45 and nine.overall.figures.average_handle_time == 180
    assert nine.overall.occupancy.share == 0.75
    assert (half_past.overall.offered, half_past.overall.figures.abandoned) == (2, 1)
    assert set(half_past.by_combination) == {"English#any", "Spanish#F"}
    # 23:50 the evening before in New York is not this day's.
    assert sum(i.overall.offered for i in report.intervals) == 4


def test_a_caller_is_offered_when_they_enter_and_in_queue_at_each_interval_end_they_wait_past(moto_db, settings):
    """Offered in the interval they entered, not the one they left; in queue at the end of
    each interval they are still waiting at."""
    settings.TIME_ZONE = NY
    seeded.answered(moto_db, 600, ("Spanish", "F"), moment=MORNING + timedelta(minutes=35))  # in at 09:25
    seeded.entered(moto_db, ("English", "M"), moment=MORNING + timedelta(minutes=50))  # 09:50, waiting still
    MetricsStore(moto_db).flush()
    report = IntervalReader(moto_db).day(date(2026, 11, 24), 30)
    eight_thirty, nine, half_past, ten = report.intervals[17:21]
    assert [i.overall.offered for i in (nine, half_past)] == [1, 1]
    assert [i.overall.in_queue for i in (eight_thirty, nine, half_past, ten)] == [0, 1, 1, 1]
    assert nine.by_combination["Spanish#F"].in_queue == 1 and half_past.by_combination["Spanish#F"].in_queue == 0
    assert half_past.by_combination["English#M"].in_queue == 1


def test_intervals_yet_to_come_today_have_nobody_in_their_queue_yet(moto_db, settings, monkeypatch, viewer_client):
    from queues_app.figures import intervals

    settings.TIME_ZONE = NY
    seeded.entered(moto_db, ("English", "M"), moment=MORNING + timedelta(minutes=50))  # 09:50, waiting still
    MetricsStore(moto_db).flush()
    monkeypatch.setattr(intervals, "now", lambda: MORNING + timedelta(minutes=70))  # 10:10 in New York
    report = IntervalReader(moto_db).day(date(2026, 11, 24), 30)
    half_past, ten, half_past_ten = report.intervals[19:22]
    assert [i.overall.in_queue for i in (half_past, ten)] == [1, 1]  # ten: in progress, as it is now
    assert half_past_ten.overall.in_queue is None and report.intervals[-1].overall.in_queue is None
    # The page lists the intervals with something in them: up to the one in progress.
    html = viewer_client.get(reverse("reports"), {"date": "2026-11-24", "interval": "30"}).content.decode()
    assert ">09:30<" in html and ">10:00<" in html and ">10:30<" not in html


def test_quarter_hours_and_hours_add_up_to_the_same_day(day_of_calls):
    days = {m: IntervalReader(day_of_calls).day(date(2026, 11, 24), m) for m in (15, 30, 60)}
    assert [len(d.intervals) for d in days.values()] == [96, 48, 24]
    for report in days.values():
        assert sum(i.overall.offered for i in report.intervals) == 4
        assert sum(i.overall.figures.answered_within for i in report.intervals) == 2
    assert days[60].intervals[9].overall.offered == 4  # 09:00-10:00


def test_the_day_the_clocks_go_back_has_25_hours(moto_db, settings):
    settings.TIME_ZONE = NY
    report = IntervalReader(moto_db).day(date(2026, 11, 1), 60)
    assert len(report.intervals) == 25
    assert [i.start.isoformat()[11:] for i in report.intervals[1:3]] == ["01:00:00-04:00", "01:00:00-05:00"]


def test_the_api_answers_in_the_documented_shape(api, day_of_calls):
    response = api.get("/api/reports/intervals?date=2026-11-24&interval=30")
    assert response.status_code == 200, response.content
    body = response.json()
    assert type(body["service_level_seconds"]) is int  # 20, as the threshold is set, not 20.0
    assert {k: body[k] for k in ("date", "time_zone", "interval_minutes", "service_level_seconds")} == {
        "date": "2026-11-24",
        "time_zone": NY,
        "interval_minutes": 30,
        "service_level_seconds": 20,
    }
    nine = [row for row in body["intervals"] if row["start"] == "2026-11-24T09:00:00-05:00"]
    assert nine[0] == {
        "start": "2026-11-24T09:00:00-05:00",
        "combination": "all",
        "line": None,
        "offered": 2,
        "answered": 2,
        "answered_within": 1,
        "abandoned": 0,
        "short_abandoned": 0,
        "overflowed": 0,
        "refused": 0,
        "callbacks_requested": 0,
        "callbacks_connected": 0,
        "callbacks_failed": 0,
        "callback_connect_seconds": None,
        "service_level": 0.5,
        "asa_seconds": 25.0,
        "aht_seconds": 180.0,
        "longest_wait_seconds": 45.0,
        "occupancy": 0.75,
        "in_queue_at_end": 0,
    }
    assert [row["combination"] for row in nine] == ["all", "Spanish#F"]
    quiet = body["intervals"][0]
    assert (quiet["offered"], quiet["service_level"], quiet["asa_seconds"], quiet["occupancy"]) == (0, None, None, None)
    one = api.get("/api/reports/intervals?date=2026-11-24&interval=60&combination=English%23any").json()
    assert len(one["intervals"]) == 24 and sum(row["answered"] for row in one["intervals"]) == 1


@pytest.mark.parametrize(
    "query, word",
    [("date=24-11-2026", "`date`"), ("interval=20", "`interval`"), ("combination=%23%23", "`combination`")],
)
def test_the_api_refuses_what_cannot_be_a_report(api, moto_db, query, word):
    body = assert_problem(api.get(f"/api/reports/intervals?{query}"), 400)
    assert word in body["message"]


def test_the_api_refuses_a_day_reports_do_not_keep_and_a_combination_that_is_none(api, moto_db, settings):
    settings.REPORT_RETENTION_DAYS = 30
    today = datetime.now(ZoneInfo(settings.TIME_ZONE)).date()
    future = assert_problem(api.get(f"/api/reports/intervals?date={today + timedelta(days=1)}"), 400)
    assert f"the latest report is today's, {today}" in future["message"]
    old = assert_problem(api.get(f"/api/reports/intervals?date={today - timedelta(days=31)}"), 400)
    assert f"the earliest is {today - timedelta(days=30)}" in old["message"]
    assert api.get(f"/api/reports/intervals?date={today - timedelta(days=30)}").status_code == 200
    klingon = assert_problem(api.get("/api/reports/intervals?combination=Klingon%23F"), 404)
    assert "no combination 'Klingon#F'" in klingon["message"]
    assert api.get("/api/reports/intervals?combination=any%23F").status_code == 200


def test_the_reports_page_and_its_csv(viewer_client, day_of_calls):
    html = viewer_client.get(reverse("reports"), {"date": "2026-11-24", "interval": "30"}).content.decode()
    assert "4 offered, 3 answered (2 within 20 s), 1 abandoned" in html
    assert html.count('<rect class="offered"') == 48
    assert 'data-start="2026-11-24T09:00:00-05:00"' in html and "America/New_York" in html
    response = viewer_client.get(reverse("reports-csv"), {"date": "2026-11-24", "interval": "60"})
    header, *rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert header[:4] == ["Start (America/New_York)", "Combination", "Offered", "Answered"]
    assert header[4] == "Answered within 20 s" and header[-1] == "Occupancy"
    assert response["Content-Disposition"] == 'attachment; filename="intervals-2026-11-24-60min.csv"'  # its day, once
    assert len([r for r in rows if r[1] == "all"]) == 24
    assert [r[2] for r in rows if r[0].startswith("2026-11-24T09:00")] == ["4", "1", "3"]  # all, English, Spanish
    assert viewer_client.get(reverse("reports"), {"interval": "7"}).status_code == 400


def test_a_released_call_adds_its_handle_time(moto_db):
    ana = Agents().create("Ana", {"language": ["Spanish"], "gender": ["F"]})
    CallCenter().make_available(ana.agent_id)
    call, _ = CallCenter().create_call({"language": "Spanish", "gender": "F"})
    Operations("sam-supervisor", "page").release(ana.agent_id, call_id=call.call_id)
    MetricsStore(moto_db).flush()
    today = service_level.ServiceLevelReader(moto_db).read().today.overall
    assert today.handled == 1 and today.average_handle_time is not None and today.average_handle_time >= 0


def test_the_quarter_hours_are_kept_for_the_reports_retention(moto_db, settings):
    settings.REPORT_RETENTION_DAYS = 400
    seeded.answered(moto_db, 5, ("Spanish", "F"))
    MetricsStore(moto_db).flush()
    items = [
        item
        for pk in service_level.figure_partitions(service_level.INTERVAL_PK)  # the shard the counting picked
        for item in moto_db.call(
            "query",
            TableName=moto_db.table("metrics"),
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": pk}},
        )["Items"]
    ]
    kept = [int(unmarshal(item)["expires_at"]) for item in items]
    now = datetime.now(UTC).timestamp()
    assert kept and all(399 * 86400 < expires - now <= 400 * 86400 + 60 for expires in kept)


def test_the_grid_says_how_many_agents_the_last_hours_calls_need(supervisor_client, moto_db, settings):
    """Ten Spanish · F calls in the last hour of 180 s each: half an erlang. By Erlang C one
    agent answers 53% within 20 s, two answer 91%: the target of 80% needs 2."""
    settings.SERVICE_LEVEL_TARGET = 0.8
    settings.SERVICE_LEVEL_SECONDS = 20
    for _ in range(10):
        seeded.answered(moto_db, 5, ("Spanish", "F"))
        seeded.handled(moto_db, 180, ("Spanish", "F"))
    MetricsStore(moto_db).flush()
    html = supervisor_client.get(reverse("home"), {"panel": "grid"}, HTTP_HX_REQUEST="true").content.decode()
    spanish = html[html.index('data-cell="Spanish · F"') :]
    assert "needs 2" in spanish[: spanish.index("</td>")]
    english = html[html.index('data-cell="English · F"') :]
    assert "needs" not in english[: english.index("</td>")]  # no calls to go by


def test_the_grid_sets_the_agents_taking_calls_beside_those_needed(supervisor_client, moto_db, settings):
    """Erlang C's agents are those taking calls: queued, ringing or attending; an agent
    in wrap-up or not ready is logged in but not ready."""
    settings.SERVICE_LEVEL_TARGET = 0.8
    settings.SERVICE_LEVEL_SECONDS = 20
    for _ in range(10):  # needs 2, as above
        seeded.answered(moto_db, 5, ("Spanish", "F"))
        seeded.handled(moto_db, 180, ("Spanish", "F"))
    MetricsStore(moto_db).flush()
    center = CallCenter()
    ana, bea = (Agents().create(name, {"language": ["Spanish"], "gender": ["F"]}) for name in ("Ana", "Bea"))
    center.make_available(ana.agent_id)
    center.make_available(bea.agent_id)
    center.create_call({"language": "Spanish", "gender": "F"})  # one of them takes it

    def spanish_cell() -> str:
        html = supervisor_client.get(reverse("home"), {"panel": "grid"}, HTTP_HX_REQUEST="true").content.decode()
        cell = html[html.index('data-cell="Spanish · F"') :]
        return cell[: cell.index("</td>")]

    assert "1 queued · 2 ready · 2 logged in" in spanish_cell()
    assert 'class="needed"' in spanish_cell()  # 2 ready of 2 needed
    center.release(center.calls.in_progress().items[0].agent_id, then="wrap_up")
    assert "1 queued · 1 ready · 2 logged in" in spanish_cell()
    assert 'class="needed short-of"' in spanish_cell()


def test_figures_counted_in_every_shard_of_their_partitions_are_read_as_one(moto_db, settings, monkeypatch):
    """Each counting transaction adds to one shard of the figure partitions, picked at
    random: four flushes made to pick each shard in turn, and every reading adds them up
    (a peak is the largest of the shards')."""
    from queues_app.figures import tally

    settings.TIME_ZONE = NY
    settings.SERVICE_LEVEL_SECONDS = 20
    picks = iter([1, 2, 3, 0, 0, 0])
    monkeypatch.setattr(tally.random, "randrange", lambda n: next(picks))
    at = MORNING + timedelta(hours=3)  # noon in New York
    for wait in (5, 45, 10, 70):
        seeded.answered(moto_db, wait, ("Spanish", "F"), moment=at)
        MetricsStore(moto_db).flush()
    written = {
        pk: len(
            moto_db.call(
                "query",
                TableName=moto_db.table("metrics"),
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": pk}},
            )["Items"]
        )
        for pk in service_level.figure_partitions(service_level.DAY_PK)
    }
    assert written == {"SERVICE_DAY": 1, "SERVICE_DAY#1": 1, "SERVICE_DAY#2": 1, "SERVICE_DAY#3": 1}
    live = service_level.ServiceLevelReader(moto_db, clock=lambda: at + timedelta(seconds=30)).read()
    for window in (live.recent.overall, live.today.overall):
        assert (window.answered, window.answered_within, window.wait_max) == (4, 2, 70)
    day = IntervalReader(moto_db).day(at.astimezone(ZoneInfo(NY)).date(), 15)
    assert sum(i.overall.figures.answered for i in day.intervals) == 4
    assert max(i.overall.figures.wait_max or 0 for i in day.intervals) == 70


def test_the_whole_centres_day_says_how_many_callers_a_line_turned_away(moto_db, supervisor_client):
    from queues_app.ddb import errors

    center = CallCenter()
    center.lines.put({"line_id": "main", "name": "Main", "max_waiting": 1, "overflow": {"end": "busy"}})
    center.lines.forget()
    center.create_call({"language": "Spanish"}, line="main")
    with pytest.raises(errors.Refused, match="full"):
        center.create_call({"language": "Spanish"}, line="main")
    MetricsStore(moto_db).flush()
    page = supervisor_client.get(reverse("reports")).content.decode()
    assert "1 offered, 0 answered (0 within 20 s), 0 abandoned; 1 turned away (a line closed or full)." in page
