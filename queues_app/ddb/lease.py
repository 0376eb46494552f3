"""One fenced lease: at most one holder of a named role across all hosts, as one item
with the holder, `lease_until` and a fencing `generation`. The task processor's lease is
an item of the tasks table, the matching dispatcher's an item of the callcenter table:
the table and the key are the caller's. How acquire, renew and release stay safe is
explained in docs/architecture.md ("Leases").
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

CLEANUP_AFTER_SECONDS = 3600  # TTL: delete a lease item this long after it ran out


@dataclass(frozen=True)
class LeaseInfo:
    """The lease item as stored. `address`: where the holder can be reached, when it
    publishes one (the matching dispatcher)."""

    holder: str
    lease_until: float
    generation: int
    acquired_at: float | None = None
    address: str = ""

    def live(self, moment: float) -> bool:
        """True while the lease had not run out at `moment` (epoch seconds)."""
        return moment < self.lease_until


def info_from_item(item: dict | None) -> LeaseInfo | None:
    """The stored lease, or None when nobody holds it (never taken, or released). Items
    written before the lease had a generation read as generation 0."""
    if not item or "holder" not in item:
        return None
    return LeaseInfo(
        holder=item["holder"],
        lease_until=float(item.get("lease_until", 0)),
        generation=int(item.get("generation", 0)),
        acquired_at=float(item["acquired_at"]) if "acquired_at" in item else None,
        address=str(item.get("address", "")),
    )


def read_lease(db: Dynamo, table: str, key: dict[str, str]) -> LeaseInfo | None:
    """The lease as stored now (a consistent read of `key` in the logical table `table`);
    None when nobody holds it. An expired lease still names its last holder."""
    response = db.call("get_item", TableName=db.table(table), Key=marshal(key), ConsistentRead=True)
    return info_from_item(unmarshal(response.get("Item")))


class Lease:
    """One holder's handle on the lease stored at `key` in the logical table `table`.

    `now` returns epoch seconds (wall time, comparable across hosts); tests inject their own.
    `address`, when given, is written with every acquisition for others to read.
    """

    def __init__(
        self,
        db: Dynamo | None = None,
        *,
        table: str,
        key: dict[str, str],
        holder: str,
        name: str | None = None,
        address: str = "",
        duration: float = 15.0,
        margin: float | None = None,
        now: Callable[[], float] = time.time,
    ):
        if duration <= 0:
            raise ValueError("a lease needs a positive duration")
        self.db = db or default()
        self.logical_table = table
        self.item_key = dict(key)
        self.name = name or "/".join(key.values())
        self.holder = holder
        self.address = address
        self.duration = float(duration)
        self.margin = float(margin) if margin is not None else min(1.0, self.duration / 10)
        self.now = now
        self.generation: int | None = None  # set while we believe we hold it
        self.until: float = 0.0  # lease_until as we wrote it
        self.last_seen: LeaseInfo | None = None  # the item, as of our last failed acquire or renew

    @property
    def table_name(self) -> str:
        return self.db.table(self.logical_table)

    @property
    def key(self) -> dict:
        return marshal(self.item_key)

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
        """Take the lease if it is free, expired or ours already; each acquisition adds
        one to the generation. False when someone else holds it (`last_seen` then says
        who, and until when). DynamoDB errors other than the condition propagate
        (Unavailable, Throttled)."""
        moment = self.now()  # read before the request: our lease ends no later than anyone else sees it end
        until = moment + self.duration
        # The address is the holder's: a holder without one leaves none of the last holder's.
        sets = "holder = :me, lease_until = :until, acquired_at = :now, expires_at = :cleanup, #type = :type"
        values = {
            ":me": self.holder,
            ":until": until,
            ":now": moment,
            ":one": 1,
            ":type": "lease",
            ":cleanup": int(until) + CLEANUP_AFTER_SECONDS,
        }
        if self.address:
            sets += ", address = :address"
            values[":address"] = self.address
        update = f"SET {sets} ADD generation :one" + ("" if self.address else " REMOVE address")
        try:
            response = self.db.call(
                "update_item",
                TableName=self.table_name,
                Key=self.key,
                UpdateExpression=update,
                ConditionExpression="attribute_not_exists(#key) OR lease_until < :now OR holder = :me",
                ExpressionAttributeNames={"#type": "type", "#key": next(iter(self.item_key))},
                ExpressionAttributeValues=marshal(values),
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
                TableName=self.table_name,
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
        when it was ours. The item stays, so the generation only ever grows."""
        if self.generation is None:
            return False
        generation = self.generation
        self._forget()
        try:
            self.db.call(
                "update_item",
                TableName=self.table_name,
                Key=self.key,
                UpdateExpression="SET lease_until = :zero, released_at = :now REMOVE holder, address",
                ConditionExpression="holder = :me AND generation = :gen",
                ExpressionAttributeValues=marshal(
                    {":me": self.holder, ":gen": generation, ":zero": 0, ":now": self.now()}
                ),
            )
        except errors.Conflict:
            return False
        return True

    def current(self) -> LeaseInfo | None:
        """The lease as stored now (consistent read); None when nobody holds it (never
        taken, or released; an expired lease still names its last holder)."""
        return read_lease(self.db, self.logical_table, self.item_key)

    def wait_hint(self, cap: float) -> float:
        """How long to wait before trying to acquire again: until the lease we saw runs
        out, at most `cap`."""
        seen = self.last_seen
        if seen is None:
            return min(cap, 0.1)
        return max(0.05, min(cap, seen.lease_until - self.now() + 0.05))
