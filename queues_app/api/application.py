"""The JSON API as one django-ninja application: its authentication, its parser, and
every failure answered as `{"error", "message", "hint", "fields"}` in one place.

- authentication and permissions: `auth.BearerToken` (401, 403);
- input: `parsing.JsonBodyParser` and `schemas` (400 naming each bad field, 413);
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
from collections.abc import Mapping
from functools import wraps
from typing import Any, cast

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
from queues_app.api.auth import SAFE_METHODS, BearerToken
from queues_app.api.parsing import JsonBodyParser, body_limit
from queues_app.api.schemas import CURSOR_MAX, ID_MAX, IDEMPOTENCY_KEY_MAX, PAGE_MAX, CallEventOut, InputSchema
from queues_app.api.views import endpoints
from queues_app.ddb.errors import DynamoError
from queues_app.ddb.numbers import ExactJSONEncoder
from queues_app.http import errors
from queues_app.http.errors import ApiProblem, UserError, json_answer
from queues_app.webhooks.signing import ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER

log = logging.getLogger(__name__)

BODY_PARAM = "payload"  # the name every operation gives its body
PARAMETER_PROBLEMS = {
    "Idempotency-Key": f"must be 1 to {IDEMPOTENCY_KEY_MAX} characters",
    **{name: f"must be 1 to {ID_MAX} characters" for name in ("call_id", "agent_id", "shipment_id")},
    "limit": f"must be a whole number from 1 to {PAGE_MAX}",
    "cursor": f"must be the next_cursor of the previous page (1 to {CURSOR_MAX} characters)",
    "skill": "must be dimension:value, e.g. language:French",
    "status": "one of waiting or assigned",  # the only status a list requires is the calls'
}
JSON_CHARSETS = ("utf-8", "utf8")

DESCRIPTION = """\
The JSON API of Switchboard for the phone system and other machines: place callers,
make agents available, release them and log them off, enqueue shipments; read calls,
agents, shipments and queues; list the calls waiting (in line order) or assigned, and
the agents (by status or skill), a page at a time with `cursor`/`next_cursor`.

Every request needs `Authorization: Bearer <token>` (`python manage.py create_api_token`).
Bodies are `application/json` (415 otherwise). Every refusal is JSON: `{"error",
"message", "hint", "fields"}`; `fields` names each bad input field. Send
`Idempotency-Key` when creating, and the same key when retrying.

Instead of polling waiting calls, register a callback (`PUT /api/callback`): the calls
the token creates then POST `call.assigned`, `call.abandoned` and `call.relaxed` events
to it, signed as Standard Webhooks are (the `callEvent` webhook below; docs/callbacks.md).
"""


class ExactJSONRenderer(JSONRenderer):
    """Answers write numbers with every digit stored (shipment data keeps up to 38)."""

    encoder_class = ExactJSONEncoder


class InvalidInput(ValidationError):
    """Input that failed its schema, with each bad field named as people know it."""

    def __init__(self, fields: dict[str, str], errors: list[dict]):
        super().__init__(errors)
        self.fields = fields


class SwitchboardApi(NinjaAPI):
    def get_content_type(self) -> str:
        return "application/json"  # JSON is UTF-8 by definition (RFC 8259)

    def validation_error_from_error_contexts(self, error_contexts: list[ValidationErrorContext]) -> ValidationError:
        fields: dict[str, str] = {}
        for context in error_contexts:
            source = context.model.__ninja_param_source__
            schema = _body_schema(context.model) if source == "body" else None
            for error in context.pydantic_validation_error.errors(include_url=False):
                loc = context.model.__ninja_flatten_map_reverse__.get(error["loc"], error["loc"])
                fields.update(_named(source, tuple(loc), error, schema))
        return InvalidInput(fields, errors=[])


def _body_schema(param_model) -> type[InputSchema] | None:
    """The schema of the operation's body (the `payload` parameter's, without `| None`)."""
    field = param_model.model_fields.get(BODY_PARAM)
    annotation = field.annotation if field else None
    for candidate in (annotation, *getattr(annotation, "__args__", ())):
        if isinstance(candidate, type) and issubclass(candidate, InputSchema):
            return candidate
    return None


def _named(source: str, loc: tuple, error: Mapping[str, Any], schema: type[InputSchema] | None) -> dict[str, str]:
    """One pydantic error as {field: what is wrong}, in the API's words."""
    context = error.get("ctx") or {}
    if isinstance(context.get("problems"), dict):  # raised by a schema's own check, already named
        return {str(name): str(problem) for name, problem in context["problems"].items()}
    if source != "body":  # path, query and header parameters: the name as sent
        name = str(loc[-1]) if loc else source
        if error["type"] == "missing":
            return {name: "required" + (f"; {PARAMETER_PROBLEMS[name]}" if name in PARAMETER_PROBLEMS else "")}
        if error["type"] == "literal_error":
            return {name: f"must be one of {_choices(context)}"}
        return {name: PARAMETER_PROBLEMS.get(name) or _sentence(error)}
    if loc and loc[0] == BODY_PARAM:
        loc = loc[1:]
    if not loc:
        # The body as a whole: absent when required (naming the fields it must hold), or not an object.
        if error["type"] == "missing" or error.get("input") is None:
            required = [name for name, field in schema.model_fields.items() if field.is_required()] if schema else []
            if schema and required:
                return {name: schema.PROBLEMS.get(name, "required") for name in required}
            return {"body": "a JSON object is required"}
        return {"body": "must be a JSON object"}
    name = str(loc[0])
    if error["type"] == "extra_forbidden":
        if not (schema and schema.model_fields):
            return {name: "unknown field; this operation takes no fields"}
        return {name: f"unknown field; allowed: {', '.join(schema.model_fields)}"}
    if schema and name in schema.NAMED_BY_KEY and len(loc) > 1:
        if error.get("input", "") is None:
            # null is not a way of saying "any": it is too easily sent by mistake.
            return {str(loc[1]): f"{loc[1]} may not be null: send 'any', or leave {loc[1]} out, for any value"}
        return {str(loc[1]): f"{loc[1]} must be one value or 'any'"}
    if schema and name in schema.PROBLEMS:
        return {name: schema.PROBLEMS[name]}
    return {".".join(str(part) for part in loc): _sentence(error)}


def _choices(context: Mapping[str, Any]) -> str:
    """A literal's allowed values as pydantic lists them ("'waiting' or 'assigned'"),
    without the quotes."""
    return str(context.get("expected", "")).replace("'", "")


def _sentence(error: Mapping[str, Any]) -> str:
    message = str(error.get("msg") or "invalid")
    return message[0].lower() + message[1:] if message else message


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
api.add_router("", endpoints)


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
    schema["webhooks"] = callback_webhooks(schema.setdefault("components", {}).setdefault("schemas", {}))
    return schema


def callback_webhooks(components: dict) -> dict:
    """The callback's request (OpenAPI 3.1 `webhooks`): what Switchboard POSTs to a
    token's callback URL; its schemas join `components`."""
    event = CallEventOut.model_json_schema(ref_template="#/components/schemas/{model}")
    components.update(event.pop("$defs", {}))
    components["CallEventOut"] = event
    header = {"required": True, "schema": {"type": "string"}}
    return {
        "callEvent": {
            "post": {
                "summary": "A call of this token was assigned, abandoned or had its preferences relaxed",
                "description": "Sent to the URL registered with `PUT /api/callback`, at least once: retried "
                "with backoff until a 2xx answer (5 s timeout), then dead-lettered. docs/callbacks.md shows "
                "how to check the signature.",
                "parameters": [
                    {"in": "header", "name": ID_HEADER, "description": "The event's id (Standard Webhooks).", **header},
                    {"in": "header", "name": TIMESTAMP_HEADER, "description": "Unix seconds, signed.", **header},
                    {
                        "in": "header",
                        "name": SIGNATURE_HEADER,
                        "description": "`v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>` with the "
                        "secret's key, as Standard Webhooks has it; during a rotation, one such signature per "
                        "secret, space-separated.",
                        **header,
                    },
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/CallEventOut"}}},
                },
                "responses": {"2XX": {"description": "Received; any other answer is retried."}},
            }
        }
    }
