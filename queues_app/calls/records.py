"""A call's record: the caller's preferences, where they wait, who took them and why, and
what an action on an agent or a call left (`Outcome`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from queues_app import steps
from queues_app.agents.records import Agent
from queues_app.centre import keys
from queues_app.ddb.clock import from_iso, now


class CallStatus:
    WAITING = "waiting"
    ASSIGNED = "assigned"
    ENDED = "ended"
    ABANDONED = "abandoned"  # the caller hung up while waiting (or while it rang)
    OVERFLOWED = "overflowed"  # ended unanswered past its line's limit (the line's overflow `end`)
    OFFERED = "offered"  # shown, not stored: assigned, while its agent's phone rings
    REFUSED = "refused"  # told, never stored: its line was closed or full (the `call.refused` event)
    # Queued callbacks (calls/queued_callbacks.py). Shown, not stored: a waiting call with a
    # number to call back, and one whose agent is reserved while the phone system dials.
    CALLBACK_WAITING = "callback_waiting"
    CALLBACK_DUE = "callback_due"
    CALLBACK_RETRY = "callback_retry"  # stored: not reached, out of line until `callback_retry_at`
    CALLBACK_SCHEDULED = "callback_scheduled"  # stored: enters the line at `callback_retry_at` (scheduled_callbacks)
    CALLBACK_FAILED = "callback_failed"  # stored: ended, not reached in its line's attempts

    ALL = (WAITING, ASSIGNED, ENDED, ABANDONED, OVERFLOWED, CALLBACK_RETRY, CALLBACK_SCHEDULED, CALLBACK_FAILED)


class QueueOrder:
    FIFO = "fifo"  # earliest-queued agent first (the article's default)
    LIFO = "lifo"  # most recently queued agent first (the article's Considerations)

    ALL = (FIFO, LIFO)


@dataclass
class Call:
    """A caller: preferences, where they wait, and who took them and why."""

    call_id: str
    status: str
    preferences: dict[str, str | None]
    priority: int = 0
    order: str = QueueOrder.FIFO
    arrived_at: str = ""
    version: int = 1
    agent_id: str | None = None
    agent_name: str | None = None
    assigned_at: str | None = None
    ended_at: str | None = None
    wait_sk: str | None = None
    relaxed: list[dict] = field(default_factory=list)  # [{"dimension", "from", "at"}]
    why: list[dict] = field(default_factory=list)  # candidates considered at assignment
    callback: str | None = None  # the API token whose callback hears of this call's changes
    end_then: str | None = None  # where the agent went when the call ended: queue, wrap_up or offline
    next_call_id: str | None = None  # the call the agent took on ending this one, if any
    request_digest: str | None = None  # the body of the request that created it under an idempotency key
    answered_at: str | None = None  # first answered: assigned, or the offer confirmed (ANSWER_TIMEOUT_SECONDS)
    offer_sk: str | None = None  # while an offered call waits for its agent to pick up (agents/handling.py)
    first_asked: dict | None = None  # the preferences it arrived with, once a transfer changed them
    legs: list[dict] = field(default_factory=list)  # [{agent_id, agent_name, from, to, how}] each agent's part
    # The line it arrived on (lines/); None for a call placed before lines, counted on none.
    line: str | None = None
    overflowed: list[dict] = field(default_factory=list)  # [{"from", "to" or "end", "at"}] each move past a limit
    end_reason: str | None = None  # ended with no agent: the overflow's reason the phone system is told
    aged_from: int | None = None  # the priority it arrived with, once its line's aging raised it
    steps: list[dict] = field(default_factory=list)  # routing steps: minimum levels as it waits (queues_app/steps.py)
    preferred_agent_id: str | None = None  # offered to this agent alone until `preferred_until`, if logged in
    preferred_until: str | None = None
    # A queued callback (calls/queued_callbacks.py): the number the caller is called back on
    # (E.164), when they asked, each dialling's result [{"result", "agent_id", "at"}], and,
    # between attempts, when it enters the line again.
    callback_number: str | None = None
    callback_requested_at: str | None = None
    callback_results: list[dict] = field(default_factory=list)
    callback_retry_at: str | None = None

    @property
    def matched_step(self) -> str | None:
        """The routing step its agent was chosen at, in words (None: no step was in play)."""
        number = self.why[0].get("step") if self.why else None
        if number is None or not self.steps:
            return None
        return steps.describe(self.steps, int(number) - 1 if int(number) > 0 else None)

    def prefers_at(self, moment: datetime) -> str | None:
        """The agent the caller is kept for at `moment`, if any (queues_app/steps.py)."""
        until = from_iso(self.preferred_until)
        return self.preferred_agent_id if self.preferred_agent_id and until and moment < until else None

    @property
    def asked_for(self) -> dict[str, str | None]:
        """The preferences the caller arrived with (before any was relaxed or transferred)."""
        if self.first_asked is not None:
            return {name: self.first_asked.get(name) for name in self.preferences}
        original = dict(self.preferences)
        for relaxed in reversed(self.relaxed):
            original[relaxed["dimension"]] = relaxed.get("from")
        return original

    @property
    def state(self) -> str:
        """The status as pages and the API show it: `offered` while the agent it was given
        to has not picked it up (ANSWER_TIMEOUT_SECONDS), else the stored status; for a
        queued callback, `callback_waiting` while it waits and `callback_due` while the phone
        system dials it with an agent reserved."""
        if self.callback_number and self.status == CallStatus.WAITING:
            return CallStatus.CALLBACK_WAITING
        if self.status == CallStatus.ASSIGNED and self.offer_sk:
            return CallStatus.CALLBACK_DUE if self.callback_number else CallStatus.OFFERED
        return self.status

    @property
    def answer_by(self) -> str | None:
        """While the call is offered: when the offer runs out."""
        return keys.offer_deadline(self.offer_sk) if self.offer_sk else None

    @property
    def waited_seconds(self) -> float | None:
        """From arrival to the first answer: a transfer adds nothing of its first agent's
        time, and ringing counts as waiting. Unanswered: until the caller hung up, or now."""
        start = from_iso(self.arrived_at)
        if start is None or self.status == CallStatus.CALLBACK_SCHEDULED:  # it has not arrived yet
            return None
        if self.answered_at:
            end = from_iso(self.answered_at)
        elif self.status in (CallStatus.ABANDONED, CallStatus.OVERFLOWED):
            end = from_iso(self.ended_at)
        elif self.assigned_at and self.offer_sk is None:
            end = from_iso(self.assigned_at)  # assigned before answers were kept: answered then
        else:
            end = None
        return ((end or now()) - start).total_seconds()


@dataclass
class Outcome:
    """What an action on an agent or a call left: the agent as it is now, the call it
    concerns (the one taken, ended or abandoned), and whether this answered a repeat of a
    request that had already taken effect (`replayed`: nothing changed this time).
    Reads as the pair `agent, call`, as these actions answered before they could be
    replayed."""

    agent: Agent | None = None
    call: Call | None = None
    replayed: bool = False

    def __iter__(self):
        return iter((self.agent, self.call))

    def __getitem__(self, index: int):
        return (self.agent, self.call)[index]

    def __len__(self) -> int:
        return 2
