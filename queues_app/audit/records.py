"""The audit trail's entries as the pages read them, and what the trail can be filtered
on."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from queues_app.audit.readable import READABLE, readable_changes
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.event_names import ACTION_LABELS

SOURCES = ("page", "admin", "api", "command", "system")
# Where an action came from, as the trail's sentences say it.
SOURCE_LABELS = {
    "page": "on the dashboard",
    "admin": "in the admin",
    "api": "through the API",
    "command": "from the command line",
    "system": "on its own",
}
KINDS = ("agent", "call", "shipment", "task")  # what a bare id may name
SNAPSHOT_LIMIT = 16_000  # characters of JSON kept for each of before and after
# Kept in an entry whenever the item has them, changed or not: an agent's day follows
# status and call from entry to entry.
ALWAYS_KEPT = ("status", "call_id")


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
    def action_label(self) -> str:
        return ACTION_LABELS.get(self.action, self.action)

    @property
    def source_label(self) -> str:
        return SOURCE_LABELS.get(self.source, self.source)

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
        """The call an agent took in this entry: an agent entry that ends attending a call
        they were not attending before (picked up after it rang, or given it at once). A
        call that only rang is no call taken."""
        if self.kind != "agent" or not self.after:
            return None
        before, call_id = self.before or {}, self.after.get("call_id")
        was_attending = before.get("status", "attending") == "attending" and before.get("call_id") == call_id
        taken = self.after.get("status") == "attending" and call_id and not was_attending
        return call_id if taken else None


@dataclass
class TrailPage:
    entries: list[TrailEntry] = field(default_factory=list)
    next_cursor: str | None = None


def target(kind: str, item_id: str) -> str:
    return f"{kind}:{item_id}"


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


def query_params(params: dict, key_range: tuple[str, str] | None, filters: TrailFilter, prefixes=()) -> dict:
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


def snapshot_json(value: dict | None) -> tuple[str | None, bool]:
    if value is None:
        return None, False
    text = json.dumps(value, default=str, sort_keys=True)
    if len(text) <= SNAPSHOT_LIMIT:
        return text, False
    return json.dumps({"_truncated": text[:SNAPSHOT_LIMIT]}), True


def entry_from_item(item: dict) -> TrailEntry:
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
