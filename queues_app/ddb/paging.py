"""Opaque page cursors: DynamoDB's LastEvaluatedKey, encoded for a URL."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Generic, TypeVar

from queues_app.ddb import errors

T = TypeVar("T")


@dataclass
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


INVALID = "That page link is not valid; start from the first page."


def encode_state(state: dict) -> str:
    """Any JSON object as an opaque URL-safe string."""
    raw = json.dumps(state, separators=(",", ":"), sort_keys=True).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_state(cursor: str) -> dict:
    try:
        state = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()))
    except (ValueError, TypeError) as exc:
        raise errors.InvalidRequest(INVALID) from exc
    if not isinstance(state, dict):
        raise errors.InvalidRequest(INVALID)
    return state


def encode_cursor(last_evaluated_key: dict | None) -> str | None:
    return encode_state(last_evaluated_key) if last_evaluated_key else None


def decode_cursor(cursor: str | None) -> dict | None:
    if not cursor:
        return None
    key = decode_state(cursor)
    if not all(isinstance(v, dict) for v in key.values()):
        raise errors.InvalidRequest(INVALID)
    return key
