"""Refusals Django raises before or outside our error mapping (a page that does not exist,
a role that may not act, a fault nobody caught), answered like every other problem: a
page in the site's layout to a person, a banner to htmx, JSON to a program."""

from __future__ import annotations

import logging

from django.http import HttpResponseServerError

from queues_app.http.errors import UserError
from queues_app.http.middleware import problem_answer

log = logging.getLogger(__name__)


def _said(exception) -> str:
    """The message an exception was raised with, when it is ours to show (a resolver's
    404 carries a dict of the patterns it tried: never shown)."""
    args = getattr(exception, "args", ())
    return args[0] if args and isinstance(args[0], str) else ""


def permission_denied(request, exception):
    message = _said(exception) or "Your role may look but not change this."
    hint = "Ask an administrator for the supervisor role if you need to act here."
    return problem_answer(request, UserError(403, "Not allowed", message, hint))


def page_not_found(request, exception):
    message = _said(exception) or "There is no page at this address."
    return problem_answer(request, UserError(404, "Not found", message, "Start again from the overview."))


def server_error(request):
    problem = UserError(500, "Something went wrong", "The server could not answer this request.", "Try again.")
    try:
        return problem_answer(request, problem)
    except Exception:  # the page itself cannot be drawn: plain words, never a second trace
        log.exception("the 500 page could not be drawn")
        return HttpResponseServerError("Something went wrong. Try again.", content_type="text/plain")
