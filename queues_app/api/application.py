"""The JSON API as one django-ninja application: the resources' routers mounted (calls,
agents, shipments, reports, queues, callback: each module an operation's code, inputs
and outputs), its authentication, its parser, and every failure answered as
`{"error", "message", "hint", "fields"}` in one place.

- authentication and permissions: `auth.BearerToken` (401, 403);
- input: `parsing.JsonBodyParser` and the schemas (400 naming each bad field, in
  `validation`; 413);
- domain errors: `queues_app.http.errors.describe` (400/404/409/429/503);
- anything unexpected: logged, and a JSON 500 without details.

Each failure becomes a `UserError` of http/errors in `_problem_of`, answered by
http/errors.json_answer.

`machine_urls` makes the Django URL patterns: each one refuses an oversized body before
it is read, answers a wrong method with a JSON 405 and `Allow`, and needs no session
login (the token is the login).
"""

from __future__ import annotations

import logging
from functools import wraps
from typing import cast

from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.urls import URLPattern
from django.utils.http import parse_header_parameters
from django.views.decorators.csrf import csrf_exempt
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError, ValidationErrorContext
from ninja.renderers import JSONRenderer

from queues_app.agents.skills import SkillError
from queues_app.api import (
    agents,
    callback,
    calls,
    lines,
    profiles,
    queues,
    reports,
    scheduled_callbacks,
    shipment_queues,
    shipments,
)
from queues_app.api.auth import SAFE_METHODS, BearerToken
from queues_app.api.openapi import DESCRIPTION
from queues_app.api.parsing import JsonBodyParser, body_limit
from queues_app.api.validation import InvalidInput, named_fields
from queues_app.ddb.errors import DynamoError
from queues_app.ddb.numbers import ExactJSONEncoder
from queues_app.http import errors
from queues_app.http.errors import ApiProblem, UserError, json_answer

log = logging.getLogger(__name__)

JSON_CHARSETS = ("utf-8", "utf8")


class ExactJSONRenderer(JSONRenderer):
    """Answers write numbers with every digit stored (shipment data keeps up to 38)."""

    encoder_class = ExactJSONEncoder


class SwitchboardApi(NinjaAPI):
    def get_content_type(self) -> str:
        return "application/json"  # JSON is UTF-8 by definition (RFC 8259)

    def validation_error_from_error_contexts(self, error_contexts: list[ValidationErrorContext]) -> ValidationError:
        return InvalidInput(named_fields(error_contexts), errors=[])


api = SwitchboardApi(
    title="Switchboard API",
    version="1",
    description=DESCRIPTION,
    auth=BearerToken(),
    parser=JsonBodyParser(),
    renderer=ExactJSONRenderer(),
    openapi_url=None,  # served by queues_app.api.docs (session login or a token)
    docs_url=None,
    urls_namespace="switchboard-api",
)
# One router a resource, each beside its inputs and outputs; the URLs are the routers' own.
for resource in (
    calls,
    scheduled_callbacks,
    lines,
    profiles,
    reports,
    callback,
    shipments,
    shipment_queues,
    agents,
    queues,
):
    api.add_router("", resource.router)


def _problem_of(request, exc: Exception) -> UserError:
    """What the API answers for anything raised while handling a request."""
    if isinstance(exc, ApiProblem):
        return exc.problem
    if isinstance(exc, ValidationError):
        return errors.invalid_input(getattr(exc, "fields", None) or {"body": "invalid"})
    if isinstance(exc, AuthenticationError):
        return errors.unauthenticated("This API needs a bearer token.")
    if isinstance(exc, HttpError):
        # ninja wraps what the parser raised ("Cannot parse request body"): answer the cause.
        cause = exc.__cause__
        if isinstance(cause, ApiProblem | RequestDataTooBig):
            return _problem_of(request, cause)
        if exc.status_code == 400:
            return errors.invalid_input({"body": "not valid JSON"})
        return errors.refused(exc.status_code, exc.message)
    if isinstance(exc, RequestDataTooBig):
        return errors.too_large(body_limit())
    if isinstance(exc, Http404):
        return errors.no_such_endpoint(request.path)
    if isinstance(exc, DynamoError | SkillError):
        return errors.describe(exc)  # describe logs server-side problems
    log.error("%s %s failed", request.method, request.path, exc_info=exc)
    return errors.internal_error()


def _answer(request: HttpRequest, exc: Exception | type[Exception]) -> HttpResponse:
    # ninja's signature allows a class; it always passes the exception raised.
    return json_answer(_problem_of(request, cast(Exception, exc)))


# ninja picks the handler of the most specific class: each of ninja's own is replaced.
for _kind in (
    ApiProblem,
    ValidationError,
    AuthenticationError,
    HttpError,
    RequestDataTooBig,
    Http404,
    DynamoError,
    SkillError,
    Exception,
):
    api.add_exception_handler(_kind, _answer)


# --- URL patterns ------------------------------------------------------------------------


def _content_length(request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def _has_body(request) -> bool:
    return _content_length(request) > 0 or "HTTP_TRANSFER_ENCODING" in request.META


def _not_json(request) -> str | None:
    """The Content-Type of a request whose body is not declared JSON (UTF-8), or None
    when it is, or when there is no body to read."""
    if request.method in SAFE_METHODS or not _has_body(request):
        return None
    sent = request.META.get("CONTENT_TYPE", "")
    media_type, parameters = parse_header_parameters(sent)
    charset = parameters.get("charset", "utf-8").lower()
    if media_type.lower() == "application/json" and charset in JSON_CHARSETS:
        return None
    return sent


def machine_view(view):
    """An API view as Django serves it: no session login needed (the bearer token is
    checked by the API), no CSRF (no cookies are used), a body over the limit
    refused before it is read, a body that is not JSON refused (415) rather than
    guessed at, and a wrong method answered as JSON."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        if _content_length(request) > body_limit():
            return json_answer(errors.too_large(body_limit()))
        sent = _not_json(request)
        if sent is not None:
            return json_answer(errors.unsupported_media_type(sent))
        response = view(request, *args, **kwargs)
        if isinstance(response, HttpResponseNotAllowed):
            allowed = sorted(method.strip() for method in response["Allow"].split(",") if method.strip())
            return json_answer(errors.method_not_allowed(request.method, allowed), allow=allowed)
        return response

    return csrf_exempt(login_not_required(wrapper))


def machine_urls() -> list[URLPattern]:
    """The operations' URL patterns, named as before (`api-calls`, `api-agent-available`...),
    outside any namespace."""
    patterns = []
    for pattern in api.urls[0]:
        if not isinstance(pattern, URLPattern) or pattern.name == "api-root":
            continue  # "/api/" itself is answered by the JSON 404
        pattern.callback = machine_view(pattern.callback)
        patterns.append(pattern)
    return patterns


def openapi_document(path_prefix: str) -> dict:
    """The OpenAPI document, with paths under `path_prefix` (e.g. "/api/")."""
    schema = dict(api.get_openapi_schema(path_prefix=path_prefix))
    if not schema.get("servers"):
        schema.pop("servers", None)
    schema["webhooks"] = callback.webhooks(schema.setdefault("components", {}).setdefault("schemas", {}))
    return schema
