"""Bearer-token authentication of the JSON API.

A token acts as its user (a supervisor's may change queues, a viewer's only read).
Session cookies are not accepted here, hence no CSRF: a browser never adds the header
itself. A missing, unknown, revoked or expired token (or one whose user is inactive) is
a 401 with `WWW-Authenticate: Bearer`; a read-only token on a change is a 403; a token
past its API_RATE_LIMIT is a 429 with `Retry-After` (heartbeats aside: they are one write
each, which counting them would double).
"""

from __future__ import annotations

from typing import cast

from django.contrib.auth.decorators import login_not_required
from django.views.decorators.csrf import csrf_exempt
from ninja.security import HttpBearer

from queues_app.admission import TokenLimiter
from queues_app.http import errors
from queues_app.http.errors import ApiProblem, json_answer
from queues_app.http.roles import can_act
from queues_app.models import ApiToken

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


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
        raise ApiProblem(errors.unauthenticated("This API needs a bearer token."))
    token = ApiToken.find(raw)
    if token is None:
        expired = ApiToken.find_expired(raw)
        if expired is not None and expired.expires_at is not None:
            raise ApiProblem(
                errors.unauthenticated(
                    f"The bearer token expired at {expired.expires_at:%Y-%m-%d %H:%M} UTC; ask for a new one."
                )
            )
        # One answer for unknown, malformed and revoked tokens: nothing to probe.
        raise ApiProblem(errors.unauthenticated("The bearer token is invalid or has been revoked."))
    token.touch()
    return token


def token_of(request) -> ApiToken | None:
    """The token `BearerToken` authenticated the request with (None before it ran)."""
    return getattr(request, "api_token", None)


def current_token(request) -> ApiToken:
    """The request's token, inside an operation (every one runs behind `BearerToken`)."""
    return cast(ApiToken, token_of(request))


def actor_of(request) -> str:
    """Who made a change through the API, as the audit trail and the log name them:
    the token's user and the token (its name and prefix)."""
    token = token_of(request)
    username = request.user.get_username()
    return f"{username} via token {token.label}" if token else username


class BearerToken(HttpBearer):
    """The API's authentication (and the `BearerToken` security scheme of its OpenAPI
    document): an active token, and for anything but a read, a token that may act."""

    openapi_description = (
        "A token made with `python manage.py create_api_token USER --name NAME [--expires-in-days N]`, "
        "sent as `Authorization: Bearer <token>`. A viewer's token may only read."
    )

    def __init__(self, *, counted: bool = True):
        super().__init__()
        # Not counted: an operation that is one write and nothing else (a heartbeat), for
        # which counting would cost as much as the request; a token sending too many costs
        # that write each, as a refused request costs its counter's.
        self.counted = counted

    def __call__(self, request):
        token = authenticate(request)
        if self.counted:
            TokenLimiter().admit(token.pk)  # before anything else is done for it
        request.user = token.user
        request.api_token = token
        if request.method not in SAFE_METHODS and not can_act(token.user):
            raise ApiProblem(
                errors.forbidden(
                    f"The token's user {token.user.get_username()!r} may only read; "
                    "changing queues needs a supervisor's token."
                )
            )
        return token

    def authenticate(self, request, token):  # pragma: no cover - __call__ does the work
        raise NotImplementedError


@csrf_exempt
@login_not_required
def not_found(request, path: str = ""):
    """Any other path under /api/: a JSON 404, not the HTML page."""
    return json_answer(errors.no_such_endpoint(request.path))
