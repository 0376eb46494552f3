"""The processor lease: at most one holder of a named role (the task processor) across
all hosts, as one item in the tasks table with a fencing generation. How acquire, renew
and release stay safe is explained in docs/architecture.md.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.codec import marshal, unmarshal

log = logging.getLogger(__name__)

LEASE_PREFIX = "LEASE#"
CLEANUP_AFTER_SECONDS = 3600  # TTL: delete a lease item this long after it ran out


@dataclass(frozen=True)
class ProcessorLeaseInfo:
    """The lease item as stored."""

    holder: str
    lease_until: float
    generation: int
    acquired_at: float | None = None


def info_from_item(item: dict | None) -> ProcessorLeaseInfo | None:
    if not item or "holder" not in item:
        return None
    return ProcessorLeaseInfo(
        holder=item["holder"],
        lease_until=float(item.get("lease_until", 0)),
        generation=int(item.get("generation", 0)),
        acquired_at=float(item["acquired_at"]) if "acquired_at" in item else None,
    )


class ProcessorLease:
    """One holder's handle on a named lease.

    `now` returns epoch seconds (wall time, comparable across hosts); tests inject their own.
    """

    def __init__(
        self,
        db: Dynamo | None = None,
        *,
        name: str = "task-processor",
        holder: str,
        duration: float = 15.0,
        margin: float | None = None,
        now: Callable[[], float] = time.time,
    ):
        if duration <= 0:
            raise ValueError("a lease needs a positive duration")
        self.db = db or default()
        self.name = name
        self.holder = holder
        self.duration = float(duration)
        self.margin = float(margin) if margin is not None else min(1.0, self.duration / 10)
        self.now = now
        self.generation: int | None = None  # set while we believe we hold it
        self.until: float = 0.0  # lease_until as we wrote it
        self.last_seen: ProcessorLeaseInfo | None = None  # the item, as of our last failed acquire

    @property
    def table(self) -> str:
        return self.db.table("tasks")

    @property
    def key(self) -> dict:
        return marshal({"task_id": LEASE_PREFIX + self.name})

    # --- our view -----------------------------------------------------------------

    @property
    def held(self) -> bool:
        """True while we hold the lease and it has more than `margin` left."""
        return self.generation is not None and self.now() < self.until - self.margin

    def remaining(self) -> float:
        """Seconds we may still act as the holder (0 when not held)."""
        if self.generation is None:
            return 0.0
        return max(0.0, self.until - self.margin - self.now())

    def _forget(self) -> None:
        self.generation = None
        self.until = 0.0

    # --- requests -----------------------------------------------------------------

    def acquire(self) -> bool:
        """Take the lease if it is free, expired or ours already. False when someone else
        holds it (`last_seen` then says who, and until when). DynamoDB errors other than
        the condition propagate (Unavailable, Throttled)."""
        moment = self.now()
        until = moment + self.duration
        try:
            response = self.db.call(
                "update_item",
                TableName=self.table,
                Key=self.key,
                UpdateExpression=(
                    "SET holder = :me, lease_until = :until, acquired_at = :now, expires_at = :cleanup, "
                    "#type = :type ADD generation :one"
                ),
                ConditionExpression="attribute_not_exists(task_id) OR lease_until < :now OR holder = :me",
                ExpressionAttributeNames={"#type": "type"},
                ExpressionAttributeValues=marshal(
                    {
                        ":me": self.holder,
                        ":until": until,
                        ":now": moment,
                        ":one": 1,
                        ":type": "lease",
                        ":cleanup": int(until) + CLEANUP_AFTER_SECONDS,
                    }
                ),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except errors.Conflict as exc:
            self.last_seen = info_from_item(exc.current)
            self._forget()
            return False
        info = info_from_item(unmarshal(response["Attributes"]))
        assert info is not None  # an update with ALL_NEW returns the item
        self.generation = info.generation
        self.until = until
        self.last_seen = info
        return True

    def renew(self) -> bool:
        """Extend our lease by `duration` from now. False when it is no longer ours (someone
        took it over after it expired, or it was released); we then forget it."""
        if self.generation is None:
            return False
        moment = self.now()
        until = moment + self.duration
        try:
            self.db.call(
                "update_item",
                TableName=self.table,
                Key=self.key,
                UpdateExpression="SET lease_until = :until, expires_at = :cleanup",
                ConditionExpression="holder = :me AND generation = :gen",
                ExpressionAttributeValues=marshal(
                    {
                        ":me": self.holder,
                        ":gen": self.generation,
                        ":until": until,
                        ":cleanup": int(until) + CLEANUP_AFTER_SECONDS,
                    }
                ),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except errors.Conflict as exc:
            self.last_seen = info_from_item(exc.current)
            log.warning(
                "lease %s lost by %s (now %s)",
                self.name,
                self.holder,
                self.last_seen.holder if self.last_seen else "free",
            )
            self._forget()
            return False
        self.until = until
        return True

    def release(self) -> bool:
        """Give the lease up if it is still ours: free for the next acquire at once. True
        when it was ours."""
        if self.generation is None:
            return False
        generation = self.generation
        self._forget()
        try:
            self.db.call(
                "update_item",
                TableName=self.table,
                Key=self.key,
                UpdateExpression="SET lease_until = :zero, released_at = :now REMOVE holder",
                ConditionExpression="holder = :me AND generation = :gen",
                ExpressionAttributeValues=marshal(
                    {":me": self.holder, ":gen": generation, ":zero": 0, ":now": self.now()}
                ),
            )
        except errors.Conflict:
            return False
        return True

    def current(self) -> ProcessorLeaseInfo | None:
        """The lease as stored now (consistent read); None when nobody holds it (never
        taken, or released; an expired lease still names its last holder)."""
        response = self.db.call("get_item", TableName=self.table, Key=self.key, ConsistentRead=True)
        return info_from_item(unmarshal(response.get("Item")))

    def wait_hint(self, cap: float) -> float:
        """How long to wait before trying to acquire again: until the lease we saw runs
        out, at most `cap`."""
        seen = self.last_seen
        if seen is None:
            return min(cap, 0.1)
        return max(0.05, min(cap, seen.lease_until - self.now() + 0.05))
