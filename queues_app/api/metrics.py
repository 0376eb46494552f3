"""`/metrics` in the Prometheus text format (`monitoring/prometheus.py` gathers it), for a
scraper (bearer token) or a logged-in person.

Failures answer as a program expects, never as an HTML page: text when the scraper asks
for text (Prometheus does), otherwise the API's JSON error shape; an outage is a 503
with Retry-After.
"""

from __future__ import annotations

import logging

from django.contrib.auth.decorators import login_not_required
from django.http import HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from queues_app.api.auth import authenticate
from queues_app.ddb.errors import DynamoError
from queues_app.http.errors import ApiProblem, UserError, describe, internal_error
from queues_app.http.middleware import problem_answer
from queues_app.monitoring.prometheus import exposition

log = logging.getLogger(__name__)


def _answer(request, problem: UserError):
    return problem_answer(request, problem, machine=True)


@login_not_required
@require_GET
def prometheus(request):
    if not request.user.is_authenticated:
        try:
            authenticate(request)  # a scraper's bearer token
        except ApiProblem as exc:
            return _answer(request, exc.problem)
    try:
        body = exposition()
    except DynamoError as exc:
        problem = describe(exc)
        if problem.status >= 500 and not problem.retry_after:
            problem.retry_after = 5
        return _answer(request, problem)
    except Exception:
        log.exception("GET %s failed", request.path)
        return _answer(request, internal_error("The metrics could not be gathered; the failure has been logged."))
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
