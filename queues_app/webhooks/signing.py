"""The callback's signature, as the Standard Webhooks specification has it
(https://www.standardwebhooks.com), so receivers verify with any of its libraries:

- `webhook-id` (the event's id), `webhook-timestamp` (Unix seconds) and
  `webhook-signature`: `v1,<base64 of HMAC-SHA256 of "<id>.<timestamp>.<body>">`;
- a secret is `whsec_` and the base64 of 24 or more random bytes; those bytes are the key;
- during a rotation the header carries one signature per secret, space-separated, so a
  receiver holding either secret verifies every delivery.

A secret set before Switchboard spoke the specification ("legacy") is not base64: its
UTF-8 bytes are the key (`Webhook(secret.encode())` verifies), and its deliveries also
carry the old `Switchboard-*` headers, so receivers written for them keep working until
the token rotates to a standard secret.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32
MIN_SECRET_BYTES = 24

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"

# Sent only while a legacy secret signs (see above).
LEGACY_SIGNATURE_HEADER = "Switchboard-Signature"
LEGACY_TIMESTAMP_HEADER = "Switchboard-Timestamp"
LEGACY_EVENT_HEADER = "Switchboard-Event-Id"


@dataclass(frozen=True)
class SigningSecret:
    secret: str
    legacy: bool = False

    @property
    def key(self) -> bytes:
        return self.secret.encode() if self.legacy else standard_key(self.secret)


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def standard_key(secret: str) -> bytes:
    """The key of a standard secret; ValueError when `secret` is not one."""
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError(f"a secret starts with {SECRET_PREFIX}")
    try:
        key = base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError("what follows whsec_ is not base64") from exc
    if len(key) < MIN_SECRET_BYTES:
        raise ValueError(f"the key is {len(key)} bytes; it needs {MIN_SECRET_BYTES} or more")
    return key


def signature(key: bytes, event_id: str, timestamp: int, body: bytes) -> str:
    digest = hmac.new(key, f"{event_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def legacy_signature(secret: str, timestamp: int, body: bytes) -> str:
    return "v1=" + hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def signed_headers(
    signing: Sequence[SigningSecret], body: bytes, event_id: str, *, timestamp: int | None = None
) -> dict[str, str]:
    """The headers of one delivery: signed by every secret in `signing` (the current one,
    and the previous one during a rotation's overlap)."""
    stamp = int(time.time()) if timestamp is None else timestamp
    headers = {
        "Content-Type": "application/json",
        ID_HEADER: event_id,
        TIMESTAMP_HEADER: str(stamp),
        SIGNATURE_HEADER: " ".join(signature(each.key, event_id, stamp, body) for each in signing),
    }
    legacy = [each.secret for each in signing if each.legacy]
    if legacy:
        headers[LEGACY_EVENT_HEADER] = event_id
        headers[LEGACY_TIMESTAMP_HEADER] = str(stamp)
        headers[LEGACY_SIGNATURE_HEADER] = legacy_signature(legacy[0], stamp, body)
    return headers
