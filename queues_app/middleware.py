"""Turns any DynamoDB domain error that reaches the top into a clear page or JSON body."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.middleware import LoginRequiredMiddleware as _LoginRequired
from django.http import JsonResponse
from django.shortcuts import render, resolve_url
from django_htmx.http import HttpResponseClientRedirect

from queues_app.ddb import errors
from queues_app.http_errors import describe

log = logging.getLogger(__name__)


class DynamoErrorMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, errors.DynamoError):
            return None
        problem = describe(exception)
        log.warning("%s %s: %s (%s)", request.method, request.path, problem.title, exception.message)
        if request.path.startswith("/api/") or "application/json" in request.headers.get("Accept", ""):
            response = JsonResponse(problem.as_json(), status=problem.status)
        else:
            template = "queues_app/_error_banner.html" if getattr(request, "htmx", False) else "queues_app/error.html"
            response = render(request, template, {"problem": problem}, status=problem.status)
        if problem.retry_after:
            response["Retry-After"] = str(problem.retry_after)
        return response


class LoginRequiredMiddleware(_LoginRequired):
    """Django's, except that an htmx request from a session that has ended asks the
    browser to go to the login page (`HX-Redirect`), instead of the login page being
    swapped into a panel."""

    def handle_no_permission(self, request, view_func):
        if getattr(request, "htmx", False):
            back = request.htmx.current_url_abs_path or "/"
            return HttpResponseClientRedirect(f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': back})}")
        return super().handle_no_permission(request, view_func)
