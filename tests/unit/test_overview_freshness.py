"""Each overview panel says when its figures were read, so the page can tell fresh from stale;
the page carries the control that pauses the polling and says how often each panel polls."""

from datetime import UTC, datetime, timedelta

import pytest
from django.core.cache import cache
from django.urls import reverse

from queues_app.ddb.local import free_port
from queues_app.views import overview

HTMX = {"HTTP_HX_REQUEST": "true"}
READ_AT = datetime(2026, 11, 21, 17, 3, 12, 250000, tzinfo=UTC)


class Moments:
    """The views' clock, moved by hand."""

    def __init__(self, start: datetime):
        self.moment = start

    def __call__(self) -> datetime:
        return self.moment


@pytest.fixture
def moments(monkeypatch):
    clock = Moments(READ_AT)
    monkeypatch.setattr(overview, "now", clock)
    return clock


def updated_of(html: str) -> str:
    start = html.index("<span data-updated>")
    return html[start : html.index("</span>", start)]


@pytest.mark.parametrize("name", list(overview.PANELS))
def test_a_panel_says_when_its_figures_were_read(supervisor_client, moto_db, moments, name):
    response = supervisor_client.get(reverse("home"), {"panel": name}, **HTMX)
    assert response.status_code == 200
    updated = updated_of(response.content.decode())
    assert 'updated <time datetime="2026-11-21T17:03:12Z" title="21 Nov 2026 17:03:12 UTC">17:03:12</time>' in updated


def test_a_cached_panel_says_when_the_cache_was_filled_not_when_it_was_served(
    supervisor_client, moto_db, moments, settings
):
    settings.SWITCHBOARD_PANEL_CACHE_SECONDS = 60
    cache.clear()
    first = supervisor_client.get(reverse("home"), {"panel": "calls"}, **HTMX)
    moments.moment = READ_AT + timedelta(seconds=20)
    again = supervisor_client.get(reverse("home"), {"panel": "calls"}, **HTMX)
    assert updated_of(again.content.decode()) == updated_of(first.content.decode())
    assert "17:03:12" in updated_of(again.content.decode())
    cache.clear()


def test_a_panel_that_cannot_read_shows_no_time_of_its_own(supervisor_client, settings):
    settings.DYNAMODB_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}"
    settings.DYNAMODB_MAX_ATTEMPTS = 1
    settings.DYNAMODB_CONNECT_TIMEOUT = 0.5
    response = supervisor_client.get(reverse("home"), {"panel": "calls"}, **HTMX)
    assert response.status_code == 503
    html = response.content.decode()
    assert "DynamoDB unavailable" in html
    # The page keeps showing the last time it had, marked stale once two intervals pass.
    assert updated_of(html) == "<span data-updated>"
    assert 'class="stale-badge"' in html


def test_the_overview_has_the_pause_control_and_the_announcements_region(supervisor_client, moto_db):
    html = supervisor_client.get(reverse("home")).content.decode()
    assert '<button type="button" id="poll-toggle"' in html
    assert 'id="poll-note" class="sr-only" aria-live="polite"' in html
    assert html.count("<span data-updated>updated <time") == len(overview.OVERVIEW_PANELS)


def test_each_panel_says_how_often_it_polls(supervisor_client, moto_db):
    for page, panel, every in (
        ("home", "calls", "2s"),
        ("home", "grid", "2s"),
        ("home", "history", "30s"),
        ("system", "capacity", "10s"),
    ):
        html = supervisor_client.get(reverse(page)).content.decode()
        assert f'hx-get="/?panel={panel}" hx-swap="outerHTML" hx-trigger="every {every},' in html
        start = html.index(f'hx-get="/?panel={panel}"')
        assert f'data-poll="{every}"' in html[start : html.index(">", start)]


def test_the_overview_leads_with_the_supervisors_figures_and_dynamodbs_are_on_the_system_page(
    supervisor_client, moto_db
):
    html = supervisor_client.get(reverse("home")).content.decode()
    order = [html.index(f'id="{name}-panel"') for name in ("calls", "service_level", "grid", "shipments", "tasks")]
    assert order == sorted(order)
    assert 'id="capacity-panel"' not in html and "DynamoDB, last" not in html
    system = supervisor_client.get(reverse("system")).content.decode()
    assert 'id="capacity-panel"' in system and "DynamoDB, last 15 minutes" in system
    # ... and refreshes itself there through the overview's panel answers.
    assert 'hx-get="/?panel=capacity"' in system
