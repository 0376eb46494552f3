"""The call centre's front door: its parts, each built once with what it needs and wired
together here, and the verbs pages, the API, the operations and the commands call. Each
verb is the method of the part that owns it; the design is in docs/architecture.md."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from queues_app.agents.availability import AgentTooBroad, Availability
from queues_app.agents.presence import Presence
from queues_app.agents.roster import Agents
from queues_app.agents.skills import SkillCatalog
from queues_app.calls.arrivals import Arrivals, call_request_digest
from queues_app.calls.endings import Endings
from queues_app.calls.offers import Offers
from queues_app.calls.queued_callbacks import QueuedCallbacks
from queues_app.calls.records import QueueOrder
from queues_app.calls.scheduled_callbacks import ScheduledCallbacks
from queues_app.calls.store import Calls
from queues_app.calls.transfers import Transfers
from queues_app.centre.table import (
    AgentEvents,
    CallCenterTable,
    CallEvents,
    agent_events_from_settings,
    events_from_settings,
)
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now
from queues_app.facades import Verb
from queues_app.lines.records import Defaults
from queues_app.lines.store import LineStore
from queues_app.routing.escalation import EscalationPolicy, Escalator
from queues_app.routing.line import WaitingLine
from queues_app.routing.matching import Matcher
from queues_app.routing.queues import QueueInfo, list_queues

__all__ = ["AgentTooBroad", "CallCenter", "call_request_digest"]


def default_order() -> str:
    """The order agents are taken in when a call does not say (SWITCHBOARD_AGENT_ORDER)."""
    from django.conf import settings

    return getattr(settings, "SWITCHBOARD_AGENT_ORDER", QueueOrder.FIFO)


class CallCenter:
    """Queues agents, matches callers to them, and keeps callers waiting in order.

    Its parts are public: `agents` (the roster), `calls` (call items), `line` (the waiting
    callers), `matcher`, `escalator`; and the changes: `availability` (agents joining and
    leaving the queues), `presence` (heartbeats), `arrivals` (callers arriving and hanging
    up), `endings`, `offers` and `transfers` (calls in progress), `callbacks` (callers
    called back at their turn) and `scheduled` (callbacks at a chosen time)."""

    # The verbs, each the method of the part that owns it.
    make_available = Verb("availability", Availability.make_available)
    enqueue = Verb("availability", Availability.enqueue)
    set_not_ready = Verb("availability", Availability.set_not_ready)
    cancel_next_status = Verb("availability", Availability.cancel_next_status)
    end_overdue_wrap_ups = Verb("availability", Availability.end_overdue_wrap_ups)
    heartbeat = Verb("presence", Presence.heartbeat)
    disconnect_absent = Verb("presence", Presence.disconnect_absent)
    log_off = Verb("availability", Availability.log_off)
    check_fits_in_a_transaction = Verb("availability", Availability.check_fits_in_a_transaction)
    create_call = Verb("arrivals", Arrivals.create_call)
    find_retry = Verb("arrivals", Arrivals.find_retry)
    abandon = Verb("arrivals", Arrivals.abandon)
    release = Verb("endings", Endings.release)
    end_call = Verb("endings", Endings.end_call)
    answered = Verb("offers", Offers.answered)
    miss_expired_offers = Verb("offers", Offers.miss_expired_offers)
    transfer = Verb("transfers", Transfers.transfer)
    request_callback = Verb("callbacks", QueuedCallbacks.request)
    callback_result = Verb("callbacks", QueuedCallbacks.result)
    enter_due_callbacks = Verb("callbacks", QueuedCallbacks.enter_due_retries)
    schedule_callback = Verb("scheduled", ScheduledCallbacks.schedule)
    move_callback = Verb("scheduled", ScheduledCallbacks.move)
    cancel_callback = Verb("scheduled", ScheduledCallbacks.cancel)
    upcoming_callbacks = Verb("scheduled", ScheduledCallbacks.upcoming)
    escalate = Verb("escalator", Escalator.escalate)
    get_call = Verb("calls", Calls.get)
    find_call = Verb("calls", Calls.find)

    def __init__(
        self,
        db: Dynamo | None = None,
        catalog: SkillCatalog | None = None,
        *,
        order: str | None = None,
        candidate_limit: int = 16,
        spread: int = 16,
        max_rounds: int = 6,
        escalation: EscalationPolicy | None = None,
        clock: Callable[[], datetime] = now,
        events: CallEvents | None = None,
        agent_events: AgentEvents | None = None,
    ):
        self.db = db or default()
        self.catalog = catalog or SkillCatalog.from_settings()
        self.table = CallCenterTable(
            self.db,
            self.catalog,
            clock,
            events or events_from_settings(self.db),
            agent_events or agent_events_from_settings(self.db),
        )
        self.agents = Agents(self.db, self.catalog)
        self.calls = Calls(self.table)
        self.line = WaitingLine(self.table)
        self.lines = LineStore(self.db, dimensions=dict(self.catalog.dimensions), defaults=Defaults.from_settings())
        self.matcher = Matcher(
            self.table,
            self.agents,
            self.calls,
            self.line,
            candidate_limit=candidate_limit,
            spread=spread,
            max_rounds=max_rounds,
        )
        self.escalator = Escalator(self.table, self.calls, self.line, self.matcher, escalation, self.lines)
        self.availability = Availability(self.table, self.agents, self.calls, self.matcher)
        self.arrivals = Arrivals(self.table, self.calls, self.line, self.matcher, order or default_order(), self.lines)
        self.endings = Endings(self.table, self.agents, self.calls, self.availability)
        self.offers = Offers(self.table, self.agents, self.calls, self.line, self.matcher)
        self.transfers = Transfers(self.table, self.agents, self.calls, self.line, self.matcher, self.availability)
        self.presence = Presence(self.table, self.agents, self.calls, self.availability, self.offers)
        self.callbacks = QueuedCallbacks(
            self.table, self.agents, self.calls, self.line, self.matcher, self.lines, self.offers, self.endings
        )
        self.scheduled = ScheduledCallbacks(self.table, self.calls, self.lines)

    @property
    def clock(self) -> Callable[[], datetime]:
        return self.table.clock

    def queues(self) -> list[QueueInfo]:
        """Every combination's metadata and its oldest agent."""
        return list_queues(self.table)
