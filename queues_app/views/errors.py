"""Refusals Django raises before or outside our error mapping (a page that does not exist,
a role that may not act, a fault nobody caught), answered like every other problem: a
page in the site's layout to a person, a banner to htmx, JSON to a program."""

from __future__ import annotations

import logging

from django.http import HttpResponseServerError

from queues_app.http import errors
from queues_app.http.middleware import problem_answer

log = logging.getLogger(__name__)


def _said(exception) -> str:
    """The message an exception was raised with, when it is ours to show (a resolver's
    404 carries a dict of the patterns it tried: never shown)."""
    args = getattr(exception, "args", ())
    return args[0] if args and isinstance(args[0], str) else ""


def permission_denied(request, exception):
    return problem_answer(request, errors.not_allowed(_said(exception) or "Your role may look but not change this."))


def page_not_found(request, exception):
    return problem_answer(request, errors.page_not_found(_said(exception) or "There is no page at this address."))


def server_error(request):
    try:
        return problem_answer(request, errors.page_failed())
    except Exception:  # the page itself cannot be drawn: plain words, never a second trace
        log.exception("the 500 page could not be drawn")
        return HttpResponseServerError("Something went wrong. Try again.", content_type="text/plain")
