"""Domain errors mapped to what a person (or a machine on the API) is told.

The one place where a `DynamoError` becomes an HTTP status and a sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from queues_app.agents.skills import SkillError
from queues_app.ddb import errors


@dataclass
class UserError:
    status: int
    title: str
    message: str
    hint: str = ""
    retry_after: int | None = None
    fields: dict[str, str] | None = None  # input field -> what is wrong with it

    def as_json(self) -> dict:
        body = {"error": self.title, "message": self.message}
        if self.hint:
            body["hint"] = self.hint
        if self.fields:
            body["fields"] = dict(self.fields)
        return body


def invalid_input(fields: dict[str, str], message: str | None = None) -> UserError:
    """Input that failed validation: 400, naming each field and what is wrong with it."""
    if message is None:
        message = "; ".join(f"{name}: {problem}" if name else problem for name, problem in fields.items())
    return UserError(400, "Invalid request", message, fields=fields)


def describe(exc: errors.DynamoError | SkillError) -> UserError:
    if isinstance(exc, SkillError):
        return invalid_input({exc.field: exc.message} if exc.field else {}, exc.message)
    if isinstance(exc, errors.TableMissing):
        return UserError(
            503,
            "DynamoDB table missing",
            f"The table {exc.table!r} does not exist at {exc.endpoint or _endpoint()}.",
            hint="Create the tables with: python manage.py dynamo_tables create",
        )
    if isinstance(exc, errors.Unavailable):
        return UserError(
            503,
            "DynamoDB unavailable",
            f"{exc.message} Endpoint: {exc.endpoint or _endpoint()}.",
            hint=(
                "Start the local DynamoDB with `make run`, or check DYNAMODB_ENDPOINT_URL, "
                "AWS_REGION and the AWS credentials."
            ),
            retry_after=5,
        )
    if isinstance(exc, errors.Backpressure):
        return UserError(
            429,
            "Queue backlog over its bound",
            exc.message,
            hint="The queue is refusing new work until it drains; the Retry-After header says when to try again.",
            retry_after=exc.retry_after,
        )
    if isinstance(exc, errors.Throttled):
        return UserError(503, "DynamoDB is busy", exc.message, retry_after=2)
    if isinstance(exc, errors.NotFound):
        return UserError(404, "Not found", exc.message)
    if isinstance(exc, errors.Conflict):
        return UserError(409, "Conflict", exc.message, hint="Reload to see the current state and try again.")
    if isinstance(exc, errors.InvalidRequest):
        return UserError(400, "Invalid request", exc.message)
    return UserError(500, "DynamoDB error", exc.message)


def _endpoint() -> str:
    return settings.DYNAMODB_ENDPOINT_URL or f"AWS DynamoDB ({settings.AWS_REGION})"


# --- the JSON API's own refusals (not domain errors, but told the same way) --------------


def unauthenticated(message: str) -> UserError:
    return UserError(
        401,
        "Authentication required",
        message,
        hint="Send the header `Authorization: Bearer <token>`; "
        "create a token with `python manage.py create_api_token <username>`.",
    )


def forbidden(message: str) -> UserError:
    return UserError(403, "Forbidden", message)


def no_such_endpoint(path: str) -> UserError:
    return UserError(404, "Not found", f"There is no API endpoint at {path}.")


def method_not_allowed(method: str, allowed: list[str]) -> UserError:
    return UserError(405, "Method not allowed", f"{method} is not allowed here; use {' or '.join(allowed)}.")
