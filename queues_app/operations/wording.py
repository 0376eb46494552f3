"""How a change's summary puts times and calls into words."""

from __future__ import annotations

from queues_app.calls.records import Call
from queues_app.ddb.clock import from_iso


def ago(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def waited(call: Call) -> str:
    seconds = call.waited_seconds
    return f"{seconds:.0f} s" if seconds is not None else "an unknown time"


def took(call: Call) -> str:
    """What an agent did with a waiting caller given to them: took it, or (with offers)
    had it offered, ringing until they pick up."""
    if call.offer_sk:
        return f"was offered waiting call {call.call_id}, ringing (the caller waited {waited(call)} so far)"
    return f"took waiting call {call.call_id} (the caller waited {waited(call)})"


def waited_until(call: Call, moment: str | None) -> str:
    """How long the caller waited from arrival to `moment` (an offered call picked up)."""
    start, end = from_iso(call.arrived_at), from_iso(moment)
    return f"{(end - start).total_seconds():.0f} s" if start and end else "an unknown time"


def asked_for(call: Call) -> dict:
    """The preferences the caller arrived with (before any was relaxed)."""
    return call.asked_for
