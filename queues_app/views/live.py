"""The overview's panels pushed to every open overview (Server-Sent Events, `GET /live/`).

Polling costs each viewer a request per panel every two seconds: a few milliseconds of
CPU each, so 200 supervisors would need more than the two cores the whole deployment has.
Pushed, a viewer costs an open connection: each process has one `Hub` that, while any
stream is open, reads every panel when it is due (through the shared read of
`monitoring/shared.py`: once per period per cache whoever watches), renders its fragment
once, and every stream of the process sends the same text. The panels are the same for
everyone (no form, no per-user part), which is what lets them be rendered once.

A stream holds one of its web worker's threads, so a process takes at most
`LIVE_STREAMS_PER_PROCESS` (under gunicorn, no more than its `--threads` less
`WEB_THREADS`, 8, kept for requests: `serve` and the web unit give it both); past it
`GET /live/` answers 204 and the page polls as before. A stream ends after
`STREAM_SECONDS` (the browser reconnects, signed in again, maybe to another worker) and
at once when its worker is told to stop (`close_all`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Generator, Iterator

from django.conf import settings
from django.db import connections
from django.http import HttpResponse, StreamingHttpResponse
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET

from queues_app.http.context_processors import centre_time
from queues_app.monitoring.overview import Dashboard
from queues_app.views.overview import read_panel

log = logging.getLogger(__name__)

# Each pushed panel and how often it is read and sent, in seconds: its `data-poll`.
PERIODS = {
    "calls": 2.0,
    "grid": 2.0,
    "shipments": 2.0,
    "tasks": 2.0,
    "lines": 10.0,
    "service_level": 10.0,
    "history": 30.0,
}
TICK_SECONDS = 2.0
# Sent when nothing else is: proxies and browsers keep a silent connection open.
KEEPALIVE_SECONDS = 15.0
STREAM_SECONDS = 60.0
# The threads of a gunicorn worker kept for requests when streams take the others.
REQUEST_THREADS = 8


class Hub:
    """This process's one reader and renderer of the panels for every stream it serves."""

    def __init__(self, dashboard: Dashboard):
        self.dashboard = dashboard
        self.changed = threading.Condition()
        self.generation = 0
        self.fragments: dict[str, tuple[int, str]] = {}  # panel -> (generation rendered, html)
        self.streams = 0
        self.closing = False
        self._reader: threading.Thread | None = None
        self._due: dict[str, float] = {}

    def join(self, capacity: int) -> bool:
        with self.changed:
            if self.closing or self.streams >= capacity:
                return False
            self.streams += 1
            if self._reader is None:
                self._reader = threading.Thread(target=self._read_while_watched, name="live-panels", daemon=True)
                self._reader.start()
            return True

    def leave(self) -> None:
        with self.changed:
            self.streams -= 1

    def close(self) -> None:
        with self.changed:
            self.closing = True
            self.changed.notify_all()

    def wait(self, after: int, timeout: float) -> tuple[int, dict[str, tuple[int, str]]]:
        """The generation past `after` once there is one (`after` again past `timeout`), with
        the fragments as they were then (the reader changes them only under the lock)."""
        with self.changed:
            self.changed.wait_for(lambda: self.generation > after or self.closing, timeout)
            return self.generation, dict(self.fragments)

    def _read_while_watched(self) -> None:
        while True:
            with self.changed:
                if self.streams <= 0 or self.closing:
                    self._reader = None
                    self._due.clear()
                    return
            try:
                self.render_due()
            except Exception:  # a bug must not leave every stream waiting on a dead reader
                log.exception("the live panels could not be rendered; trying again next period")
            with self.changed:
                self.changed.wait_for(lambda: self.closing, TICK_SECONDS)

    def render_due(self) -> None:
        """Read and render the panels whose period has passed, then wake the streams."""
        moment = time.monotonic()
        due = [name for name in PERIODS if self._due.get(name, 0.0) <= moment]
        rendered = {}
        for name in due:
            self._due[name] = moment + PERIODS[name] - 0.1
            # As a page renders them, less the parts of a person (none in a panel).
            context = {**centre_time(None), **read_panel(None, self.dashboard, name)}
            rendered[name] = render_to_string(f"queues_app/overview.html#{name}-panel", context)
        if rendered:
            with self.changed:
                self.generation += 1
                self.fragments.update({name: (self.generation, html) for name, html in rendered.items()})
                self.changed.notify_all()


_hubs: dict[str, Hub] = {}
_hubs_guard = threading.Lock()
_capacity: int | None = None


def join(dashboard: Dashboard) -> Hub | None:
    """This process's hub for the deployment, with one more stream; None when it is full."""
    prefix = dashboard.center.db.prefix
    with _hubs_guard:
        hub = _hubs.get(prefix)
        # One nobody watches is made anew: with what the settings say now.
        if hub is None or hub.closing or hub.streams <= 0:
            hub = _hubs[prefix] = Hub(dashboard)
        return hub if hub.join(capacity()) else None


def reserve_threads(threads: int, kept: int = REQUEST_THREADS) -> None:
    """Under gunicorn (its `post_worker_init`): streams take no more than the worker's
    threads less those kept for requests."""
    global _capacity
    _capacity = max(0, threads - kept)


def capacity() -> int:
    allowed = settings.LIVE_STREAMS_PER_PROCESS
    return allowed if _capacity is None else min(allowed, _capacity)


def close_all(wait_seconds: float = 0.0) -> None:
    """End every stream of this process (its worker is stopping): browsers reconnect
    elsewhere. `wait_seconds`: and give each hub's reader that long to finish its round."""
    with _hubs_guard:
        hubs = list(_hubs.values())
    for hub in hubs:
        hub.close()
        reader = hub._reader
        if wait_seconds and reader is not None:
            reader.join(wait_seconds)


def event(name: str, html: str) -> str:
    data = "\n".join(f"data: {line}" for line in html.strip().splitlines())
    return f"event: {name}\n{data}\n\n"


def release_database() -> None:
    """A stream needs no database past its start (the session was read, the middleware
    is done): its connection goes back now, not after the stream's minute. A PostgreSQL
    takes far fewer connections than a deployment has open overviews. (Not inside a
    transaction: the tests' own.)"""
    for connection in connections.all(initialized_only=True):
        if not connection.in_atomic_block:
            connection.close()


class Stream:
    """One viewer's events; `close` (the server's, when the connection ends) frees its place."""

    def __init__(self, hub: Hub):
        self.hub = hub
        self.events = self._events()
        self.closed = False

    def __iter__(self) -> Iterator[str]:
        return self.events

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.events.close()
            self.hub.leave()

    def _events(self) -> Generator[str]:
        hub = self.hub
        release_database()
        yield f"retry: {int(TICK_SECONDS * 1000)}\n\n"
        sent: dict[str, int] = {}
        seen = 0
        ends = time.monotonic() + STREAM_SECONDS
        while not hub.closing and time.monotonic() < ends:
            generation, fragments = hub.wait(seen, min(KEEPALIVE_SECONDS, max(0.0, ends - time.monotonic())))
            if generation == seen:
                yield ": still here\n\n"
                continue
            seen = generation
            for name, (made, html) in fragments.items():
                if sent.get(name) != made:
                    sent[name] = made
                    yield event(name, html)


@require_GET
def live(request):
    """The overview's panels as they change, for as long as the page is open."""
    hub = join(Dashboard())
    if hub is None:
        return HttpResponse(status=204)  # the browser gives up the stream and the panels poll
    response = StreamingHttpResponse(Stream(hub), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy in front passes each event on at once
    return response
