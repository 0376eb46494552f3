"""The audit entry every change is written as, whoever made it: who, from where, what, the
item before and after, and the request's trace id."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from queues_app.audit.store import target


def snapshot(record) -> dict | None:
    """A record as the trail stores it (a dict), or None."""
    return dataclasses.asdict(record) if record is not None else None


@dataclass(frozen=True)
class Author:
    """Who writes entries: the actor, from where (page, admin, api, command, system), and
    the trace id of the request being served."""

    actor: str
    source: str
    trace_id: str | None = None

    def entry(self, action: str, kind: str, item_id: str, summary: str, before=None, after=None) -> dict:
        """One entry, ready for `AuditTrail.record_many`; `before` and `after` are records
        or dicts (the fields that matter), or None when the item did not exist or is gone."""
        return {
            "actor": self.actor,
            "source": self.source,
            "action": action,
            "target": target(kind, item_id),
            "summary": summary,
            "before": before if isinstance(before, dict) or before is None else snapshot(before),
            "after": after if isinstance(after, dict) or after is None else snapshot(after),
            "trace_id": self.trace_id,
        }
