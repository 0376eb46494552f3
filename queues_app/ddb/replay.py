"""Which request made an item what it is: the `change` every conditioned write stores.

A change names the state it was decided on (the version seen, the call it ends, the
receipt it holds) and stores its own identity on the item it writes, in the same
write. The same request sent again (a retry after a timeout, a second tab, a form
posted twice) then finds the item changed and no longer at the version it names, but
marked with its own identity: it was done already, and is answered as done instead of
refused as stale. Any later change overwrites the mark, so a repeat that comes after
something else happened is refused and told what happened. docs/architecture.md,
"Stale and repeated requests".
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

CHANGE = "change"  # the attribute holding the identity of the request behind the item's version


def change_id(action: str, *parts: object) -> str:
    """A request's identity: its action and what it names (`available@7`, `end:3f2a:queue`)."""
    head = f"{action}@{parts[0]}" if parts and isinstance(parts[0], int) else action
    rest = parts[1:] if parts and isinstance(parts[0], int) else parts
    return ":".join([head, *(str(part) for part in rest)])


def digest(value: object) -> str:
    """A short fingerprint of a request's body, the same for the same content whatever the
    order of its keys: an idempotency key sent again with another body is told apart."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def made_by(item: dict | None, change: str) -> bool:
    """True when `item` (as read, or as a failed condition returned it) is what `change` left."""
    return item is not None and item.get(CHANGE) == change


@dataclass
class Done[T]:
    """What a change left: the item as it is now, and whether the request had already taken
    effect (`replayed`: this call changed nothing)."""

    item: T
    replayed: bool = False
