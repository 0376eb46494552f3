"""The one error vocabulary of everything that reads or writes DynamoDB.

Everything the core and the domains raise is a `DynamoError`; callers (views, the API,
commands) map these to user messages in one place (`http/errors.py`) and never see a
botocore exception.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    PartialCredentialsError,
    ReadTimeoutError,
)
from botocore.exceptions import (
    ConnectionError as BotoConnectionError,
)

from queues_app.ddb.codec import unmarshal


class DynamoError(Exception):
    """Base class: something the queue service could not do."""

    def __init__(self, message: str, *, detail: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.detail = detail or {}


class NotFound(DynamoError):
    """The item asked for does not exist."""


class Conflict(DynamoError):
    """A condition failed: the item changed since it was read, or is in another state.

    `current` holds the item as DynamoDB saw it when the condition failed (from
    `ReturnValuesOnConditionCheckFailure=ALL_OLD`), when there was one. `now` holds the
    items the refused request named as they are now, as records by kind (`agent`,
    `call`, `shipment`, `task`), when the domain read them to say what changed.
    """

    def __init__(
        self, message: str, *, current: dict | None = None, detail: dict | None = None, now: dict | None = None
    ):
        super().__init__(message, detail=detail)
        self.current = current
        self.now = now or {}


@dataclass(frozen=True)
class CancellationReason:
    """Why one action of a cancelled transaction was refused."""

    index: int
    code: str  # "None", "ConditionalCheckFailed", "TransactionConflict", "ThrottlingError", ...
    message: str = ""
    item: dict | None = field(default=None, compare=False)

    @property
    def failed(self) -> bool:
        return self.code not in ("None", "", None)


class TransactionCancelled(Conflict):
    """A transaction was cancelled because of a condition or a concurrent transaction.

    `reasons` has one entry per action, in request order, as DynamoDB reports them.
    """

    def __init__(self, message: str, reasons: list[CancellationReason]):
        super().__init__(message)
        self.reasons = reasons

    def failed_indexes(self, code: str | None = None) -> list[int]:
        return [r.index for r in self.reasons if r.failed and (code is None or r.code == code)]

    @property
    def lost_race(self) -> bool:
        """True when the only failures are concurrent writers (real DynamoDB's
        TransactionConflict), not a condition on the data."""
        return bool(self.reasons) and all(r.code == "TransactionConflict" for r in self.reasons if r.failed)


class Refused(DynamoError):
    """A caller the centre does not take now: their line is closed (`opens_at` says when
    it opens, if ever) or full. `reason` is what the phone system is told."""

    def __init__(self, message: str, *, reason: str, line_id: str, opens_at: str | None = None):
        super().__init__(message)
        self.reason, self.line_id, self.opens_at = reason, line_id, opens_at

    def as_json(self) -> dict:
        body = {"reason": self.reason, "line": self.line_id}
        return body | ({"opens_at": self.opens_at} if self.reason == "closed" else {})


class KeyReused(DynamoError):
    """An idempotency key sent again with a different request: never answered with the
    first request's result."""


class AlreadyExists(DynamoError):
    """A table (or other resource) being created exists already."""


class Throttled(DynamoError):
    """DynamoDB refused the request for capacity reasons after botocore's retries."""


class InvalidRequest(DynamoError):
    """DynamoDB rejected the request as malformed (a bug or bad input that got through),
    or the domain refused a value; `field`, when given, names the input at fault."""

    def __init__(self, message: str, *, field: str | None = None, detail: dict | None = None):
        super().__init__(message, detail=detail)
        self.field = field


class Unavailable(DynamoError):
    """DynamoDB could not be reached or answered with a server error."""

    def __init__(self, message: str, *, endpoint: str | None = None, detail: dict | None = None):
        super().__init__(message, detail=detail)
        self.endpoint = endpoint


class TableMissing(Unavailable):
    """A table the application needs does not exist (yet)."""

    def __init__(self, table: str, *, endpoint: str | None = None):
        super().__init__(f"DynamoDB table {table!r} does not exist.", endpoint=endpoint)
        self.table_name = table


THROTTLE_CODES = {
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
}
_UNAVAILABLE_CODES = {"InternalServerError", "ServiceUnavailable", "InternalFailure"}
_AUTH_CODES = {
    "UnrecognizedClientException",
    "InvalidSignatureException",
    "AccessDeniedException",
    "ExpiredTokenException",
    "MissingAuthenticationTokenException",
}


def _reasons(response: dict[str, Any]) -> list[CancellationReason]:
    reasons = []
    for index, raw in enumerate(response.get("CancellationReasons") or []):
        item = raw.get("Item")
        reasons.append(
            CancellationReason(
                index=index,
                code=raw.get("Code") or "None",
                message=raw.get("Message") or "",
                item=unmarshal(item) if item else None,
            )
        )
    return reasons


def translate(exc: Exception, *, table: str | None = None, endpoint: str | None = None) -> DynamoError:
    """Turn a botocore exception into the matching domain error."""
    if isinstance(exc, DynamoError):
        return exc
    if isinstance(exc, ClientError):
        response = cast(dict[str, Any], exc.response)  # the stubs' TypedDict lacks Item and CancellationReasons
        error = response.get("Error", {})
        code = error.get("Code", "")
        message = error.get("Message", "") or code
        if code == "ConditionalCheckFailedException":
            item = response.get("Item")
            return Conflict(
                "The item changed or is not in the expected state.",
                current=unmarshal(item) if item else None,
            )
        if code == "TransactionCanceledException":
            reasons = _reasons(response)
            codes = {r.code for r in reasons if r.failed}
            if codes & THROTTLE_CODES:
                return Throttled("DynamoDB throttled part of a transaction; try again shortly.")
            if "ValidationError" in codes:
                return InvalidRequest(f"DynamoDB rejected part of a transaction: {message}")
            return TransactionCancelled(
                "The change could not be applied: " + ", ".join(sorted(codes)) if codes else message,
                reasons,
            )
        if code == "TransactionConflictException":
            return TransactionCancelled(
                "Another transaction was changing the same item.",
                [CancellationReason(index=0, code="TransactionConflict")],
            )
        if code == "ResourceInUseException":
            return AlreadyExists(message)
        if code == "ResourceNotFoundException":
            return TableMissing(table or _table_from_message(message), endpoint=endpoint)
        if code in THROTTLE_CODES:
            return Throttled("DynamoDB is throttling requests; try again shortly.")
        if code in _UNAVAILABLE_CODES:
            return Unavailable(f"DynamoDB answered with a server error ({code}).", endpoint=endpoint)
        if code in _AUTH_CODES:
            return Unavailable(f"DynamoDB refused the credentials ({code}): {message}", endpoint=endpoint)
        if code in ("ValidationException", "SerializationException"):
            return InvalidRequest(f"DynamoDB rejected the request: {message}")
        return DynamoError(f"DynamoDB error {code}: {message}")
    if isinstance(exc, (EndpointConnectionError, ConnectTimeoutError, BotoConnectionError)):
        return Unavailable("DynamoDB cannot be reached.", endpoint=endpoint)
    if isinstance(exc, ReadTimeoutError):
        return Unavailable("DynamoDB did not answer in time.", endpoint=endpoint)
    if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
        return Unavailable("No AWS credentials were found for DynamoDB.", endpoint=endpoint)
    if isinstance(exc, NoRegionError):
        return Unavailable("No AWS region is configured (set AWS_REGION).", endpoint=endpoint)
    if isinstance(exc, BotoCoreError):
        return Unavailable(f"DynamoDB request failed: {exc}", endpoint=endpoint)
    raise TypeError(f"not a botocore error: {exc!r}")


def _table_from_message(message: str) -> str:
    # DynamoDB Local: "Cannot do operations on a non-existent table"; AWS names the table
    # in some messages ("Requested resource not found: Table: x not found").
    marker = "Table: "
    if marker in message:
        return message.split(marker, 1)[1].split(" ", 1)[0]
    return "(unknown table)"


class RateLimited(DynamoError):
    """An API token used its requests of the current window (API_RATE_LIMIT)."""

    def __init__(self, limit: int, seconds: int, retry_after: int):
        super().__init__(
            f"This token made its {limit:,} requests of the last {seconds:,} s; try again in {retry_after} s."
        )
        self.limit, self.seconds, self.retry_after = limit, seconds, retry_after


class TenantOverRate(DynamoError):
    """A tenant sent a named shipment queue more than its rate allows in this window."""

    def __init__(self, queue: str, tenant: str, retry_after: int):
        super().__init__(
            f"Tenant {tenant!r} sent queue {queue!r} more than its tenant rate allows; try again in {retry_after} s."
        )
        self.queue, self.tenant, self.retry_after = queue, tenant, retry_after


class Backpressure(DynamoError):
    """A queue's backlog is past its bound: the enqueue is refused, try again later."""

    def __init__(self, queue: str, depth: int, bound: int, retry_after: int):
        super().__init__(
            f"The {queue} queue holds {depth:,}{'+' if depth > bound else ''} items, past its bound of "
            f"{bound:,}; try again in {retry_after} s."
        )
        self.queue, self.depth, self.bound, self.retry_after = queue, depth, bound, retry_after
