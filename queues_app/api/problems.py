"""How the JSON API says no: `{"error", "message", "hint", "fields"}` with a status.

Domain errors become problems through `queues_app.http.errors.describe` (the one place
that maps them); the refusals here are the API's own (a body too large, a method not
allowed), told the same way.
"""

from __future__ import annotations

from django.http import JsonResponse

from queues_app.ddb.numbers import ExactJSONEncoder
from queues_app.http import errors as user_errors

# Retry-After of a 503 whose problem names none (every 503 of the API carries one).
DEFAULT_RETRY_AFTER_SECONDS = 5


class ApiProblem(Exception):
    """Raised inside an API view to answer with this problem instead."""

    def __init__(self, problem: user_errors.UserError):
        super().__init__(problem.message)
        self.problem = problem


def invalid(fields: dict[str, str], message: str | None = None) -> ApiProblem:
    return ApiProblem(user_errors.invalid_input(fields, message))


def too_large(limit: int) -> user_errors.UserError:
    return user_errors.UserError(
        413,
        "Request body too large",
        f"The request body is larger than {limit:,} bytes.",
        hint="Send less data: a shipment's data must fit in one DynamoDB item.",
    )


def unsupported_media_type(sent: str) -> user_errors.UserError:
    shown = repr(sent[:100]) if sent else "none"
    return user_errors.UserError(
        415,
        "Unsupported media type",
        f"The request body must be application/json; its Content-Type was {shown}.",
        hint="Send the body as JSON with `Content-Type: application/json` (a charset, when given, must be utf-8).",
    )


def internal_error() -> user_errors.UserError:
    return user_errors.UserError(500, "Internal error", "The server failed to handle this request; it has been logged.")


def problem_response(problem: user_errors.UserError, *, allow: list[str] | None = None) -> JsonResponse:
    # A conflict's `current` may hold shipment data: its numbers written exactly too.
    response = JsonResponse(problem.as_json(), status=problem.status, encoder=ExactJSONEncoder)
    retry_after = problem.retry_after
    if not retry_after and problem.status == 503:
        retry_after = DEFAULT_RETRY_AFTER_SECONDS
    if retry_after:
        response["Retry-After"] = str(retry_after)
    if problem.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="switchboard"'
    if allow:
        response["Allow"] = ", ".join(allow)
    return response
