"""The callback's signature: HMAC-SHA256 of "<timestamp>.<body>" with the token's
callback secret, sent as `Switchboard-Signature: v1=<hex>` beside `Switchboard-Timestamp`
(Unix seconds). Signing the timestamp lets a receiver refuse old requests replayed."""

from __future__ import annotations

import hashlib
import hmac
import time

SIGNATURE_HEADER = "Switchboard-Signature"
TIMESTAMP_HEADER = "Switchboard-Timestamp"
EVENT_HEADER = "Switchboard-Event-Id"
TOLERANCE_SECONDS = 300


def signature(secret: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"v1={digest}"


def signed_headers(secret: str, body: bytes, event_id: str, *, timestamp: int | None = None) -> dict[str, str]:
    stamp = int(time.time()) if timestamp is None else timestamp
    return {
        "Content-Type": "application/json",
        EVENT_HEADER: event_id,
        TIMESTAMP_HEADER: str(stamp),
        SIGNATURE_HEADER: signature(secret, stamp, body),
    }


def verify(secret: str, headers, body: bytes, *, now: float | None = None) -> bool:
    """What a receiver does (docs/callbacks.md has it as a standalone snippet): the
    signature matches and the timestamp is recent."""
    try:
        stamp = int(headers[TIMESTAMP_HEADER])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - stamp) > TOLERANCE_SECONDS:
        return False
    return hmac.compare_digest(signature(secret, stamp, body), headers.get(SIGNATURE_HEADER, ""))
