"""Every time on the pages is one `<time>` element: machine-readable UTC in `datetime`, the
text in the centre's time zone (settings.TIME_ZONE), the time of day when it is today there
and the day before it otherwise, and the full date with the zone in the title."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.template import Context, Template, TemplateSyntaxError
from django.test import RequestFactory
from django.utils import timezone as django_timezone

from queues_app.http.context_processors import centre_time
from queues_app.templatetags import switchboard
from queues_app.templatetags.switchboard import clock

# 25 Nov 2026, 15:00 UTC: 10:00 in New York (EST, UTC-05:00), 20:30 in Kolkata.
NOW = datetime(2026, 11, 25, 15, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def fixed_now(monkeypatch):
    monkeypatch.setattr(switchboard, "now", lambda: NOW)


@pytest.fixture
def new_york(settings):
    settings.TIME_ZONE = "America/New_York"
    with django_timezone.override("America/New_York"):
        yield


def render(source: str, **context) -> str:
    return Template("{% load switchboard %}" + source).render(Context(context))


def test_a_moment_of_today_is_its_time_of_day_with_the_date_and_zone_in_the_title():
    html = render("{{ at|clock }}", at="2026-11-25T14:03:12.123456Z")
    assert html == '<time datetime="2026-11-25T14:03:12Z" title="25 Nov 2026 14:03:12 UTC">14:03:12</time>'


def test_in_the_centres_zone_the_text_and_the_title_are_local(new_york):
    html = render("{{ at|clock }}", at="2026-11-25T14:03:12.123456Z")
    assert html == '<time datetime="2026-11-25T14:03:12Z" title="25 Nov 2026 09:03:12 EST">09:03:12</time>'


def test_today_is_the_centres_day_not_utcs(new_york):
    # 03:00 UTC on the 25th is still the 24th in New York: shown with its day.
    assert ">24 Nov 22:00:00<" in render("{{ at|clock }}", at="2026-11-25T03:00:00.000000Z")
    # 05:30 UTC on the 25th is 00:30 on the 25th there: today.
    assert ">00:30:00<" in render("{{ at|clock }}", at="2026-11-25T05:30:00.000000Z")


def test_another_year_names_its_year():
    assert ">3 Dec 2025 08:00:00<" in render("{{ at|clock }}", at="2025-12-03T08:00:00.000000Z")


def test_an_aware_datetime_in_another_zone_is_the_same_moment():
    paris = timezone(timedelta(hours=1))
    html = clock(datetime(2026, 11, 25, 15, 3, 12, tzinfo=paris))
    assert 'datetime="2026-11-25T14:03:12Z"' in html
    assert ">14:03:12<" in html


def test_a_naive_datetime_is_taken_as_utc():
    assert 'datetime="2026-11-25T14:03:12Z"' in clock(datetime(2026, 11, 25, 14, 3, 12))


def test_a_stored_minute_is_shown_to_the_minute():
    html = render('{{ minute|clock:"minute" }}', minute="2026-11-24T17:03")
    assert 'datetime="2026-11-24T17:03:00Z"' in html
    assert 'title="24 Nov 2026 17:03:00 UTC">24 Nov 17:03</time>' in html


def test_the_time_of_day_leaves_the_day_to_the_title():
    html = render('{{ at|clock:"time" }}', at=datetime(2026, 11, 21, 17, 3, 12, tzinfo=UTC))
    assert html.endswith('title="21 Nov 2026 17:03:12 UTC">17:03:12</time>')


def test_milliseconds_tell_apart_two_moments_of_one_second():
    first = render('{{ at|clock:"ms" }}', at="2026-11-25T14:03:12.120000Z")
    second = render('{{ at|clock:"ms" }}', at="2026-11-25T14:03:12.874000Z")
    assert ">14:03:12.120<" in first and ">14:03:12.874<" in second
    assert 'datetime="2026-11-25T14:03:12.120Z"' in first


@pytest.mark.parametrize("missing", [None, ""])
def test_no_moment_is_a_dash(missing):
    assert render("{{ at|clock }}", at=missing) == "–"


def test_an_unknown_precision_is_a_template_error():
    with pytest.raises(TemplateSyntaxError, match="precision"):
        render('{{ at|clock:"fortnight" }}', at="2026-11-21T17:03:12.000000Z")


def test_every_page_is_told_the_centres_zone(new_york):
    context = centre_time(RequestFactory().get("/"))
    assert context["centre_zone"] == "America/New_York"
    assert context["centre_zone_label"] in {
        "America/New_York (EST, UTC-05:00)",
        "America/New_York (EDT, UTC-04:00)",
    }


def test_utc_is_named_plainly(settings):
    settings.TIME_ZONE = "UTC"
    assert centre_time(RequestFactory().get("/"))["centre_zone_label"] == "UTC"


@pytest.mark.parametrize("seconds, shown", [(None, "–"), (0, "0:00"), (7.9, "0:07"), (275, "4:35"), (3723, "1:02:03")])
def test_a_wallboards_wait_reads_as_a_stopwatch(seconds, shown):
    from queues_app.templatetags.switchboard import stopwatch

    assert stopwatch(seconds) == shown
