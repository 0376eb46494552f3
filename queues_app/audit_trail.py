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
from queues_app.ddb.clock import from_iso, now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.paging import INVALID, decode_cursor, decode_state, encode_cursor, encode_state, is_key

DAY_PREFIX = "AUDIT#"
SNAPSHOT_LIMIT = 16_000  # characters of JSON kept for each of before and after
DEFAULT_RETENTION_DAYS = 90
# Cursor purposes (each signs with its own salt): the trail across days carries the day
# it reached and DynamoDB's key within it; one item's history is a plain key cursor.
RECENT_CURSOR = "audit-recent"
TARGET_CURSOR = "audit-target"
_DAY_FORMAT = "%Y-%m-%d"


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
        return [
            (name, before.get(name), after.get(name))
            for name in sorted(set(before) | set(after))
            if before.get(name) != after.get(name)
        ]


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


def _decode_recent(cursor: str) -> tuple[str, dict | None]:
    """The day and the key within it that a `recent` cursor carries on from."""
    state = decode_state(cursor, purpose=RECENT_CURSOR)
    day, key = state.get("day"), state.get("key")
    if not isinstance(day, str) or len(day) != 10:
        raise errors.InvalidRequest(INVALID)
    try:
        datetime.strptime(day, _DAY_FORMAT)
    except ValueError as exc:
        raise errors.InvalidRequest(INVALID) from exc
    if key is not None and not is_key(key):
        raise errors.InvalidRequest(INVALID)
    return day, key


def entry_key(item: dict) -> dict:
    """An entry's primary key in wire form, as DynamoDB's LastEvaluatedKey gives it."""
    return marshal({"pk": item["pk"], "sk": item["sk"]})


class AuditTrail:
    def __init__(
        self, db: Dynamo | None = None, *, retention_days: int | None = None, clock: Callable[[], datetime] = now
    ):
        self.db = db or default()
        if retention_days is None:
            from django.conf import settings

            retention_days = getattr(settings, "SWITCHBOARD_AUDIT_RETENTION_DAYS", DEFAULT_RETENTION_DAYS)
        self.retention_days = retention_days
        self.clock = clock

    @property
    def table(self) -> str:
        return self.db.table("audit")

    def record(
        self,
        *,
        actor: str,
        source: str,
        action: str,
        target: str,
        summary: str = "",
        before: dict | None = None,
        after: dict | None = None,
        trace_id: str | None = None,
    ) -> TrailEntry:
        item = self.entry_item(
            actor=actor,
            source=source,
            action=action,
            target=target,
            summary=summary,
            before=before,
            after=after,
            trace_id=trace_id,
        )
        self.db.call("put_item", TableName=self.table, Item=marshal(item))
        return _entry_from_item(item)

    def entry_item(
        self,
        *,
        actor: str,
        source: str,
        action: str,
        target: str,
        summary: str = "",
        before: dict | None = None,
        after: dict | None = None,
        trace_id: str | None = None,
        moment: datetime | None = None,
    ) -> dict:
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
        day, key = _decode_recent(cursor) if cursor else (to_iso(self.clock())[:10], None)
        oldest_day = (self.clock() - timedelta(days=self.retention_days)).strftime(_DAY_FORMAT)
        entries: list[TrailEntry] = []
        reads = 0
        while reads < max_reads and len(entries) < limit:
            if day < oldest_day:
                return TrailPage(entries, None)
            params: dict = {
                "TableName": self.table,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": {"S": DAY_PREFIX + day}},
                "ScanIndexForward": False,
                "Limit": limit - len(entries),
            }
            if key:
                params["ExclusiveStartKey"] = key
            key = None
            for response in self.db.pages("query", **params):
                reads += 1
                items = [unmarshal(i) for i in response.get("Items", [])]
                room = limit - len(entries)
                if len(items) > room:
                    # A later page of the day asks for the first page's Limit: keep what
                    # fits and carry on after the last entry kept.
                    items = items[:room]
                    key = entry_key(items[-1])
                else:
                    key = response.get("LastEvaluatedKey")
                entries += [_entry_from_item(item) for item in items]
                if not key or len(entries) >= limit or reads >= max_reads:
                    break
            if not key:
                day = (datetime.strptime(day, _DAY_FORMAT) - timedelta(days=1)).strftime(_DAY_FORMAT)
        more = day >= oldest_day
        return TrailPage(entries, encode_state({"day": day, "key": key}, purpose=RECENT_CURSOR) if more else None)

    def for_target(self, target: str, *, cursor: str | None = None, limit: int = 50) -> TrailPage:
        """One item's history, newest first (one Query on the `by_target` index)."""
        params: dict = {
            "TableName": self.table,
            "IndexName": "by_target",
            "KeyConditionExpression": "target = :t",
            "ExpressionAttributeValues": {":t": {"S": target}},
            "ScanIndexForward": False,
            "Limit": limit,
        }
        start = decode_cursor(cursor, purpose=TARGET_CURSOR)
        if start:
            params["ExclusiveStartKey"] = start
        response = self.db.call("query", **params)
        return TrailPage(
            [_entry_from_item(unmarshal(i)) for i in response.get("Items", [])],
            encode_cursor(response.get("LastEvaluatedKey"), purpose=TARGET_CURSOR),
        )
