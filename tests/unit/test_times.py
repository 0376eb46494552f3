"""Every time on the pages is one `<time>` element: machine-readable UTC in `datetime`, the
UTC text in the title and, until the page's script shows the viewer's local time, inside."""

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.template import Context, Template, TemplateSyntaxError

from queues_app.templatetags.switchboard import clock


def render(source: str, **context) -> str:
    return Template("{% load switchboard %}" + source).render(Context(context))


def test_a_stored_timestamp_becomes_a_time_element_in_utc():
    html = render("{{ at|clock }}", at="2026-11-21T17:03:12.123456Z")
    assert html == (
        '<time datetime="2026-11-21T17:03:12Z" title="2026-11-21 17:03:12 UTC" data-precision="second">'
        "2026-11-21 17:03:12 UTC</time>"
    )


def test_an_aware_datetime_in_another_zone_is_shown_in_utc():
    paris = timezone(timedelta(hours=1))
    html = clock(datetime(2026, 11, 21, 18, 3, 12, tzinfo=paris))
    assert 'datetime="2026-11-21T17:03:12Z"' in html
    assert ">2026-11-21 17:03:12 UTC<" in html


def test_a_naive_datetime_is_taken_as_utc():
    assert 'datetime="2026-11-21T17:03:12Z"' in clock(datetime(2026, 11, 21, 17, 3, 12))


def test_a_stored_minute_is_shown_to_the_minute_with_the_full_moment_in_the_title():
    html = render('{{ minute|clock:"minute" }}', minute="2026-11-21T17:03")
    assert 'datetime="2026-11-21T17:03:00Z"' in html
    assert 'title="2026-11-21 17:03:00 UTC"' in html
    assert 'data-precision="minute">2026-11-21 17:03 UTC</time>' in html


def test_the_time_of_day_keeps_the_date_in_the_title():
    html = render('{{ at|clock:"time" }}', at=datetime(2026, 11, 21, 17, 3, 12, tzinfo=UTC))
    assert 'title="2026-11-21 17:03:12 UTC"' in html
    assert 'data-precision="time">17:03:12 UTC</time>' in html


@pytest.mark.parametrize("missing", [None, ""])
def test_no_moment_is_a_dash(missing):
    assert render("{{ at|clock }}", at=missing) == "–"


def test_an_unknown_precision_is_a_template_error():
    with pytest.raises(TemplateSyntaxError, match="precision"):
        render('{{ at|clock:"fortnight" }}', at="2026-11-21T17:03:12.000000Z")
