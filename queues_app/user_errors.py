"""Domain errors mapped to what a person (or a machine on the API) is told.

The one place where a `DynamoError` becomes an HTTP status and a sentence.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from .dynamo import errors


@dataclass
class UserError:
    status: int
    title: str
    message: str
    hint: str = ""
    retry_after: int | None = None

    def as_json(self) -> dict:
        body = {"error": self.title, "message": self.message}
        if self.hint:
            body["hint"] = self.hint
        return body


def describe(exc: errors.DynamoError) -> UserError:
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
