"""Before and after in the domain's words: per kind of item, which fields people read
(status, priority, queue, call, agent...) and how their values read."""

from __future__ import annotations

from collections.abc import Callable

from queues_app.agents.skills import SkillCatalog

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


def _levels(value: object) -> str:
    if not isinstance(value, dict):
        return _plain(value)
    shown = [f"{v} {n}" for values in value.values() if isinstance(values, dict) for v, n in values.items()]
    return ", ".join(shown) or "all 1"


def _lines(value: object) -> str:
    """Lines served, as stored ({line: {"priority", "delay_seconds"}}): "support (1), sales (2, after 30 s)"."""
    if not isinstance(value, dict) or not value:
        return _plain(value)
    parts = []
    given = {line_id: terms if isinstance(terms, dict) else {} for line_id, terms in value.items()}
    for line_id, terms in sorted(given.items(), key=lambda pair: (pair[1].get("priority", 1), pair[0])):
        delay = terms.get("delay_seconds") or 0
        parts.append(f"{line_id} ({terms.get('priority', 1)}" + (f", after {delay} s)" if delay else ")"))
    return ", ".join(parts)


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
        "levels": ("levels", _levels),
        "profile": ("routing profile", _plain),
        "lines": ("own lines", _lines),
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
    "profile": {
        "name": ("name", _plain),
        "lines": ("lines", _lines),
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
