"""The audit trail: who did what to which item, when, with the fields that changed,
before and after (the whole item when it was created or deleted).

Entries live in the `audit` table, sorted by time in the partitions of their UTC day:
16 shards (`AUDIT#2026-11-21#0` to `#15`, chosen by a hash of the entry id), so that a
day's writes spread over 16 partitions instead of meeting one partition's 1,000 WCU a
second (docs/scale.md), and the unsharded `AUDIT#2026-11-21` of entries written before
the day was sharded (nothing moves them: they expire). The `by_target` index gives one
item's history. Entries expire after a retention period (TTL).

People and the API act through `actions.Operations` (source page, admin or api; the
commands: command). What the queues do on their own is recorded as system events
(source `system`, the actor naming the part that acted: matcher, escalation, shipment
worker, task processor), on the item it concerns, so an agent's or a call's history is
complete.

What each read costs (every read is bounded; a page that is not full carries on from
its cursor):

- the trail, newest first: a round of 17 Queries (in parallel) of the day's partitions,
  each shard for about its share of the page, merged newest first; a shard whose share
  ran out before the page was full is read again (one Query more, rarely), and a day
  with no entries costs a round: at most `max_reads` rounds (17 Queries each) a page;
- a time range: the same Queries with a key condition on the time (sort key), so
  nothing outside the range is read;
- by actor, action or source: a filter on those Queries (each asking for the whole
  page: a Limit counts entries before the filter): DynamoDB reads (and bills) every
  entry in the range and returns those that match, so a rare actor may take a few
  pages of `max_reads` rounds each;
- one item's history: one Query of the `by_target` index per page (filters as above);
- a bare id: up to four Limit-1 Queries of the index (agent, call, shipment, task)
  to find which item it is; an id prefix: the trail filtered on the target.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import math
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from queues_app.agents.skills import SkillCatalog
from queues_app.ddb import batch, errors, parallel
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import from_iso, now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.paging import INVALID, decode_cursor, decode_state, encode_cursor, encode_state

DAY_PREFIX = "AUDIT#"
# A day's entries spread over this many partitions: every call writes ~6 entries, and one
# partition takes at most 1,000 WCU a second (docs/scale.md).
AUDIT_SHARDS = 16
SNAPSHOT_LIMIT = 16_000  # characters of JSON kept for each of before and after
# Kept in an entry whenever the item has them, changed or not: an agent's day follows
# status and call from entry to entry.
ALWAYS_KEPT = ("status", "call_id")
DEFAULT_RETENTION_DAYS = 90
# Cursor purposes (each signs with its own salt): the trail across days carries the day
# it reached and the sort key it read down to (on every partition of the day); one
# item's history is a plain key cursor.
RECENT_CURSOR = "audit-recent"
TARGET_CURSOR = "audit-target"
_DAY_FORMAT = "%Y-%m-%d"
SOURCES = ("page", "admin", "api", "command", "system")
KINDS = ("agent", "call", "shipment", "task")  # what a bare id may name
SYSTEM = "system"


@dataclass
class TrailEntry:
    entry_id: str
    at: str
    actor: str
    source: str  # page | admin | api | command | system
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
        """(field, before, after) for every stored field that differs, as stored."""
        before, after = self.before or {}, self.after or {}
        return [
            (name, before.get(name), after.get(name))
            for name in sorted(set(before) | set(after))
            if before.get(name) != after.get(name)
        ]

    @property
    def described(self) -> list[tuple[str, str, str]]:
        """(what, before, after) in the domain's words for what a person reads: status,
        priority, queue, call, agent... Internal fields (sort keys, tokens, versions)
        are left to `internal_changes`."""
        return readable_changes(self.kind, self.before, self.after)

    @property
    def internal_changes(self) -> list[tuple[str, object, object]]:
        shown = READABLE.get(self.kind, {})
        return [change for change in self.changes if change[0] not in shown]

    @property
    def call_taken(self) -> str | None:
        """The call an agent took in this entry (an agent entry that ends attending a new call)."""
        if self.kind != "agent" or not self.after:
            return None
        call_id = self.after.get("call_id")
        taken = self.after.get("status") == "attending" and call_id != (self.before or {}).get("call_id")
        return call_id if taken else None


@dataclass
class TrailPage:
    entries: list[TrailEntry] = field(default_factory=list)
    next_cursor: str | None = None


def target(kind: str, item_id: str) -> str:
    return f"{kind}:{item_id}"


def day_shard(entry_id: str) -> int:
    """The shard of its day an entry goes to: a stable hash of its id (the same in every process)."""
    return int.from_bytes(hashlib.blake2b(entry_id.encode(), digest_size=4).digest()) % AUDIT_SHARDS


def day_partitions(day: str) -> list[str]:
    """Every partition holding a day's entries: its shards, then the unsharded day of the
    entries written before the day was sharded."""
    return [f"{DAY_PREFIX}{day}#{n}" for n in range(AUDIT_SHARDS)] + [DAY_PREFIX + day]


# --- before and after in the domain's words --------------------------------------------

_STATUS_WORDS = {
    "wrap_up": "wrap-up",
    "in_dlq": "in the DLQ",
    "under_construction": "under construction",
    "ready_to_ship": "ready to ship",
}


def _status(value: object) -> str:
    return _STATUS_WORDS.get(str(value).lower(), str(value).replace("_", " ").lower())


def _preferences(value: object) -> str:
    if not isinstance(value, dict):
        return _plain(value)
    # Entries store their fields sorted by name: show them in the catalog's order.
    order = {name: i for i, name in enumerate(SkillCatalog.from_settings().names)}
    ordered = sorted(value.items(), key=lambda pair: order.get(pair[0], len(order)))
    return ", ".join(f"{name}: {wanted or 'any'}" for name, wanted in ordered) or "any"


def _skills(value: object) -> str:
    if not isinstance(value, dict):
        return _plain(value)
    return "; ".join(f"{name}: {', '.join(map(str, values))}" for name, values in value.items())


def _relaxed(value: object) -> str:
    if not isinstance(value, list):
        return _plain(value)
    return ", ".join(f"{r.get('dimension')} (was {r.get('from') or 'any'})" for r in value if isinstance(r, dict))


def _reasons(value: object) -> str:
    if not isinstance(value, list) or not value:
        return _plain(value)
    last = value[-1]
    return f"{len(value)}, last: {last.get('reason', last) if isinstance(last, dict) else last}"


def _plain(value: object) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return "–"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


# Per kind of item: field -> (what people call it, how its value reads). Anything else
# an entry stores is internal (keys, tokens, versions) and shown only as raw fields.
READABLE: dict[str, dict[str, tuple[str, Callable[[object], str]]]] = {
    "agent": {
        "status": ("status", _status),
        "name": ("name", _plain),
        "skills": ("skills", _skills),
        "call_id": ("call", _plain),
        "queued_at": ("queued at", _plain),
    },
    "call": {
        "status": ("status", _status),
        "agent_name": ("agent", _plain),
        "preferences": ("preferences", _preferences),
        "priority": ("priority", _plain),
        "order": ("agent order", lambda v: str(v).upper() if v else "–"),
        "assigned_at": ("assigned at", _plain),
        "ended_at": ("ended at", _plain),
        "relaxed": ("relaxed", _relaxed),
    },
    "shipment": {
        "status": ("status", _status),
        "priority": ("priority", _plain),
        "queue": ("queue", _plain),
        "tenant": ("tenant", _plain),
        "attempts": ("attempts", _plain),
        "enqueued_at": ("place in line (enqueued at)", _plain),
        "visible_at": ("visible at", _plain),
        "dlq_reason": ("DLQ reason", _plain),
        "failure_reasons": ("failures", _reasons),
        "restored_count": ("restores", _plain),
        "completed_at": ("completed at", _plain),
    },
    "task": {
        "status": ("status", _status),
        "attempts": ("attempts", _plain),
        "result": ("result", _plain),
    },
    "queue": {
        "shed": ("tasks shed", _plain),
        "oldest_age_seconds": ("oldest shed (s)", _plain),
    },
}


def readable_changes(kind: str, before: dict | None, after: dict | None) -> list[tuple[str, str, str]]:
    fields = READABLE.get(kind, {})
    old, new = before or {}, after or {}
    return [
        (label, show(old.get(name)) if name in old else "–", show(new.get(name)) if name in new else "–")
        for name, (label, show) in fields.items()
        if old.get(name) != new.get(name)
    ]


# --- filters ---------------------------------------------------------------------------


@dataclass(frozen=True)
class TrailFilter:
    """Which entries to show: by who acted, the action (an exact name, or a family such
    as `agent.`), where from, and a time range (either end open)."""

    actor: str = ""
    action: str = ""
    source: str = ""
    since: datetime | None = None
    until: datetime | None = None

    @property
    def active(self) -> bool:
        return bool(self.actor or self.action or self.source or self.since or self.until)

    def key_range(self) -> tuple[str, str] | None:
        """The sort key range of the time filter (sort keys start with the time)."""
        if not (self.since or self.until):
            return None
        low = to_iso(self.since) if self.since else "0"  # a key may not be empty; "0" sorts before any time
        high = to_iso(self.until) + "~" if self.until else "~"  # "~" sorts after "#<entry id>"
        return low, high

    def expression(self, target_prefixes: tuple[str, ...] = ()) -> tuple[str, dict, dict]:
        """FilterExpression, names and values (empty when nothing is filtered on)."""
        parts, names, values = [], {}, {}
        if self.actor:
            parts.append("#actor = :actor")
            names["#actor"], values[":actor"] = "actor", {"S": self.actor}
        if self.action:
            parts.append("begins_with(#action, :action)")
            names["#action"], values[":action"] = "action", {"S": self.action}
        if self.source:
            parts.append("#source = :source")
            names["#source"], values[":source"] = "source", {"S": self.source}
        if target_prefixes:
            names["#target"] = "target"
            alternatives = []
            for i, prefix in enumerate(target_prefixes):
                alternatives.append(f"begins_with(#target, :tp{i})")
                values[f":tp{i}"] = {"S": prefix}
            parts.append("(" + " OR ".join(alternatives) + ")")
        return " AND ".join(parts), names, values


def _query_params(params: dict, key_range: tuple[str, str] | None, filters: TrailFilter, prefixes=()) -> dict:
    if key_range:
        params["KeyConditionExpression"] += " AND sk BETWEEN :low AND :high"
        params["ExpressionAttributeValues"][":low"] = {"S": key_range[0]}
        params["ExpressionAttributeValues"][":high"] = {"S": key_range[1]}
    expression, names, values = filters.expression(prefixes)
    if expression:
        params["FilterExpression"] = expression
        params["ExpressionAttributeNames"] = {**params.get("ExpressionAttributeNames", {}), **names}
        params["ExpressionAttributeValues"].update(values)
    return params


def changed_fields(before: dict | None, after: dict | None) -> tuple[dict | None, dict | None]:
    """`before` and `after` narrowed to the fields that differ, and `ALWAYS_KEPT`. The
    whole item would make each entry 2-5 KB (3-5 write units, on the day's partitions:
    docs/scale.md); what changed is what the trail shows."""
    if before is None or after is None:
        return before, after
    names = {name for name in set(before) | set(after) if before.get(name) != after.get(name)}
    names |= {name for name in ALWAYS_KEPT if name in before or name in after}
    return (
        {name: before[name] for name in sorted(names) if name in before},
        {name: after[name] for name in sorted(names) if name in after},
    )


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


@dataclass
class _Partition:
    """One partition of a day as a page reads it: the entries read and not returned yet
    (newest first), and where its next Query starts (None once read to its end)."""

    pk: str
    legacy: bool = False  # the unsharded day
    pending: deque[dict] = field(default_factory=deque)
    start: dict | None = None
    read: bool = False

    @property
    def finished(self) -> bool:
        return self.read and self.start is None and not self.pending

    def holds_back(self, sk: str | None) -> bool:
        """Whether entries it has not read yet may be newer than `sk` (than anything, None)."""
        if self.pending:
            return False
        if not self.read:
            return True
        if self.start is None:
            return False
        return sk is None or self.start["sk"]["S"] > sk

    def limit(self, room: int, filtered: bool) -> int:
        """A shard's first Query asks for its share of the page, twice over and two more (a
        shard rarely holds more of the page's entries; one that does is read again). Other
        Queries ask for the room left: the unsharded day may hold the whole page, a
        partition read again holds the page back, and a filter's Limit counts entries
        before the filter."""
        if self.read or self.legacy or filtered:
            return room
        return min(room, 2 * math.ceil(room / AUDIT_SHARDS) + 2)


class _DayMerge:
    """A day's partitions merged newest first. An entry is returned only when no partition
    may hold a newer one unread: one whose read entries are all returned and whose
    reading stopped (Limit, 1 MB) above it; that partition is read again first."""

    def __init__(self, day: str):
        pks = day_partitions(day)
        self.partitions = [_Partition(pk, legacy=pk == DAY_PREFIX + day) for pk in pks]

    def due(self) -> list[_Partition]:
        """The partitions to read before the next entry can be returned (none: day done)."""
        newest = max((p.pending[0]["sk"] for p in self.partitions if p.pending), default=None)
        return [p for p in self.partitions if p.holds_back(newest)]

    def take(self, count: int) -> list[dict]:
        """Up to `count` entries, newest first, as long as none is held back."""
        taken: list[dict] = []
        runs = ([(item["sk"], n) for item in p.pending] for n, p in enumerate(self.partitions))
        for sk, n in heapq.merge(*runs, reverse=True):
            if len(taken) >= count or any(p.holds_back(sk) for p in self.partitions):
                break
            taken.append(self.partitions[n].pending.popleft())
        return taken

    @property
    def finished(self) -> bool:
        return all(p.finished for p in self.partitions)

    def resume_at(self, before: str | None) -> str | None:
        """Where a page that stops here carries on (below): the newest sort key at which a
        partition with all its read entries returned stopped reading; everything newer
        was returned or filtered out, and what is pending is older (else it would have
        been returned). `before` while a partition is not read yet."""
        if not all(p.read for p in self.partitions):
            return before
        return max((p.start["sk"]["S"] for p in self.partitions if p.start and not p.pending), default=before)


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
        before, after = changed_fields(before, after)
        before_text, cut_before = _snapshot(before)
        after_text, cut_after = _snapshot(after)
        item = {
            "pk": f"{DAY_PREFIX}{stamp[:10]}#{day_shard(entry_id)}",
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
            self.db.call("put_item", TableName=self.table, Item=marshal(items[0]))
        elif items:
            batch.put_items(self.db, self.table, items)

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
        while day >= oldest_day and len(entries) < limit:
            condition = _sort_key_condition(filters.key_range(), before)
            merge = _DayMerge(day)
            last = before
            while condition is not None and len(entries) < limit and (due := merge.due()):
                if rounds >= max_reads:
                    return TrailPage(entries, _recent_cursor(day, merge.resume_at(before)))
                rounds += 1
                room = limit - len(entries)
                self._read_round(due, condition, before, expression, room)
                taken = merge.take(room)
                if taken:
                    last = taken[-1]["sk"]
                entries += [_entry_from_item(item) for item in taken]
            if condition is not None and not merge.finished:  # full within the day
                return TrailPage(entries, _recent_cursor(day, last))
            day, before = (datetime.strptime(day, _DAY_FORMAT) - timedelta(days=1)).strftime(_DAY_FORMAT), None
        return TrailPage(entries, _recent_cursor(day, None) if day >= oldest_day else None)

    def _read_round(
        self,
        due: list[_Partition],
        condition: tuple[str, dict],
        before: str | None,
        expression: tuple[str, dict, dict],
        room: int,
    ) -> None:
        """One Query of each partition due, in parallel (one round trip, not 17)."""
        key_condition, key_values = condition
        filter_expression, names, values = expression

        def query(partition: _Partition) -> dict:
            params: dict = {
                "TableName": self.table,
                "KeyConditionExpression": "pk = :pk" + (f" AND {key_condition}" if key_condition else ""),
                "ExpressionAttributeValues": {":pk": {"S": partition.pk}, **key_values, **values},
                "ScanIndexForward": False,
                "Limit": partition.limit(room, bool(filter_expression)),
            }
            if filter_expression:
                params["FilterExpression"] = filter_expression
                params["ExpressionAttributeNames"] = names
            if partition.start:
                params["ExclusiveStartKey"] = partition.start
            return self.db.call("query", **params)

        responses = parallel.each(query, due)
        for partition, response in zip(due, responses, strict=True):
            items = [unmarshal(i) for i in response.get("Items", [])]
            partition.pending.extend(item for item in items if before is None or item["sk"] < before)
            partition.start = response.get("LastEvaluatedKey")
            partition.read = True

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
        params = _query_params(
            {
                "TableName": self.table,
                "IndexName": "by_target",
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
            entries += [_entry_from_item(item) for item in items]
            if not key or len(entries) >= limit:
                break
        return TrailPage(entries, encode_cursor(key, purpose=TARGET_CURSOR))

    def find_target(self, item_id: str) -> str | None:
        """The item a bare id names, from its history: one Limit-1 Query of the index per
        kind tried (agent, call, shipment, task; at most four), None when none has one."""
        for kind in KINDS:
            response = self.db.call(
                "query",
                TableName=self.table,
                IndexName="by_target",
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
            "TableName": self.table,
            "IndexName": "by_target",
            "KeyConditionExpression": "target = :t AND sk >= :since",
            "ExpressionAttributeValues": {":t": {"S": item_target}, ":since": {"S": to_iso(day_start)}},
            "ScanIndexForward": True,
            "Limit": limit,
        }
        response = self.db.call("query", **params)
        return [_entry_from_item(unmarshal(i)) for i in response.get("Items", [])]

    def before(self, item_target: str, moment: datetime) -> TrailEntry | None:
        """The item's last entry before `moment` (one Limit-1 Query of the index)."""
        response = self.db.call(
            "query",
            TableName=self.table,
            IndexName="by_target",
            KeyConditionExpression="target = :t AND sk < :until",
            ExpressionAttributeValues={":t": {"S": item_target}, ":until": {"S": to_iso(moment)}},
            ScanIndexForward=False,
            Limit=1,
        )
        items = response.get("Items", [])
        return _entry_from_item(unmarshal(items[0])) if items else None


# --- an agent's day --------------------------------------------------------------------

DAY_STATUSES = ("queued", "attending", "wrap_up", "offline", "available")
DAY_ENTRY_LIMIT = 500  # entries of one agent's day read at most (one Query)


@dataclass
class Stretch:
    """A stretch of the day in one status (with the call, while attending)."""

    status: str
    start: datetime
    end: datetime
    call_id: str | None = None

    @property
    def seconds(self) -> float:
        return max(0.0, (self.end - self.start).total_seconds())


@dataclass
class AgentDay:
    day_start: datetime
    until: datetime
    stretches: list[Stretch] = field(default_factory=list)
    calls: list[tuple[str, datetime]] = field(default_factory=list)  # (call id, taken at)
    capped: bool = False  # more entries than one read holds: the day shown is cut short

    @property
    def totals(self) -> list[tuple[str, float]]:
        """Seconds per status over the day so far, in a fixed order."""
        seconds: dict[str, float] = {}
        for stretch in self.stretches:
            seconds[stretch.status] = seconds.get(stretch.status, 0.0) + stretch.seconds
        return [(status, seconds[status]) for status in DAY_STATUSES if status in seconds]

    @property
    def bar(self) -> list[tuple[float, float, Stretch]]:
        """(x, width, stretch) on a 0..1000 scale from the start of the day to now."""
        span = max(1.0, (self.until - self.day_start).total_seconds())
        return [
            (round((s.start - self.day_start).total_seconds() / span * 1000, 2), round(s.seconds / span * 1000, 2), s)
            for s in self.stretches
        ]


def agent_day(
    trail: AuditTrail,
    agent_id: str,
    *,
    current_status: str,
    current_since: str | None = None,
    current_call: str | None = None,
    call_started: str | None = None,
) -> AgentDay:
    """Today's stretches (UTC) of queued, attending, wrap-up and offline, from the agent's
    audit entries (one Query of the index, and one Limit-1 Query for the status the day
    began in when nothing happened yet today) and what the agent's and the current call's
    records say now (`current_*`, `call_started`: the call's assigned_at, read by the
    caller with one GetItem)."""
    moment = trail.clock()
    day_start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    item = target("agent", agent_id)
    entries = trail.day_of(item, day_start, limit=DAY_ENTRY_LIMIT)
    day = AgentDay(day_start, moment, capped=len(entries) >= DAY_ENTRY_LIMIT)
    if entries:
        first = entries[0]
        status = (first.before or {}).get("status")
        start = day_start if first.before else (first.moment or day_start)  # created today: from then
        call_id = (first.before or {}).get("call_id")
    else:
        earlier = trail.before(item, day_start)
        status = (earlier.after or {}).get("status") if earlier else None
        start, call_id = day_start, (earlier.after or {}).get("call_id") if earlier else None
    stretch = Stretch(status or current_status, start, moment, call_id)
    for entry in entries:
        after = entry.after or {}
        at = entry.moment or stretch.start
        taken = entry.call_taken
        if taken:
            day.calls.append((taken, at))
        if "status" not in after:
            continue
        if after["status"] != stretch.status or after.get("call_id") != stretch.call_id:
            stretch.end = at
            day.stretches.append(stretch)
            stretch = Stretch(after["status"], at, moment, after.get("call_id"))
    # What the records say now wins over the trail's last word (a change made outside the
    # audited path, or an entry not written): from its own time when later than the trail.
    since = from_iso(call_started if current_status == "attending" and call_started else current_since)
    if current_status != stretch.status or (current_call and current_call != stretch.call_id):
        at = max(since, stretch.start) if since else moment
        stretch.end = at
        day.stretches.append(stretch)
        stretch = Stretch(current_status, at, moment, current_call)
    day.stretches.append(stretch)
    day.stretches = [s for s in day.stretches if s.seconds > 0 or s is stretch]
    return day
