"""The overview's panels pushed to every open overview (`GET /live/`): the same fragments
the panels poll for, read and rendered once per process for every stream; a process
full of streams answers 204 (the page polls), and a stopping worker ends them."""

import re

import pytest
from django.core.cache import cache
from django.core.signals import request_finished
from django.db import close_old_connections
from django.urls import reverse

from queues_app.views import live, overview

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def streams(settings):
    settings.SWITCHBOARD_PANEL_CACHE_SECONDS = 60
    cache.clear()
    opened = []

    def open_stream(client):
        response = client.get(reverse("live"))
        opened.append(response)
        return response

    yield open_stream
    for response in opened:
        finish(response)
    live.close_all(wait_seconds=5)  # no reader left to outlive the test's tables
    cache.clear()


def finish(response) -> None:
    """Close a stream as the server does when the browser goes (the test database stays open,
    as the test client keeps it for a response it closes itself)."""
    request_finished.disconnect(close_old_connections)
    try:
        response.close()
    finally:
        request_finished.connect(close_old_connections)


def events(response, count: int) -> dict[str, str]:
    """The first `count` panels a stream sends, as {panel: html}."""
    found: dict[str, str] = {}
    text = ""
    chunks = iter(response.streaming_content)
    while len(found) < count:
        text += next(chunks).decode()
        for name, data in re.findall(r"event: (\S+)\n((?:data: .*\n)+)\n", text):
            found[name] = "\n".join(line.removeprefix("data: ") for line in data.splitlines())
    return found


def test_a_stream_sends_each_panel_as_the_panel_answers_it(supervisor_client, moto_db, streams):
    response = streams(supervisor_client)
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache"
    pushed = events(response, len(live.PERIODS))
    assert set(pushed) == set(live.PERIODS)
    for name, html in pushed.items():
        polled = supervisor_client.get(reverse("home"), {"panel": name}, **HTMX).content.decode()
        assert html == polled.strip(), name  # the same figures, from the same cache


def test_twenty_streams_of_a_process_read_and_render_each_panel_once(supervisor_client, moto_db, streams, monkeypatch):
    reads: list[str] = []
    real = live.read_panel
    monkeypatch.setattr(
        live, "read_panel", lambda request, dashboard, name: reads.append(name) or real(request, dashboard, name)
    )
    opened = [streams(supervisor_client) for _ in range(20)]
    for response in opened:
        assert len(events(response, len(live.PERIODS))) == len(live.PERIODS)
    assert sorted(reads) == sorted(live.PERIODS)


def test_a_full_process_answers_204_and_the_page_polls(supervisor_client, moto_db, streams, settings):
    settings.LIVE_STREAMS_PER_PROCESS = 1
    first = streams(supervisor_client)
    assert first.status_code == 200
    assert streams(supervisor_client).status_code == 204
    finish(first)
    assert streams(supervisor_client).status_code == 200


def test_under_gunicorn_streams_leave_the_request_threads_free(settings, monkeypatch):
    settings.LIVE_STREAMS_PER_PROCESS = 56
    monkeypatch.setattr(live, "_capacity", None)
    live.reserve_threads(64, 8)
    assert live.capacity() == 56
    live.reserve_threads(8, 8)  # a worker started with the requests' threads alone
    assert live.capacity() == 0
    monkeypatch.setattr(live, "_capacity", None)


def test_a_stopping_worker_ends_its_streams(supervisor_client, moto_db, streams):
    response = streams(supervisor_client)
    events(response, 1)
    live.close_all()
    rest = b"".join(response.streaming_content)  # ends instead of waiting for the next period
    assert b"event:" in rest or rest == b""


def test_a_viewer_may_watch_and_a_stranger_is_sent_to_log_in(viewer_client, client, moto_db, streams):
    assert streams(viewer_client).status_code == 200
    viewer_client.logout()
    stranger = streams(client)
    assert stranger.status_code == 302 and "/login/" in stranger["Location"]


def test_each_pushed_panel_is_sent_as_often_as_it_would_poll(supervisor_client, moto_db):
    html = supervisor_client.get(reverse("home")).content.decode()
    polls = dict(re.findall(r'id="(\w+)-panel"[^>]*data-poll="(\d+)s"', html))
    assert {name: float(every) for name, every in polls.items()} == live.PERIODS
    assert set(live.PERIODS) == set(overview.OVERVIEW_PANELS)
    assert f'data-live="{reverse("live")}"' in html


@pytest.mark.django_db(transaction=True)
def test_a_stream_gives_its_database_connection_back_once_it_has_started(client, django_user_model, moto_db, streams):
    from django.db import connection

    client.force_login(django_user_model.objects.create_user("watching"))
    response = streams(client)
    assert connection.connection is not None  # the session and the user were read
    events(response, 1)
    assert connection.connection is None  # not held for the stream's minute
