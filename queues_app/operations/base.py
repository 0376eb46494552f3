"""What every audited change shares (`Recorder`): who acts and from where, the services it
acts through, the one way its entries are written, and how a refusal is told."""

from __future__ import annotations

from contextlib import contextmanager

from queues_app.agents.roster import Agents
from queues_app.audit.store import AuditTrail, target
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now
from queues_app.operations.entries import Author
from queues_app.operations.system import SystemEvents
from queues_app.operations.wording import ago
from queues_app.shipments.queue import ShipmentQueue


class Recorder:
    """Who acts (`actor`) and from where (`source`: page, admin, api, command), the services
    the changes go through, and the one way each change is written to the audit trail,
    with the request's trace id."""

    def __init__(self, actor: str, source: str, *, trace_id: str | None = None, db: Dynamo | None = None):
        self.actor = actor
        self.source = source
        self.trace_id = trace_id
        self.db = db or default()
        self.call_center = CallCenter(self.db)
        self.agents: Agents = self.call_center.agents
        self.shipments = ShipmentQueue(self.db)
        self.trail = AuditTrail(self.db)
        self.system = SystemEvents(self.trail, trace_id=trace_id)

    def entry(self, action: str, kind: str, item_id: str, summary: str, before, after) -> dict:
        return Author(self.actor, self.source, self.trace_id).entry(action, kind, item_id, summary, before, after)

    def record(self, action: str, kind: str, item_id: str, summary: str, before, after, *also: dict) -> None:
        """One entry, and the entries it brought about (one request for all of them)."""
        self.trail.record_many([self.entry(action, kind, item_id, summary, before, after), *also])

    @contextmanager
    def telling_what_changed(self, kind: str, item_id: str):
        """A refusal because the item changed is told with its last recorded change: what,
        by whom, from where and how long ago (one Query of the item's history, only then)."""
        try:
            yield
        except errors.Conflict as exc:
            try:
                last = self.trail.for_target(target(kind, item_id), limit=1).entries
            except errors.DynamoError:
                last = []
            if last:
                latest = last[0]
                moment = latest.moment
                when = f", {ago((now() - moment).total_seconds())} ago" if moment else ""
                exc.message = f"{exc.message} Last change: {latest.summary} ({latest.actor}, {latest.source}{when})."
                exc.args = (exc.message,)
            raise
