"""The audit trail's storage: who did what to which item, when, with the fields that
changed, before and after (the whole item when it was created or deleted).

Entries live in the `audit` table in the 16 shards of their UTC day (ddb/shards), with
the `by_target` index for one item's history, and expire after a retention period.
People and the API write through `operations.Operations`; what the queues do on their
own is written as system events. Every read is bounded; what each costs is in
docs/architecture.md, "The audit trail".
"""

from __future__ import annotations

import math
import threading
import uuid
import weakref
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from queues_app.audit.records import (
    KINDS,
    TrailEntry,
    TrailFilter,
    TrailPage,
    changed_fields,
    entry_from_item,
    query_params,
    snapshot_json,
    target,
)
from queues_app.ddb import batch, errors
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.merge import Partition, SortedMerge
from queues_app.ddb.paging import INVALID, decode_cursor, decode_state, encode_cursor, encode_state
from queues_app.ddb.shards import Spread, shard_of
from queues_app.ddb.tables import AUDIT_BY_TARGET

DAY_PREFIX = "AUDIT#"
# A day's entries spread over this many partitions: every call writes ~6 entries, and one
# partition takes at most 1,000 WCU a second (docs/scale.md).
AUDIT_SHARDS = 16
DEFAULT_RETENTION_DAYS = 90
# Cursor purposes (each signs with its own salt): the trail across days carries the day
# it reached and the sort key it read down to (on every partition of the day); one
# item's history is a plain key cursor.
RECENT_CURSOR = "audit-recent"
TARGET_CURSOR = "audit-target"
_DAY_FORMAT = "%Y-%m-%d"
# The days that have entries, one small item each (`sk` the day): the trail across days
# reads only those, so a quiet week or the retention's empty days cost nothing.
DAYS_PK = "DAYS"
# The days each client (a process has one) marked already: its first entry of a day marks it.
_marked: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_marked_lock = threading.Lock()


def day_spread(day: str) -> Spread:
    """A day's shards: `AUDIT#2026-11-21#0` .. `#15`, an entry in the one a hash of its id picks."""
    return Spread(DAY_PREFIX + day, AUDIT_SHARDS)


def day_shard(entry_id: str) -> int:
    return shard_of(entry_id, AUDIT_SHARDS)


def day_partitions(day: str) -> list[str]:
    """Every partition holding a day's entries: its shards, then the unsharded day of the
    entries written before the day was sharded."""
    return [*day_spread(day).partitions(), DAY_PREFIX + day]


def _share(room: int, filtered: bool):
    """A shard's first Query asks for its share of the page, twice over and two more (a
    shard rarely holds more of the page's entries; one that does is read again). Other
    Queries ask for the room left: the unsharded day may hold the whole page, a partition
    read again holds the page back, and a filter's Limit counts entries before the filter."""

    def limit(n: int, partition: Partition) -> int:
        if partition.read or n >= AUDIT_SHARDS or filtered:
            return room
        return min(room, 2 * math.ceil(room / AUDIT_SHARDS) + 2)

    return limit


def _older_than(before: str | None):
    """Drops the entry a cursor stopped at (a key condition on the sort key is `<=`)."""
    return lambda item: before is None or item["sk"] < before


def _resume_at(merge: SortedMerge, before: str | None) -> str | None:
    """Where a page that stops here carries on (below): where every partition is read down
    to, the stop that comes first (everything newer was returned or filtered out); `before`
    while a partition is not read yet."""
    if not all(p.read for p in merge.partitions):
        return before
    stop = merge.stop()
    return unmarshal(stop)["sk"] if stop else before


def _decode_recent(cursor: str) -> tuple[str, str | None]:
    """The day and the sort key (exclusive) that a `recent` cursor carries on from."""
    state = decode_state(cursor, purpose=RECENT_CURSOR)
    day, sk = state.get("day"), state.get("sk")
    if not isinstance(day, str) or len(day) != 10:
        raise errors.InvalidRequest(INVALID)
    try:
        datetime.strptime(day, _DAY_FORMAT)
    except ValueError as exc:
        raise errors.InvalidRequest(INVALID) from exc
    # A day's sort keys start with the day. A `key` within the day is a cursor of the
    # unsharded trail: refused (cursors are short-lived), not followed.
    if state.get("key") is not None or (sk is not None and not (isinstance(sk, str) and sk.startswith(day))):
        raise errors.InvalidRequest(INVALID)
    return day, sk


def _recent_cursor(day: str, sk: str | None) -> str:
    return encode_state({"day": day, "sk": sk}, purpose=RECENT_CURSOR)


def _sort_key_condition(key_range: tuple[str, str] | None, before: str | None) -> tuple[str, dict] | None:
    """The condition on the sort key of a day's Queries: the time range, and below the
    cursor's `before`; None when nothing of the day is left. A key condition compares the
    sort key once, so within a range it is `BETWEEN low AND before`, and the entry at
    `before` (returned by the page before) is dropped from what comes back."""
    low, high = key_range or (None, None)
    if before is not None and (high is None or before <= high):
        if low is None:
            return "sk < :high", {":high": {"S": before}}
        if before <= low:
            return None
        high = before
    if low is None or high is None:
        return "", {}
    return "sk BETWEEN :low AND :high", {":low": {"S": low}, ":high": {"S": high}}


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
    def table_name(self) -> str:
        return self.db.table("audit")

    def record(self, **entry: Any) -> TrailEntry:
        """One entry (the fields of `entry_item`), in one PutItem."""
        item = self.entry_item(**entry)
        self.db.call("put_item", TableName=self.table_name, Item=marshal(item))
        self.mark_days([item["at"][:10]])
        return entry_from_item(item)

    def mark_days(self, days: list[str]) -> None:
        """Each day that now has an entry, marked once by this process (a PutItem of the
        same marker again is harmless: two processes may both mark a day)."""
        with _marked_lock:
            done = _marked.setdefault(self.db, set())
            new = sorted({day for day in days if (self.table_name, day) not in done})
        for day in new:
            until = datetime.strptime(day, _DAY_FORMAT).replace(tzinfo=UTC) + timedelta(days=self.retention_days + 1)
            marker = {"pk": DAYS_PK, "sk": day, "expires_at": int(until.timestamp())}
            self.db.call("put_item", TableName=self.table_name, Item=marshal(marker))
            with _marked_lock:
                done.add((self.table_name, day))

    def days_with_entries(self, oldest: str, newest: str) -> list[str]:
        """The days from `newest` back to `oldest` that have entries, newest first (one
        Query of the markers, a page per year of days)."""
        items = self.db.items(
            "query",
            TableName=self.table_name,
            KeyConditionExpression="pk = :pk AND sk BETWEEN :oldest AND :newest",
            ExpressionAttributeValues=marshal({":pk": DAYS_PK, ":oldest": oldest, ":newest": newest}),
            ScanIndexForward=False,
        )
        return [item["sk"] for item in items]

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
        before, after = changed_fields(before, after)
        before_text, cut_before = snapshot_json(before)
        after_text, cut_after = snapshot_json(after)
        item = {
            "pk": day_spread(stamp[:10]).of(entry_id),
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

    def record_many(self, entries: list[dict]) -> None:
        """Several entries (each a `record` keyword set) in one request: an action and
        what it brought about (a call assigned, a call ended). A BatchWriteItem, which
        resends what DynamoDB leaves unprocessed, and bills 1 WCU an entry where a
        transaction would bill 2, spread over the day's shards (docs/scale.md)."""
        items = [self.entry_item(**entry) for entry in entries]
        if len(items) == 1:
            self.db.call("put_item", TableName=self.table_name, Item=marshal(items[0]))
        elif items:
            batch.put_items(self.db, self.table_name, items)
        self.mark_days([item["at"][:10] for item in items])

    def recent(
        self,
        *,
        cursor: str | None = None,
        limit: int = 50,
        max_reads: int = 8,
        filters: TrailFilter | None = None,
        target_prefixes: tuple[str, ...] = (),
    ) -> TrailPage:
        """Newest first, across days, each day's 16 shards and unsharded partition merged.

        `max_reads` counts rounds: in a round the page reads, in parallel, once each of
        the day's partitions that may hold its next entry (all 17 in a day's first round,
        usually none or one or two after that), so a page makes at most 17 x `max_reads`
        Queries. A day with no entries (or none that match the filters) costs a round.
        The cursor carries the day and the sort key the page read down to, and carries on
        below it on every partition of that day. A time range reads only the days and
        times in it."""
        filters = filters or TrailFilter()
        moment = self.clock()
        newest_day = to_iso(min(filters.until, moment) if filters.until else moment)[:10]
        day, before = _decode_recent(cursor) if cursor else (newest_day, None)
        oldest_day = (moment - timedelta(days=self.retention_days)).strftime(_DAY_FORMAT)
        if filters.since:
            oldest_day = max(oldest_day, to_iso(filters.since)[:10])
        expression = filters.expression(target_prefixes)
        entries: list[TrailEntry] = []
        rounds = 0
        days = iter(self.days_with_entries(oldest_day, day))
        day = next(days, "")
        while day and len(entries) < limit:
            if before is not None and not before.startswith(day):
                before = None  # the cursor's day had no entry left: its next day from the top
            condition = _sort_key_condition(filters.key_range(), before)
            merge = self._day(day, condition, expression) if condition is not None else None
            last = before
            while merge is not None and len(entries) < limit and (due := merge.due(limit - len(entries))):
                if rounds >= max_reads:
                    return TrailPage(entries, _recent_cursor(day, _resume_at(merge, before)))
                rounds += 1
                room = limit - len(entries)
                merge.read(due, _share(room, bool(expression[0])), keep=_older_than(before))
                taken = merge.take(room)
                if taken:
                    last = taken[-1]["sk"]
                entries += [entry_from_item(item) for item in taken]
            if merge is not None and merge.more:  # full within the day
                return TrailPage(entries, _recent_cursor(day, last))
            day, before = next(days, ""), None
        return TrailPage(entries, _recent_cursor(day, None) if day else None)

    def _day(self, day: str, condition: tuple[str, dict], expression: tuple[str, dict, dict]) -> SortedMerge:
        """A day's partitions (its shards, then the unsharded day), newest first."""
        key_condition, key_values = condition
        filter_expression, names, values = expression
        queries = []
        for pk in day_partitions(day):
            query: dict = {
                "TableName": self.table_name,
                "KeyConditionExpression": "pk = :pk" + (f" AND {key_condition}" if key_condition else ""),
                "ExpressionAttributeValues": {":pk": {"S": pk}, **key_values, **values},
                "ScanIndexForward": False,
            }
            if filter_expression:
                query["FilterExpression"] = filter_expression
                query["ExpressionAttributeNames"] = names
            queries.append(query)
        return SortedMerge(self.db, queries, sort_key="sk", descending=True)

    def for_target(
        self,
        target: str,
        *,
        cursor: str | None = None,
        limit: int = 50,
        filters: TrailFilter | None = None,
        max_reads: int = 4,
    ) -> TrailPage:
        """One item's history, newest first: one Query on the `by_target` index per page,
        and up to `max_reads` when filters leave a page short."""
        filters = filters or TrailFilter()
        params = query_params(
            {
                "TableName": self.table_name,
                "IndexName": AUDIT_BY_TARGET.name,
                "KeyConditionExpression": "target = :t",
                "ExpressionAttributeValues": {":t": {"S": target}},
                "ScanIndexForward": False,
                "Limit": limit,
            },
            filters.key_range(),
            filters,
        )
        key = decode_cursor(cursor, purpose=TARGET_CURSOR)
        entries: list[TrailEntry] = []
        for _ in range(max_reads if filters.active else 1):
            if key:
                params["ExclusiveStartKey"] = key
            params["Limit"] = limit - len(entries)
            response = self.db.call("query", **params)
            items = [unmarshal(i) for i in response.get("Items", [])]
            key = response.get("LastEvaluatedKey")
            entries += [entry_from_item(item) for item in items]
            if not key or len(entries) >= limit:
                break
        return TrailPage(entries, encode_cursor(key, purpose=TARGET_CURSOR))

    def find_target(self, item_id: str) -> str | None:
        """The item a bare id names, from its history: one Limit-1 Query of the index per
        kind tried (agent, call, shipment, task; at most four), None when none has one."""
        for kind in KINDS:
            response = self.db.call(
                "query",
                TableName=self.table_name,
                IndexName=AUDIT_BY_TARGET.name,
                KeyConditionExpression="target = :t",
                ExpressionAttributeValues={":t": {"S": target(kind, item_id)}},
                Select="COUNT",
                Limit=1,
            )
            if response.get("Count"):
                return target(kind, item_id)
        return None

    def for_id_prefix(self, prefix: str, **kwargs) -> TrailPage:
        """Entries about any item whose id starts with `prefix`: the trail filtered on the
        target (see `recent` for the cost)."""
        return self.recent(target_prefixes=tuple(target(kind, prefix) for kind in KINDS), **kwargs)

    def day_of(self, item_target: str, day_start: datetime, *, limit: int = 500) -> list[TrailEntry]:
        """An item's entries since `day_start`, oldest first: one Query of the index
        (two when the day holds more than a page), at most `limit` entries."""
        params: dict = {
            "TableName": self.table_name,
            "IndexName": AUDIT_BY_TARGET.name,
            "KeyConditionExpression": "target = :t AND sk >= :since",
            "ExpressionAttributeValues": {":t": {"S": item_target}, ":since": {"S": to_iso(day_start)}},
            "ScanIndexForward": True,
            "Limit": limit,
        }
        response = self.db.call("query", **params)
        return [entry_from_item(unmarshal(i)) for i in response.get("Items", [])]

    def before(self, item_target: str, moment: datetime) -> TrailEntry | None:
        """The item's last entry before `moment` (one Limit-1 Query of the index)."""
        response = self.db.call(
            "query",
            TableName=self.table_name,
            IndexName=AUDIT_BY_TARGET.name,
            KeyConditionExpression="target = :t AND sk < :until",
            ExpressionAttributeValues={":t": {"S": item_target}, ":until": {"S": to_iso(moment)}},
            ScanIndexForward=False,
            Limit=1,
        )
        items = response.get("Items", [])
        return entry_from_item(unmarshal(items[0])) if items else None
