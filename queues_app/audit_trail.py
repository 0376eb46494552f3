"""The audit trail: who did what to which item, when, with the item before and after.

Entries live in the `audit` table, one partition per UTC day (`AUDIT#2026-11-21`),
sorted by time, so the newest entries are one Query away; the `by_target` index gives
one item's history. Entries expire after a retention period (TTL).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.paging import INVALID, decode_state, encode_state
from queues_app.ddb.clock import from_iso, now, to_iso
from queues_app.ddb.codec import marshal, unmarshal

DAY_PREFIX = "AUDIT#"
SNAPSHOT_LIMIT = 16_000  # characters of JSON kept for each of before and after
DEFAULT_RETENTION_DAYS = 90


@dataclass
class TrailEntry:
    entry_id: str
    at: str
    actor: str
    source: str  # page | admin | api | command
    action: str
    target: str  # "<kind>:<id>", e.g. "agent:7f3a..." or "shipment:s-1"
    summary: str = ""
    before: dict | None = None
    after: dict | None = None
    trace_id: str | None = None
    truncated: bool = False

    @property
    def kind(self) -> str:
        return self.target.split(":", 1)[0]

    @property
    def target_id(self) -> str:
        return self.target.split(":", 1)[1] if ":" in self.target else self.target

    @property
    def moment(self) -> datetime | None:
        return from_iso(self.at)

    @property
    def changes(self) -> list[tuple[str, object, object]]:
        """(field, before, after) for every top-level field that differs."""
        before, after = self.before or {}, self.after or {}
        return [(name, before.get(name), after.get(name))
                for name in sorted(set(before) | set(after))
                if before.get(name) != after.get(name)]


@dataclass
class TrailPage:
    entries: list[TrailEntry] = field(default_factory=list)
    next_cursor: str | None = None


def target(kind: str, item_id: str) -> str:
    return f"{kind}:{item_id}"


def _snapshot(value: dict | None) -> tuple[str | None, bool]:
    if value is None:
        return None, False
    text = json.dumps(value, default=str, sort_keys=True)
    if len(text) <= SNAPSHOT_LIMIT:
        return text, False
    return json.dumps({"_truncated": text[:SNAPSHOT_LIMIT]}), True


def _entry_from_item(item: dict) -> TrailEntry:
    return TrailEntry(
        entry_id=item["entry_id"],
        at=item["at"],
        actor=item.get("actor", ""),
        source=item.get("source", ""),
        action=item.get("action", ""),
        target=item.get("target", ""),
        summary=item.get("summary", ""),
        before=json.loads(item["before"]) if item.get("before") else None,
        after=json.loads(item["after"]) if item.get("after") else None,
        trace_id=item.get("trace_id"),
        truncated=bool(item.get("truncated")),
    )


def _decode(cursor: str) -> dict:
    state = decode_state(cursor)
    if "day" not in state:
        raise errors.InvalidRequest(INVALID)
    return state


class AuditTrail:
    def __init__(self, db: Dynamo | None = None, *, retention_days: int | None = None,
                 clock: Callable[[], datetime] = now):
        self.db = db or default()
        if retention_days is None:
            from django.conf import settings

            retention_days = getattr(settings, "SWITCHBOARD_AUDIT_RETENTION_DAYS", DEFAULT_RETENTION_DAYS)
        self.retention_days = retention_days
        self.clock = clock

    @property
    def table(self) -> str:
        return self.db.table("audit")

    def record(self, *, actor: str, source: str, action: str, target: str, summary: str = "",
               before: dict | None = None, after: dict | None = None, trace_id: str | None = None) -> TrailEntry:
        item = self.entry_item(actor=actor, source=source, action=action, target=target, summary=summary,
                               before=before, after=after, trace_id=trace_id)
        self.db.call("put_item", TableName=self.table, Item=marshal(item))
        return _entry_from_item(item)

    def entry_item(self, *, actor: str, source: str, action: str, target: str, summary: str = "",
                   before: dict | None = None, after: dict | None = None, trace_id: str | None = None,
                   moment: datetime | None = None) -> dict:
        """The item of one entry (for `record`, and for bulk loads)."""
        moment = moment or self.clock()
        stamp = to_iso(moment)
        entry_id = uuid.uuid4().hex[:12]
        before_text, cut_before = _snapshot(before)
        after_text, cut_after = _snapshot(after)
        item = {
            "pk": DAY_PREFIX + stamp[:10],
            "sk": f"{stamp}#{entry_id}",
            "entry_id": entry_id,
            "at": stamp,
            "actor": actor,
            "source": source,
            "action": action,
            "target": target,
            "summary": summary,
            "trace_id": trace_id,
            "before": before_text,
            "after": after_text,
            "truncated": cut_before or cut_after,
            "expires_at": int((moment + timedelta(days=self.retention_days)).timestamp()),
        }
        return {k: v for k, v in item.items() if v is not None}

    def recent(self, *, cursor: str | None = None, limit: int = 50, max_reads: int = 8) -> TrailPage:
        """Newest first, across days. At most `max_reads` queries per page: days with
        no entries cost one empty query each, and the cursor carries on from there."""
        if cursor:
            state = _decode(cursor)
        else:
            state = {"day": to_iso(self.clock())[:10], "key": None}
        oldest_day = (self.clock() - timedelta(days=self.retention_days)).strftime("%Y-%m-%d")
        entries: list[TrailEntry] = []
        for _ in range(max_reads):
            if state["day"] < oldest_day:
                return TrailPage(entries, None)
            params = {
                "TableName": self.table,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": {"S": DAY_PREFIX + state["day"]}},
                "ScanIndexForward": False,
                "Limit": limit - len(entries),
            }
            if state.get("key"):
                params["ExclusiveStartKey"] = state["key"]
            response = self.db.call("query", **params)
            entries += [_entry_from_item(unmarshal(i)) for i in response.get("Items", [])]
            if response.get("LastEvaluatedKey"):
                state = {"day": state["day"], "key": response["LastEvaluatedKey"]}
            else:
                previous = datetime.strptime(state["day"], "%Y-%m-%d") - timedelta(days=1)
                state = {"day": previous.strftime("%Y-%m-%d"), "key": None}
            if len(entries) >= limit:
                break
        more = state["day"] >= oldest_day
        return TrailPage(entries, encode_state(state) if more else None)

    def for_target(self, target: str, *, cursor: str | None = None, limit: int = 50) -> TrailPage:
        """One item's history, newest first (one Query on the `by_target` index)."""
        params = {
            "TableName": self.table,
            "IndexName": "by_target",
            "KeyConditionExpression": "target = :t",
            "ExpressionAttributeValues": {":t": {"S": target}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        if cursor:
            params["ExclusiveStartKey"] = _decode(cursor)["key"]
        response = self.db.call("query", **params)
        last = response.get("LastEvaluatedKey")
        return TrailPage(
            [_entry_from_item(unmarshal(i)) for i in response.get("Items", [])],
            encode_state({"day": "", "key": last}) if last else None,
        )
