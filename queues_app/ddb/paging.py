"""Opaque page cursors: DynamoDB's LastEvaluatedKey (or any small JSON state), signed
for a URL.

A cursor is `django.core.signing`'s compact form of the JSON (compressed when that is
shorter) with an HMAC of it under SECRET_KEY and a salt per purpose, so a cursor made
for one purpose is refused for another. What comes back in a URL is checked twice: the
signature first, then the shape (a key maps attribute names to one-type attribute
values such as {"S": "..."} or {"N": "1"}). Anything tampered with, truncated, signed
elsewhere or of the wrong shape is `errors.InvalidRequest` with the INVALID message:
a 400 on a page or the API, never a request DynamoDB (or botocore) would refuse.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any, TypeGuard

from django.core import signing

from queues_app.ddb import errors


@dataclass
class Page[T]:
    items: list[T]
    next_cursor: str | None


INVALID = "That page link is not valid; start from the first page."

KEY_PURPOSE = "key"
_SALT = "switchboard.cursor."
# The attribute-value types a key attribute can have in a JSON cursor (B, binary, has no
# JSON form; no key in this project is binary).
_KEY_TYPES = frozenset({"S", "N"})
_MAX_LENGTH = 4096  # far above any cursor this project makes; longer ones are not read


def _signer(purpose: str) -> signing.Signer:
    return signing.Signer(salt=_SALT + purpose)


def encode_state(state: dict[str, Any], *, purpose: str = "state") -> str:
    """A JSON object as an opaque, signed, URL-safe string."""
    return _signer(purpose).sign_object(state, compress=True)


def decode_state(cursor: str, *, purpose: str = "state") -> dict[str, Any]:
    """The object `encode_state` signed for the same purpose, or InvalidRequest."""
    if not isinstance(cursor, str) or len(cursor) > _MAX_LENGTH:
        raise errors.InvalidRequest(INVALID)
    try:
        state = _signer(purpose).unsign_object(cursor)
    except (signing.BadSignature, ValueError, TypeError, zlib.error) as exc:
        raise errors.InvalidRequest(INVALID) from exc
    if not isinstance(state, dict):
        raise errors.InvalidRequest(INVALID)
    return state


def is_key(value: object) -> TypeGuard[dict[str, Any]]:
    """True for a DynamoDB key in wire form: {"pk": {"S": "..."}, "n": {"N": "1"}, ...}."""
    return (
        isinstance(value, dict)
        and bool(value)
        and all(
            isinstance(name, str)
            and name
            and isinstance(attribute, dict)
            and len(attribute) == 1
            and next(iter(attribute)) in _KEY_TYPES
            and isinstance(next(iter(attribute.values())), str)
            for name, attribute in value.items()
        )
    )


def check_key(value: object) -> dict[str, Any]:
    """`value` if it has the shape of a key (see `is_key`), else InvalidRequest."""
    if not is_key(value):
        raise errors.InvalidRequest(INVALID)
    return value


def encode_cursor(last_evaluated_key: dict[str, Any] | None, *, purpose: str = KEY_PURPOSE) -> str | None:
    """The cursor of the next page, or None when DynamoDB said there is none."""
    return encode_state(last_evaluated_key, purpose=purpose) if last_evaluated_key else None


def decode_cursor(cursor: str | None, *, purpose: str = KEY_PURPOSE) -> dict[str, Any] | None:
    """The ExclusiveStartKey a cursor stands for (None for the first page)."""
    if not cursor:
        return None
    return check_key(decode_state(cursor, purpose=purpose))
