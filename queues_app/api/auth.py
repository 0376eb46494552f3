"""Bearer-token authentication and the common frame of every JSON API view.

A token acts as its user (a supervisor's may change queues, a viewer's only read).
Session cookies are not accepted here, hence no CSRF: a browser never adds the header
itself. Every answer is JSON; failures are `{"error", "message", "hint", "fields"}`."""

from __future__ import annotations

import logging
from functools import wraps

from django.contrib.auth.decorators import login_not_required
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from queues_app import http_errors as user_errors
from queues_app.agents.skills import SkillError
from queues_app.ddb.errors import DynamoError
from queues_app.models import ApiToken
from queues_app.roles import can_act

log = logging.getLogger(__name__)

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class ApiProblem(Exception):
    """Raised inside an API view to answer with this problem instead."""

    def __init__(self, problem: user_errors.UserError):
        super().__init__(problem.message)
        self.problem = problem


def invalid(fields: dict[str, str], message: str | None = None) -> ApiProblem:
    return ApiProblem(user_errors.invalid_input(fields, message))


def problem_response(problem: user_errors.UserError, *, allow: list[str] | None = None) -> JsonResponse:
    response = JsonResponse(problem.as_json(), status=problem.status)
    if problem.retry_after:
        response["Retry-After"] = str(problem.retry_after)
    if problem.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="switchboard"'
    if allow:
        response["Allow"] = ", ".join(allow)
    return response


def bearer_token(request) -> str | None:
    """The token from `Authorization: Bearer <token>`, or None if the header is absent."""
    header = request.headers.get("Authorization", "")
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return ""
    return value.strip()


def authenticate(request) -> ApiToken:
    """The request's active token; raises ApiProblem (401) otherwise."""
    raw = bearer_token(request)
    if raw is None:
        raise ApiProblem(user_errors.unauthenticated("This API needs a bearer token."))
    token = ApiToken.find(raw)
    if token is None:
        # One answer for unknown, malformed and revoked tokens: nothing to probe.
        raise ApiProblem(user_errors.unauthenticated("The bearer token is invalid or has been revoked."))
    token.touch()
    return token


def api_endpoint(*methods: str):
    """Frame of an API view: token auth (401), allowed methods (405), supervisors only
    for writes (403), and every failure answered as JSON (400/404/409/503...)."""
    allowed = list(methods)

    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            try:
                token = authenticate(request)
                request.user = token.user
                request.api_token = token
                if request.method not in allowed:
                    return problem_response(user_errors.method_not_allowed(request.method, allowed), allow=allowed)
                if request.method not in SAFE_METHODS and not can_act(token.user):
                    raise ApiProblem(
                        user_errors.forbidden(
                            f"The token's user {token.user.get_username()!r} may only read; "
                            "changing queues needs a supervisor's token."
                        )
                    )
                return view(request, *args, **kwargs)
            except ApiProblem as exc:
                return problem_response(exc.problem)
            except (DynamoError, SkillError) as exc:
                problem = user_errors.describe(exc)
                if problem.status >= 500:
                    log.warning("%s %s: %s (%s)", request.method, request.path, problem.title, problem.message)
                return problem_response(problem)
            except Exception:
                log.exception("%s %s failed", request.method, request.path)
                return problem_response(
                    user_errors.UserError(
                        500, "Internal error", "The server failed to handle this request; it has been logged."
                    )
                )

        return csrf_exempt(login_not_required(wrapper))

    return decorate


@csrf_exempt
@login_not_required
def not_found(request, path: str = ""):
    """Any other path under /api/: a JSON 404, not the HTML page."""
    return problem_response(user_errors.no_such_endpoint(request.path))
