"""Turns any DynamoDB domain error that reaches the top into a clear page, or a JSON (or
text) body for programs: the API, /metrics, and requests that ask for JSON; and marks a
supervisor's session that has just written, so that their panels show it at once."""

from __future__ import annotations

import logging
from urllib.parse import urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.middleware import LoginRequiredMiddleware as _LoginRequired
from django.http import HttpResponse
from django.shortcuts import redirect, render, resolve_url
from django.utils.http import url_has_allowed_host_and_scheme
from django_htmx.http import HttpResponseClientRedirect
from django_htmx.middleware import HtmxDetails

from queues_app.ddb import errors, meter
from queues_app.ddb.clock import now
from queues_app.http.errors import UserError, describe, json_answer, unreadable_request, with_headers

log = logging.getLogger(__name__)


# Paths whose clients are programs: they get JSON (or text), never an HTML page.
MACHINE_PATHS = ("/api/", "/metrics")


def wants_machine_answer(request) -> bool:
    """True for the API, /metrics, and any request that asks for JSON."""
    return request.path.startswith(MACHINE_PATHS) or "application/json" in request.headers.get("Accept", "")


def wants_text(request) -> bool:
    """True when a client outside the JSON API reads text rather than JSON (a Prometheus
    scraper asks for text/plain or OpenMetrics and never for JSON)."""
    accept = request.headers.get("Accept", "")
    return (
        not request.path.startswith("/api/")
        and "application/json" not in accept
        and ("text/plain" in accept or "openmetrics" in accept)
    )


def problem_answer(request, problem: UserError, *, machine: bool | None = None) -> HttpResponse:
    """The response telling `problem`: JSON (http/errors.json_answer) or text to a
    program, a page (or, for htmx, a banner) to a person; with the problem's headers."""
    if machine is None:
        machine = wants_machine_answer(request)
    if machine and not wants_text(request):
        return json_answer(problem)
    response: HttpResponse
    if machine:
        response = HttpResponse(problem.as_text(), status=problem.status, content_type="text/plain; charset=utf-8")
    else:
        template = "queues_app/_error_banner.html" if getattr(request, "htmx", False) else "queues_app/error.html"
        response = render(request, template, {"problem": problem}, status=problem.status)
    return with_headers(response, problem)


class DynamoErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, errors.DynamoError):
            return None
        problem = describe(exception)  # logs server-side problems in full
        if problem.status < 500:
            log.info("%s %s: %s (%s)", request.method, request.path, problem.title, problem.message)
        return problem_answer(request, problem)


class LoginRequiredMiddleware(_LoginRequired):
    """Django's, except for a session that has ended: an htmx request asks the browser to
    go to the login page (`HX-Redirect`) instead of the login page being swapped into a
    panel, and an action (any method but GET and HEAD) says it was not done, and sends
    the person back, once logged in, to the page they acted from: never to GET the
    action's own URL, which answers only POST."""

    def handle_no_permission(self, request, view_func):
        acted = request.method not in ("GET", "HEAD")
        if acted:
            messages.warning(
                request, "Your session had ended, so what you asked for was not done: log in, then do it again."
            )
        htmx: HtmxDetails | None = getattr(request, "htmx", None) or None
        if htmx or acted:
            back = (htmx.current_url_abs_path if htmx else None) or (
                _page_acted_from(request) if acted else resolve_url("home")
            )
            to = f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': back})}"
            return HttpResponseClientRedirect(to) if htmx else redirect(to)
        return super().handle_no_permission(request, view_func)


def _page_acted_from(request) -> str:
    """The page a form was sent from (its Referer, when it is this site's), else home."""
    sent_from = request.headers.get("Referer", "")
    if url_has_allowed_host_and_scheme(
        sent_from, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        referer = urlsplit(sent_from)
        return urlunsplit(("", "", referer.path or "/", referer.query, ""))
    return resolve_url("home")


def bad_request(request, exception):
    """Django's answer to a request it cannot take at all (a Host header that is empty or
    not allowed, a malformed cookie...): to a program, the same JSON problem as any other
    refusal; to a person, Django's own page."""
    from django.views import defaults

    if wants_machine_answer(request):
        return problem_answer(request, unreadable_request(), machine=True)
    return defaults.bad_request(request, exception)


# When a supervisor's session last changed something (seconds since the epoch, on the
# project's clock): their panels read afresh for a while, the others keep the shared cache.
WROTE_AT = "switchboard_wrote_at"


class ReadYourWritesMiddleware:
    """Marks a logged-in session that has just written to DynamoDB (a page or admin
    action), so that its next panel polls, on whichever worker process, skip the shared
    panel cache and show the change at once. Phone-system and worker writes do not drop
    the cache: the figures catch up within its few seconds."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        before = meter.writes_seen()
        response = self.get_response(request)
        session = getattr(request, "session", None)
        if (
            request.method not in ("GET", "HEAD", "OPTIONS")
            and session is not None
            and SESSION_KEY in session
            and meter.writes_seen() > before
        ):
            session[WROTE_AT] = now().timestamp()
        return response


def wrote_recently(request, seconds: float) -> bool:
    """True while the session's own last write is less than `seconds` old."""
    session = getattr(request, "session", None)
    wrote_at = session.get(WROTE_AT) if session is not None else None
    return wrote_at is not None and 0 <= now().timestamp() - wrote_at < seconds
