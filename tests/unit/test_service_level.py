"""The calls' service level: answered and abandoned calls counted from their call facts,
read back per skill combination and overall for the last 15 minutes and
today; occupancy from samples; the overview's panel, /metrics and the call page's
"end as abandoned" action."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.audit.store import AuditTrail
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.ddb.client import default
from queues_app.ddb.clock import now
from queues_app.figures import facts, service_level
from queues_app.figures.counters import MetricsStore
from queues_app.figures.service_level import Figures, ServiceLevelReader, combination_name
from queues_app.operations import Operations
from tests.helpers import figures as seeded

HTMX = {"HTTP_HX_REQUEST": "true"}


def read(db=None):
    MetricsStore(db or default()).flush()
    return ServiceLevelReader(db or default()).read()


def test_a_combination_is_named_by_its_values_in_order_with_any_for_no_preference():
    assert combination_name({"language": "Spanish", "gender": None}) == "Spanish#any"
    assert combination_name(("French", "F")) == "French#F"
    assert combination_name("English#M") == "English#M"


def test_figures_of_a_window_follow_the_contact_center_definitions(moto_db, settings):
    settings.SERVICE_LEVEL_SECONDS = 20
    for wait in (5, 20, 40):  # within, at the threshold (within), over
        seeded.answered(moto_db, wait, {"language": "Spanish", "gender": "F"})
    seeded.abandoned(moto_db, 70, {"language": "Spanish", "gender": "F"})
    seeded.answered(moto_db, 10, {"language": "French", "gender": None})

    figures = read(moto_db).recent
    spanish = figures.by_combination["Spanish#F"]
    assert (spanish.answered, spanish.answered_within, spanish.abandoned) == (3, 2, 1)
    assert spanish.service_level == pytest.approx(2 / 4)  # within the threshold over all who left the line
    assert spanish.average_speed_of_answer == pytest.approx((5 + 20 + 40) / 3)
    assert spanish.wait_max == 70  # the abandoned caller waited longest
    assert spanish.abandon_rate == pytest.approx(1 / 4)
    overall = figures.overall
    assert (overall.answered, overall.answered_within, overall.abandoned) == (4, 3, 1)
    assert overall.service_level == pytest.approx(3 / 5)
    assert overall.average_speed_of_answer == pytest.approx((5 + 20 + 40 + 10) / 4)
    assert [name for name, _ in figures.rows] == ["French · any", "Spanish · F"]


def test_a_window_without_calls_has_no_ratios_rather_than_zero():
    empty = Figures()
    assert (empty.service_level, empty.average_speed_of_answer, empty.abandon_rate, empty.wait_max) == (
        None,
        None,
        None,
        None,
    )


def test_the_last_15_minutes_leave_out_older_calls_that_today_keeps(moto_db):
    # Midday of today, whatever the hour the test runs: 20 minutes earlier is still today.
    moment = now().replace(hour=12, minute=0, second=0, microsecond=0)
    seeded.answered(moto_db, 30, ("Spanish", "F"), moment=moment - timedelta(minutes=20))
    seeded.answered(moto_db, 3, ("Spanish", "F"), moment=moment)
    MetricsStore(moto_db).flush()
    figures = ServiceLevelReader(moto_db, clock=lambda: moment).read()
    assert figures.recent.overall.answered == 1 and figures.recent.overall.wait_max == 3
    assert figures.today.overall.answered == 2 and figures.today.overall.wait_max == 30


def test_today_is_the_centres_day_in_its_time_zone(moto_db, settings):
    """In New York, 01:00 UTC is 20:00 of the day before: a call answered then is not
    today's at 14:00 UTC (09:00 in New York), one answered at 06:00 UTC (01:00) is."""
    settings.TIME_ZONE = "America/New_York"
    morning = datetime(2026, 11, 25, 14, 0, tzinfo=UTC)
    seeded.answered(moto_db, 10, ("Spanish", "F"), moment=datetime(2026, 11, 25, 1, 0, tzinfo=UTC))
    seeded.answered(moto_db, 4, ("Spanish", "F"), moment=datetime(2026, 11, 25, 6, 0, tzinfo=UTC))
    MetricsStore(moto_db).flush()
    today = ServiceLevelReader(moto_db, clock=lambda: morning).read().today.overall
    assert (today.answered, today.wait_max) == (1, 4)
    settings.TIME_ZONE = "UTC"  # a centre on UTC: a call at 01:00 UTC is the 25th's
    seeded.answered(moto_db, 10, ("Spanish", "F"), moment=datetime(2026, 11, 25, 1, 0, tzinfo=UTC))
    MetricsStore(moto_db).flush()
    today = ServiceLevelReader(moto_db, clock=lambda: morning).read().today.overall
    assert (today.answered, today.wait_max) == (2, 10)


def test_the_longest_wait_is_kept_across_flushes_and_processes(moto_db):
    seeded.answered(moto_db, 50, ("English", "M"))
    MetricsStore(moto_db).flush()
    seeded.answered(moto_db, 5, ("English", "M"))  # a later flush with a shorter wait
    figures = read(moto_db).today.by_combination["English#M"]
    assert (figures.answered, figures.wait_max) == (2, 50)


def test_a_failed_flush_keeps_the_counts_for_the_next_one(moto_db, monkeypatch):
    seeded.answered(moto_db, 8, ("English", "M"))
    real_add = MetricsStore._add

    def unavailable(self, pk, sk, *args, **kwargs):
        if pk.startswith("SERVICE"):
            raise errors.Unavailable("DynamoDB is not reachable")
        return real_add(self, pk, sk, *args, **kwargs)

    monkeypatch.setattr(MetricsStore, "_add", unavailable)
    MetricsStore(moto_db).flush()
    monkeypatch.setattr(MetricsStore, "_add", real_add)
    figures = read(moto_db).today.overall
    assert (figures.answered, figures.wait_max) == (1, 8)


def test_occupancy_is_busy_over_staffed_agents_summed_over_the_samples(moto_db):
    service_level.sample_occupancy(moto_db, busy=2, staffed=4)
    service_level.sample_occupancy(moto_db, busy=1, staffed=4)
    occupancy = read(moto_db).recent.occupancy
    assert (occupancy.samples, occupancy.share) == (2, pytest.approx(3 / 8))
    assert "occupancy" not in read(moto_db).recent.by_combination


def test_collect_metrics_samples_occupancy_as_amazon_connect_defines_it(moto_db):
    """Busy with a call (ringing, attending, wrap-up) over busy or idle in the queue: an
    agent not ready or offline is in neither."""
    from queues_app.monitoring.sampler import MetricsCollector

    router = CallCenter()
    spanish = {"language": ["Spanish"], "gender": ["F"]}
    ana, bea, cai, dee, eve, flo = (Agents().create(n, spanish) for n in ("Ana", "Bea", "Cai", "Dee", "Eve", "Flo"))
    for agent in (ana, bea, cai, dee):
        router.make_available(agent.agent_id)
    for _ in range(3):
        router.create_call({"language": "Spanish", "gender": "F"})
    taken = [call.agent_id for call in router.calls.in_progress().items + router.calls.ringing().items]
    router.release(taken[0], then="wrap_up")  # one busy in wrap-up, two on a call, one queued
    router.set_not_ready(eve.agent_id, "break")
    assert flo.status == "offline"
    MetricsCollector(moto_db).sample()
    occupancy = ServiceLevelReader(moto_db).read().recent.occupancy
    assert (occupancy.busy, occupancy.staffed) == (3, 4)


def answered_call(name="Ana"):
    agent = Agents().create(name, {"language": ["Spanish"], "gender": ["F"]})
    CallCenter().make_available(agent.agent_id)
    call, _ = Operations("sam", "page").create_call({"language": "Spanish", "gender": "F"})
    assert call.status == CallStatus.ASSIGNED
    return call


def test_an_assignment_through_the_actions_counts_an_answered_call(moto_db):
    answered_call()
    figures = read(moto_db).recent
    assert list(figures.by_combination) == ["Spanish#F"]
    assert figures.overall.answered == 1


def test_the_overview_panel_shows_the_service_level(supervisor_client, moto_db):
    answered_call()
    MetricsStore(moto_db).flush()
    response = supervisor_client.get(reverse("home"), {"panel": "service_level"}, **HTMX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="service_level-panel"' in html
    assert '<td data-figure="answered">1</td>' in html
    assert '<td data-figure="service-level">100%</td>' in html
    assert 'data-combination="Spanish · F"' in html


def test_metrics_exposes_the_service_level_by_window_and_combination(supervisor_client, moto_db):
    answered_call()
    MetricsStore(moto_db).flush()
    body = supervisor_client.get(reverse("metrics")).content.decode()
    assert 'switchboard_calls_answered{combination="all",window="15m"} 1.0' in body
    assert 'switchboard_calls_answered{combination="Spanish#F",window="today"} 1.0' in body
    assert 'switchboard_calls_service_level_ratio{combination="all",window="15m"} 1.0' in body
    assert "switchboard_calls_service_level_threshold_seconds 20.0" in body
    assert "switchboard_calls_abandon_ratio" in body


def waiting_call():
    call, _ = CallCenter().create_call({"language": "French", "gender": "M"})
    assert call.status == CallStatus.WAITING
    return call


def test_ending_a_waiting_call_as_abandoned_asks_first(supervisor_client, moto_db):
    call = waiting_call()
    response = supervisor_client.post(reverse("call-abandon", args=[call.call_id]))
    assert response.status_code == 200
    assert f"End waiting call {call.call_id} as abandoned" in response.content.decode()
    assert CallCenter().get_call(call.call_id).status == CallStatus.WAITING


def test_ending_a_waiting_call_as_abandoned_records_and_counts_it(supervisor_client, moto_db):
    call = waiting_call()
    page = supervisor_client.get(reverse("call-detail", args=[call.call_id])).content.decode()
    assert reverse("call-abandon", args=[call.call_id]) in page
    response = supervisor_client.post(reverse("call-abandon", args=[call.call_id]), {"confirmed": "1"}, follow=True)
    assert f"Call {call.call_id} ended as abandoned." in response.content.decode()
    assert CallCenter().get_call(call.call_id).status == CallStatus.ABANDONED
    [entry] = AuditTrail().for_target(f"call:{call.call_id}").entries
    assert (entry.action, entry.actor, entry.source) == ("call.abandoned", "sam-supervisor", "page")
    figures = read(moto_db).recent.by_combination["French#M"]
    assert (figures.abandoned, figures.answered, figures.abandon_rate) == (1, 0, 1.0)


def test_a_call_no_longer_waiting_is_not_abandoned_and_the_page_says_why(supervisor_client, moto_db):
    call = answered_call()
    response = supervisor_client.post(reverse("call-abandon", args=[call.call_id]), {"confirmed": "1"}, follow=True)
    assert f"Call {call.call_id} is no longer waiting: it was assigned to Ana." in response.content.decode()
    assert CallCenter().get_call(call.call_id).status == CallStatus.ASSIGNED
    assert read(moto_db).recent.overall.abandoned == 0


def test_a_viewer_may_not_end_a_call(viewer_client, moto_db):
    call = waiting_call()
    page = viewer_client.get(reverse("call-detail", args=[call.call_id])).content.decode()
    assert reverse("call-abandon", args=[call.call_id]) not in page
    response = viewer_client.post(reverse("call-abandon", args=[call.call_id]), {"confirmed": "1"})
    assert response.status_code == 403
    assert CallCenter().get_call(call.call_id).status == CallStatus.WAITING


def test_a_figure_is_a_fact_until_the_flush_counts_it(moto_db):
    seeded.answered(moto_db, 4, ("Spanish", "F"))
    seeded.abandoned(moto_db, 9, ("Spanish", "F"))
    waiting = [item for pk in facts.partitions() for item in moto_db.partition_items(moto_db.table("metrics"), pk)]
    assert sorted(item["kind"] for item in waiting) == ["abandoned", "answered", "offered", "offered"]
    assert ServiceLevelReader(moto_db).read().today.overall.left_the_line == 0

    assert read(moto_db).today.overall.left_the_line == 2
    assert not [item for pk in facts.partitions() for item in moto_db.partition_items(moto_db.table("metrics"), pk)]


def test_the_overview_and_metrics_give_the_average_handle_time(supervisor_client, moto_db):
    from tests.helpers import figures as seeded

    for seconds in (100, 200):
        seeded.handled(moto_db, seconds, ("Spanish", "F"))
    MetricsStore(moto_db).flush()
    panel = supervisor_client.get("/?panel=service_level", HTTP_HX_REQUEST="true").content.decode()
    assert re.search(r'data-figure="aht">2 min 30 s<', panel)
    metrics = supervisor_client.get("/metrics").content.decode()
    assert 'switchboard_calls_handle_time_seconds{combination="all",window="today"} 150.0' in metrics
    assert 'switchboard_calls_handle_time_seconds{combination="Spanish#F",window="today"} 150.0' in metrics
