"""The agents' report: each agent's day (calls handled and answered, talk, after-call
work, time in each status, not ready by reason, missed offers, occupancy) counted from the
facts of a day driven through the real call centre, and checked against the calls' own
records and the interval report; a stretch across the centre's midnight in each day; the
stretch an agent is in now counted up to now; the API's refusals; the page and its CSV."""

import csv
import io
import random
from collections import Counter
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.urls import reverse

from queues_app.agents.records import AgentStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import from_iso
from queues_app.figures.counters import MetricsStore
from queues_app.figures.tally import Tally
from queues_app.monitoring import agent_report
from tests.helpers.api import agent, assert_problem

NY = ZoneInfo("America/New_York")
THRESHOLD = 20  # SERVICE_LEVEL_SECONDS
ANSWER_TIMEOUT = 15
REASONS = ("break", "lunch", "training")
SKILLS = (["English"], "F")


def ny(day: date, hour: int, minute: int = 0) -> datetime:
    return datetime.combine(day, time(hour, minute), tzinfo=NY).astimezone(UTC)


# A day already past wherever the tests run, so every report of it is kept and none to come.
DAY = datetime.now(NY).date() - timedelta(days=3)


@pytest.fixture
def centre(moto_db, settings, clock):
    settings.TIME_ZONE = "America/New_York"
    settings.SERVICE_LEVEL_SECONDS = THRESHOLD
    return CallCenter(clock=clock)


@pytest.fixture
def as_of(monkeypatch):
    """Sets the report's now: how far the stretch each agent is in counts."""

    def set_now(moment: datetime) -> None:
        monkeypatch.setattr(agent_report, "now", lambda: moment)

    return set_now


def counted(db) -> None:
    """Every fact the changes wrote, counted (once: a second count finds none)."""
    MetricsStore(db).flush()
    Tally(db).sweep()


def rows_by_id(body: dict) -> dict[str, dict]:
    return {row["agent_id"]: row for row in body["agents"]}


class GeneratedDay:
    """A day of the centre driven through the real CallCenter by a seeded walk: callers
    arrive; agents ringing pick up or let it ring out, those on a call end it to the queue
    or to wrap-up, those in wrap-up or not ready come back, queued ones go not ready for a
    reason; then every call is ended, every agent logged off and any caller left hangs up.
    It notes what the calls' records cannot say: when each agent logged in and off, and
    each not ready begun."""

    def __init__(self, center: CallCenter, clock, seed: int):
        self.center, self.clock, self.rng = center, clock, random.Random(seed)
        self.call_ids: list[str] = []
        self.logged: dict[str, list[datetime]] = {}
        self.not_ready: Counter[tuple[str, str]] = Counter()

    def run(self, agent_ids: list[str], steps: int) -> None:
        for agent_id in agent_ids:
            self.center.make_available(agent_id)
            self.logged[agent_id] = [self.clock.moment]
            self.clock.advance(self.rng.uniform(1, 20))
        for n in range(steps):
            if n % 10 == 9:
                counted(self.center.db)  # as a process flushes every few seconds: a day counted in parts
            self.clock.advance(self.rng.uniform(3, 45))
            if self.rng.random() < 0.4:
                self.arrive()
            else:
                self.step(self.rng.choice(agent_ids))
        for agent_id in agent_ids:
            self.log_off(agent_id)
        for call_id in self.call_ids:
            if self.center.get_call(call_id).status == "waiting":
                self.center.abandon(call_id)

    def arrive(self) -> None:
        """A caller; offered to a queued agent at once, picked up quickly half the time."""
        call, _ = self.center.create_call({})
        self.call_ids.append(call.call_id)
        if call.agent_id and self.rng.random() < 0.5:
            self.clock.advance(self.rng.uniform(2, 10))
            self.center.answered(call.call_id)

    def step(self, agent_id: str) -> None:
        now = self.center.agents.get(agent_id)
        if now.status == AgentStatus.RINGING and self.rng.random() < 0.3:
            self.clock.advance(ANSWER_TIMEOUT + 1)
            self.center.miss_expired_offers()  # every offer past its deadline: this one, maybe others
        elif now.status == AgentStatus.RINGING:
            self.center.answered(now.call_id)
        elif now.status == AgentStatus.ATTENDING:
            self.center.release(agent_id, then=self.rng.choice(["queue", "wrap_up"]), call_id=now.call_id)
        elif now.status in (AgentStatus.WRAP_UP, AgentStatus.NOT_READY):
            self.center.make_available(agent_id)
        elif now.status == AgentStatus.QUEUED:
            reason = self.rng.choice(REASONS)
            self.center.set_not_ready(agent_id, reason)
            self.not_ready[(agent_id, reason)] += 1

    def log_off(self, agent_id: str) -> None:
        while (now := self.center.agents.get(agent_id)).status != AgentStatus.OFFLINE:
            self.clock.advance(self.rng.uniform(3, 30))
            if now.status == AgentStatus.RINGING:
                self.center.answered(now.call_id)
            elif now.status == AgentStatus.ATTENDING:
                self.center.release(agent_id, then="offline", call_id=now.call_id)
            else:
                self.center.log_off(agent_id)
        self.logged[agent_id].append(self.clock.moment)


def recount(calls) -> dict[str, Counter]:
    """Per agent, from the calls' records alone: answered (and within the threshold) by who
    the call was answered by, handled and talk time from each agent's part (its legs), missed
    offers from the parts that rang out."""
    figures: dict[str, Counter] = {}
    for call in calls:
        if call.answered_at:
            wait = (from_iso(call.answered_at) - from_iso(call.arrived_at)).total_seconds()
            mine = figures.setdefault(call.agent_id, Counter())
            mine["answered"] += 1
            mine["answered_within"] += wait <= THRESHOLD
        for part in call.legs:
            mine = figures.setdefault(part["agent_id"], Counter())
            if part["how"] in ("ended", "transferred"):
                mine["handled"] += 1
                mine["talk"] += (from_iso(part["to"]) - from_iso(part["from"])).total_seconds()
            elif part["how"] == "missed":
                mine["missed"] += 1
    return figures


def test_a_generated_day_agrees_with_the_calls_records_and_the_interval_report(centre, clock, settings, api):
    settings.ANSWER_TIMEOUT_SECONDS = ANSWER_TIMEOUT
    clock.moment = ny(DAY, 8)
    ids = [agent(name, *SKILLS).agent_id for name in ("Ana", "Bea", "Cid")]
    day = GeneratedDay(centre, clock, seed=2)
    day.run(ids, steps=36)
    counted(centre.db)
    assert clock.moment < ny(DAY + timedelta(days=1), 0)  # the whole walk is in the day

    body = api.get(f"/api/reports/agents?date={DAY}").json()
    assert (body["date"], body["time_zone"]) == (DAY.isoformat(), "America/New_York")
    rows, totals = rows_by_id(body), body["totals"]
    assert [row["name"] for row in body["agents"]] == ["Ana", "Bea", "Cid"]
    expected = recount(centre.get_call(call_id) for call_id in day.call_ids)
    for agent_id, row in rows.items():
        mine = expected.get(agent_id, Counter())
        assert (row["answered"], row["answered_within"]) == (mine["answered"], mine["answered_within"])
        assert (row["calls_handled"], row["missed_offers"]) == (mine["handled"], mine["missed"])
        assert row["talk_seconds"] == pytest.approx(mine["talk"], abs=0.1)
        login, logoff = day.logged[agent_id]
        assert row["logged_in_seconds"] == pytest.approx((logoff - login).total_seconds(), abs=0.1)
        times = {entry["reason"]: entry["times"] for entry in row["not_ready"]}
        assert times == {
            **{reason: n for (who, reason), n in day.not_ready.items() if who == agent_id},
            **({"missed": mine["missed"]} if mine["missed"] else {}),
        }
        assert row["not_ready_seconds"] == pytest.approx(sum(e["seconds"] for e in row["not_ready"]), abs=0.3)
        busy = row["ringing_seconds"] + row["talk_seconds"] + row["after_call_work_seconds"]
        assert row["occupancy"] == pytest.approx(busy / (busy + row["idle_seconds"]), abs=1e-3)
        if row["calls_handled"]:
            handle = (row["talk_seconds"] + row["after_call_work_seconds"]) / row["calls_handled"]
            assert row["average_handle_seconds"] == pytest.approx(handle, abs=0.1)
    for name in ("answered", "answered_within", "calls_handled", "missed_offers"):
        assert totals[name] == sum(row[name] for row in rows.values()), name
    # The walk did what the report counts: waits past the threshold, offers rung out,
    # wrap-ups, reasons of each kind.
    assert 0 < totals["answered_within"] < totals["answered"] and totals["missed_offers"] > 0
    assert totals["after_call_work_seconds"] > 0 and totals["ringing_seconds"] > 0
    assert {entry["reason"] for entry in totals["not_ready"]} == {*REASONS, "missed"}

    intervals = api.get(f"/api/reports/intervals?date={DAY}&interval=60").json()["intervals"]
    whole = [row for row in intervals if row["combination"] == "all"]
    assert sum(row["answered"] for row in whole) == totals["answered"]
    assert sum(row["answered_within"] for row in whole) == totals["answered_within"]


def test_a_stretch_across_the_centres_midnight_counts_in_each_day(centre, clock, api, as_of):
    """In New York: Ana queued from 23:50 takes a call at 00:05 and ends it at 00:15; Bea is
    not ready (training) from 23:00 and still is at 01:00, now."""
    ana, bea = agent("Ana", *SKILLS), agent("Bea", *SKILLS)
    clock.moment = ny(DAY - timedelta(days=1), 23)
    centre.set_not_ready(bea.agent_id, "training")
    clock.moment = ny(DAY - timedelta(days=1), 23, 50)
    centre.make_available(ana.agent_id)
    clock.moment = ny(DAY, 0, 5)
    call, _ = centre.create_call({})
    assert centre.get_call(call.call_id).agent_id == ana.agent_id
    clock.advance(600)
    centre.release(ana.agent_id, then="offline", call_id=call.call_id)
    counted(centre.db)
    as_of(ny(DAY, 1))

    before = rows_by_id(api.get(f"/api/reports/agents?date={DAY - timedelta(days=1)}").json())
    after = rows_by_id(api.get(f"/api/reports/agents?date={DAY}").json())
    assert before[ana.agent_id]["idle_seconds"] == pytest.approx(600, abs=0.1)
    assert (before[ana.agent_id]["calls_handled"], before[ana.agent_id]["talk_seconds"]) == (0, 0)
    assert after[ana.agent_id]["idle_seconds"] == pytest.approx(300, abs=0.1)
    assert after[ana.agent_id]["talk_seconds"] == pytest.approx(600, abs=0.1)
    assert (after[ana.agent_id]["calls_handled"], after[ana.agent_id]["answered"]) == (1, 1)
    # Bea's stretch is open: an hour before midnight, an hour after; begun the day before.
    assert before[bea.agent_id]["not_ready"] == [{"reason": "training", "seconds": 3600.0, "times": 1}]
    assert after[bea.agent_id]["not_ready"] == [{"reason": "training", "seconds": 3600.0, "times": 0}]
    assert after[bea.agent_id]["logged_in_seconds"] == 3600.0


def test_the_stretch_an_agent_is_in_now_counts_today_up_to_now(centre, clock, api, as_of):
    ana = agent("Ana", *SKILLS)
    clock.moment = ny(DAY, 9)
    centre.make_available(ana.agent_id)
    clock.advance(120)
    call, _ = centre.create_call({})  # taken at once: attending since 09:02
    counted(centre.db)
    as_of(ny(DAY, 9, 2) + timedelta(seconds=45))

    row = api.get(f"/api/reports/agents?date={DAY}").json()["agents"][0]
    assert (row["idle_seconds"], row["talk_seconds"], row["calls_handled"]) == (120.0, 45.0, 0)
    assert (row["answered"], row["occupancy"]) == (1, round(45 / 165, 4))
    assert row["average_handle_seconds"] is None  # nothing handled yet: the call goes on
    # Nothing of it the day before, or counted twice once it ends.
    assert api.get(f"/api/reports/agents?date={DAY - timedelta(days=1)}").json()["agents"] == []
    clock.moment = ny(DAY, 9, 2) + timedelta(seconds=45)
    centre.release(ana.agent_id, then="offline", call_id=call.call_id)
    counted(centre.db)
    as_of(ny(DAY, 12))
    row = api.get(f"/api/reports/agents?date={DAY}").json()["agents"][0]
    assert (row["talk_seconds"], row["calls_handled"], row["logged_in_seconds"]) == (45.0, 1, 165.0)


def test_one_agent_a_removed_one_and_an_unknown_one(centre, clock, api, as_of):
    ana, bea = agent("Ana", *SKILLS), agent("Bea", *SKILLS)
    clock.moment = ny(DAY, 9)
    centre.make_available(ana.agent_id)
    clock.advance(60)
    removed = centre.log_off(ana.agent_id).agent
    centre.agents.remove(ana.agent_id, expected_version=removed.version)
    counted(centre.db)
    as_of(ny(DAY, 18))

    body = api.get(f"/api/reports/agents?date={DAY}&agent_id={ana.agent_id}").json()
    assert [(r["agent_id"], r["name"], r["removed"], r["idle_seconds"]) for r in body["agents"]] == [
        (ana.agent_id, None, True, 60.0)
    ]
    assert body["totals"]["idle_seconds"] == 60.0 and "agent_id" not in body["totals"]
    quiet = api.get(f"/api/reports/agents?date={DAY}&agent_id={bea.agent_id}").json()["agents"]
    assert [(r["name"], r["removed"], r["logged_in_seconds"], r["occupancy"]) for r in quiet] == [
        ("Bea", False, 0.0, None)
    ]
    unknown = assert_problem(api.get(f"/api/reports/agents?date={DAY}&agent_id=nobody"), 404)
    assert "nobody" in unknown["message"]


def test_the_api_refuses_a_day_that_is_not_one_to_come_or_no_longer_kept(api, moto_db, settings):
    settings.REPORT_RETENTION_DAYS = 30
    today = datetime.now(ZoneInfo(settings.TIME_ZONE)).date()
    assert "`date`" in assert_problem(api.get("/api/reports/agents?date=24-11-2026"), 400)["message"]
    future = assert_problem(api.get(f"/api/reports/agents?date={today + timedelta(days=1)}"), 400)
    assert f"the latest report is today's, {today}" in future["message"]
    old = assert_problem(api.get(f"/api/reports/agents?date={today - timedelta(days=31)}"), 400)
    assert f"the earliest is {today - timedelta(days=30)}" in old["message"]
    assert api.get(f"/api/reports/agents?date={today - timedelta(days=30)}").status_code == 200
    assert_problem(api.get("/api/reports/agents?agent_id=a%20b"), 400)
    assert api.get("/api/reports/agents").json()["date"] == today.isoformat()


def test_the_page_and_its_csv(centre, clock, viewer_client, as_of):
    ana, bea = agent("Ana", *SKILLS), agent("Bea", *SKILLS)
    clock.moment = ny(DAY, 9)
    centre.make_available(ana.agent_id)
    clock.advance(30)
    call, _ = centre.create_call({})
    clock.advance(3723)  # 1:02:03 talking
    centre.release(ana.agent_id, then="wrap_up", call_id=call.call_id)
    clock.advance(75)
    centre.set_not_ready(ana.agent_id, "lunch")
    clock.advance(1800)
    centre.log_off(ana.agent_id)
    centre.set_not_ready(bea.agent_id, "break")  # still on break: counted up to now
    counted(centre.db)
    as_of(clock.moment + timedelta(seconds=600))

    html = viewer_client.get(reverse("reports-agents"), {"date": DAY.isoformat()}).content.decode()
    assert "2 agents" in html and "1 call handled, 1 answered (1 within their line's threshold)" in html
    ana_row = html[html.index(f'data-agent="{ana.agent_id}"') :]
    ana_row = ana_row[: ana_row.index("</tr>")]
    for shown in ("1:02:03", "0:01:15", "1:03:18", "0:30:00", "lunch</bdi> 0:30:00 ×1"):
        assert shown in ana_row, shown
    assert 'data-agent="all"' in html and "break</bdi> 0:10:00 ×1" in html
    assert f'href="{reverse("reports-agents-csv")}?date={DAY}"' in html
    assert 'aria-current="page" data-tab="agents"' in html  # the reports' Agents tab

    response = viewer_client.get(reverse("reports-agents-csv"), {"date": DAY.isoformat()})
    assert response["Content-Disposition"] == f'attachment; filename="agents-{DAY}.csv"'
    header, *rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert header[:4] == ["Agent id", "Name", "Calls handled", "Answered"]
    assert header[-4:] == ["Not ready: break (s)", "Not ready: break (times)", "Not ready: lunch (s)",
                           "Not ready: lunch (times)"]  # fmt: skip
    assert [row[:3] for row in rows] == [
        [ana.agent_id, "Ana", "1"],
        [bea.agent_id, "Bea", "0"],
        ["", "All agents", "1"],
    ]
    assert rows[0][header.index("Talk (s)")] == "3723.0" and rows[2][-4:] == ["600.0", "1", "1800.0", "1"]

    refused = viewer_client.get(reverse("reports-agents"), {"date": "tomorrow"})
    assert refused.status_code == 400 and "`date` is a day as YYYY-MM-DD" in refused.content.decode()
    assert Client().get(reverse("reports-agents"))["Location"].startswith("/login/")
