"""The call center's front door: agents becoming available, released or logged off,
and callers arriving. Matching, the waiting line and escalation are their own modules;
the design is in docs/architecture.md."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from queues_app.agents.availability import AgentTooBroad, Availability
from queues_app.agents.roster import Agents
from queues_app.agents.skills import SkillCatalog
from queues_app.calls.arrivals import Arrivals, call_request_digest
from queues_app.calls.offers import Handling
from queues_app.calls.records import QueueOrder
from queues_app.calls.store import Calls
from queues_app.centre.table import CallCenterTable, CallEvents, events_from_settings
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now
from queues_app.routing.escalation import EscalationPolicy, Escalator
from queues_app.routing.line import WaitingLine
from queues_app.routing.matching import Matcher
from queues_app.routing.queues import QueueInfo, list_queues, split_old_queues, spread_old_metadata

__all__ = ["AgentTooBroad", "CallCenter", "call_request_digest"]


class CallCenter(Availability, Arrivals, Handling):
    """Queues agents, matches callers to them, and keeps callers waiting in order.

    Its parts are public: `matcher` (assignments), `line` (the waiting callers),
    `calls` (call items), `escalator`, and `agents` (the roster)."""

    def __init__(
        self,
        db: Dynamo | None = None,
        catalog: SkillCatalog | None = None,
        *,
        default_order: str | None = None,
        candidate_limit: int = 16,
        spread: int = 16,
        max_rounds: int = 6,
        escalation: EscalationPolicy | None = None,
        clock: Callable[[], datetime] = now,
        events: CallEvents | None = None,
    ):
        self.db = db or default()
        self.catalog = catalog or SkillCatalog.from_settings()
        if default_order is None:
            from django.conf import settings

            default_order = getattr(settings, "SWITCHBOARD_AGENT_ORDER", QueueOrder.FIFO)
        self.default_order = default_order
        self.clock = clock
        self.writes = CallCenterTable(self.db, self.catalog, clock, events or events_from_settings(self.db))
        self.agents = Agents(self.db, self.catalog)
        self.calls = Calls(self.writes)
        self.line = WaitingLine(self.writes)
        self.matcher = Matcher(
            self.writes,
            self.agents,
            self.calls,
            self.line,
            candidate_limit=candidate_limit,
            spread=spread,
            max_rounds=max_rounds,
        )
        self.escalator = Escalator(self.writes, self.calls, self.line, self.matcher, escalation)

    def queues(self) -> list[QueueInfo]:
        """Every combination's metadata and its oldest agent."""
        return list_queues(self.writes)

    def move_old_layouts(self) -> dict[str, int]:
        """Items written by an earlier version, moved where this one reads them (each
        step idempotent): how many waiting callers, agents, queue metadata items and queue
        messages moved, how many copies of the waiting counts were written, and how many
        agents were given their partition of the status index."""
        return {
            "callers": self.line.move_old_line(),
            "waiting_counts": self.line.copy_counts(),
            "agents": self.agents.move_to_shards(),
            "queue_metadata": spread_old_metadata(self.writes),
            "queue_messages": split_old_queues(self.writes),
            "status_partitions": self.agents.add_status_partitions(),
        }
