"""How long the application takes to answer, per route: `REQUEST_SECONDS`, a histogram
that `RequestLatencyMiddleware` adds every request to and `/metrics` shows.

A request is labelled by the URL pattern it matched (`/agents/<str:agent_id>/`), never
by its path: one series per route however many agents, calls or shipments there are.
A path that matches no route is `unmatched`. Method and status class (`2xx` ... `5xx`)
complete the labels. Like the DynamoDB counters (`ddb/meter.py`), every gunicorn worker
adds to it and a scrape sums them when PROMETHEUS_MULTIPROC_DIR is set.
"""

from __future__ import annotations

import time

from prometheus_client import Histogram

UNMATCHED = "unmatched"
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# Seconds. A page or an API call makes a few DynamoDB requests of some milliseconds each;
# the top buckets catch exports and outages (gunicorn gives a request 30 s).
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

REQUEST_SECONDS = Histogram(
    "switchboard_http_request_duration_seconds",
    "Time to answer a request, by URL route (its pattern), method and status class",
    ["route", "method", "status_class"],
    buckets=BUCKETS,
    registry=None,  # /metrics gathers it (monitoring/prometheus.py)
)


def route_of(request) -> str:
    """The URL pattern the request matched, as a path (`/` for the overview), or
    `unmatched`."""
    match = getattr(request, "resolver_match", None)
    if match is None or match.route is None:
        return UNMATCHED
    return "/" + match.route


def observe(request, status: int, seconds: float) -> None:
    method = request.method if request.method in METHODS else "other"
    REQUEST_SECONDS.labels(route_of(request), method, f"{status // 100}xx").observe(seconds)


class RequestLatencyMiddleware:
    """Times each request from here to its answer (a streamed export: until its first
    line is ready). Static files are answered before it, by WhiteNoise, and left out."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        observe(request, response.status_code, time.perf_counter() - started)
        return response
