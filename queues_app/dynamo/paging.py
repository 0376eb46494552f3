"""Opaque page cursors: DynamoDB's LastEvaluatedKey, encoded for a URL."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Generic, TypeVar

from . import errors

T = TypeVar("T")


@dataclass
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def encode_cursor(last_evaluated_key: dict | None) -> str | None:
    if not last_evaluated_key:
        return None
    raw = json.dumps(last_evaluated_key, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> dict | None:
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        key = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError) as exc:
        raise errors.InvalidRequest("That page link is not valid; start from the first page.") from exc
    if not isinstance(key, dict) or not all(isinstance(v, dict) for v in key.values()):
        raise errors.InvalidRequest("That page link is not valid; start from the first page.")
    return key
