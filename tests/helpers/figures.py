"""Service-level figures for tests that need some without placing calls: each one a call
fact of its own (one PutItem), which the next flush counts like any change's fact."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import now, to_iso
from queues_app.figures import facts


def _fact(db: Dynamo, kind: str, seconds: float, combination, moment: datetime | None, call_id: str = "") -> None:
    call_id = call_id or f"figure-{uuid.uuid4().hex}"
    action = facts.put_action(db, facts.item(kind, call_id, to_iso(moment or now()), combination, seconds))["Put"]
    db.call("put_item", TableName=action["TableName"], Item=action["Item"])


def _arrived_and_left(db: Dynamo, kind: str, wait_seconds: float, combination, moment: datetime | None) -> None:
    """A caller who entered the line `wait_seconds` before leaving it at `moment`."""
    left = moment or now()
    call_id = f"figure-{uuid.uuid4().hex}"
    _fact(db, facts.OFFERED, 0.0, combination, left - timedelta(seconds=wait_seconds), call_id)
    _fact(db, kind, wait_seconds, combination, left, call_id)


def entered(db: Dynamo, combination, *, moment: datetime | None = None) -> None:
    """A caller who entered the line at `moment` and is still waiting."""
    _fact(db, facts.OFFERED, 0.0, combination, moment)


def answered(db: Dynamo, wait_seconds: float, combination, *, moment: datetime | None = None) -> None:
    """A caller given an agent after waiting `wait_seconds` (and who entered the line then)."""
    _arrived_and_left(db, facts.ANSWERED, wait_seconds, combination, moment)


def abandoned(db: Dynamo, wait_seconds: float, combination, *, moment: datetime | None = None) -> None:
    """A caller who hung up while waiting, after `wait_seconds`."""
    _arrived_and_left(db, facts.ABANDONED, wait_seconds, combination, moment)


def handled(db: Dynamo, handle_seconds: float, combination, *, moment: datetime | None = None) -> None:
    """A call that ended, `handle_seconds` after it was answered."""
    _fact(db, facts.ENDED, handle_seconds, combination, moment)
