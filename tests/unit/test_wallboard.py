"""The wallboard: anyone signed in sees the live figures per skill combination on a page
without the site's menu; it refreshes its board by itself and says when it cannot read."""

import re

import pytest
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.local import free_port
from queues_app.figures.counters import MetricsStore
from tests.helpers import figures as seeded
from tests.helpers.pages import figure

HTMX = {"HTTP_HX_REQUEST": "true"}


def line(html, label):
    """The HTML of one line of the board."""
    match = re.search(rf'<section class="line[^"]*" data-line="{re.escape(label)}".*?</section>', html, re.S)
    assert match, label
    return match.group(0)


@pytest.fixture
def floor(moto_db):
    """Two callers wait for French · X with nobody who fits; Ana (Spanish, F) is on a call,
    Bea (English, M) is queued; Ana's caller was answered at once (within the threshold)
    and one more Spanish · F caller after it."""
    router = CallCenter()
    ana = Agents().create("Ana", {"language": ["Spanish"], "gender": ["F"]})
    router.make_available(ana.agent_id)
    router.create_call({"language": "Spanish", "gender": "F"})
    bea = Agents().create("Bea", {"language": ["English"], "gender": ["M"]})
    router.make_available(bea.agent_id)
    for _ in range(2):
        router.create_call({"language": "French", "gender": "X"})
    seeded.answered(moto_db, 500, ("Spanish", "F"))
    MetricsStore(moto_db).flush()
    return moto_db


def test_a_viewer_sees_the_wallboard_without_the_site_menu(viewer_client, floor):
    response = viewer_client.get(reverse("wallboard"))
    assert response.status_code == 200
    html = response.content.decode()
    assert 'class="mainnav"' not in html
    assert "Log out" not in html
    assert 'href="/static/css/wallboard.css"' in html


def test_it_shows_the_figures_of_each_combination(viewer_client, floor):
    html = viewer_client.get(reverse("wallboard")).content.decode()
    french = line(html, "French · X")
    assert figure(french, "waiting") == "2"
    assert figure(french, "agents-queued") == "0"
    assert 'class="line short"' in french  # callers wait and nobody who fits is queued
    spanish = line(html, "Spanish · F")
    assert figure(spanish, "waiting") == "0"
    assert figure(spanish, "agents-attending") == "1"
    assert figure(spanish, "service-level") == "50%"
    english = line(html, "English · M")
    assert figure(english, "agents-queued") == "1"
    assert figure(english, "service-level") == "–"  # nobody left the line


def test_the_totals_are_the_overviews(viewer_client, floor):
    board = line(viewer_client.get(reverse("wallboard")).content.decode(), "all")
    overview = viewer_client.get(reverse("home")).content.decode()
    assert figure(board, "waiting") == figure(overview, "callers-waiting") == "2"
    assert figure(board, "agents-queued") == "1"
    assert figure(board, "agents-attending") == "1"
    assert figure(board, "service-level") == "50%"


def test_an_htmx_request_gets_the_board_alone_and_it_keeps_polling(viewer_client, floor):
    response = viewer_client.get(reverse("wallboard"), **HTMX)
    html = response.content.decode()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="board"')
    assert "<html" not in html
    assert 'hx-trigger="every 5s"' in html
    assert 'data-line="French · X"' in html


def test_it_requires_signing_in(client, floor):
    response = client.get(reverse("wallboard"))
    assert response.status_code == 302
    assert "/login/" in response["Location"]


def test_it_rejects_post(supervisor_client, floor):
    assert supervisor_client.post(reverse("wallboard")).status_code == 405


def test_unreachable_dynamodb_shows_a_banner_in_the_board_which_keeps_polling(viewer_client, settings):
    settings.DYNAMODB_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}"
    settings.DYNAMODB_MAX_ATTEMPTS = 1
    settings.DYNAMODB_CONNECT_TIMEOUT = 0.5
    response = viewer_client.get(reverse("wallboard"), **HTMX)
    assert response.status_code == 503
    html = response.content.decode()
    assert "DynamoDB unavailable" in html
    assert 'hx-get="/wallboard/"' in html


def test_a_partial_combination_with_figures_today_has_its_line_as_on_the_overview(viewer_client, moto_db):
    """Callers who asked for English with any gender were answered today; none waits now."""
    seeded.answered(moto_db, 4, ("English", None))
    seeded.handled(moto_db, 150, ("English", None))
    MetricsStore(moto_db).flush()
    html = viewer_client.get(reverse("wallboard")).content.decode()
    english = line(html, "English · any gender")
    assert figure(english, "waiting") == "0" and figure(english, "service-level") == "100%"
    assert figure(english, "aht") == "2:30"
    assert figure(line(html, "all"), "aht") == "2:30"
