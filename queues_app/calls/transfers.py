"""A call in progress handed on: the agent's part ends (`then`, as for ending a call) and
the call goes back in line at its original place with new preferences, or to a named
queued agent. The call's record keeps each agent's part (`legs`)."""

from __future__ import annotations

from dataclasses import dataclass

from queues_app import event_names as named
from queues_app.agents.availability import Availability
from queues_app.agents.records import AFTER_CALL, Agent, AgentStatus, StatusChange
from queues_app.agents.roster import Agents
from queues_app.agents.skills import validate_preferences
from queues_app.calls.records import Call, CallStatus, Outcome
from queues_app.calls.store import Calls
from queues_app.centre.table import CallCenterTable, agent_changed, status_clause
from queues_app.ddb import errors, replay
from queues_app.ddb.clock import to_iso
from queues_app.lines.store import wrap_up_until
from queues_app.routing.line import WaitingLine
from queues_app.routing.matching import Matcher


@dataclass(frozen=True)
class Transfer:
    """A call in progress to hand on: to new `preferences` (at its place in line) or to the
    queued agent `agent_id`, its agent then going `then` (as after ending a call).
    `from_agent_id` is the agent the request saw on the call, so that a retry is answered
    as done and a stale request changes nothing."""

    call_id: str
    preferences: dict | None = None
    agent_id: str | None = None
    then: str = "queue"
    from_agent_id: str | None = None

    def __post_init__(self) -> None:
        if self.then not in AFTER_CALL:
            raise errors.InvalidRequest("After a call an agent goes to 'queue', 'wrap_up' or 'offline'.")
        if (self.preferences is None) == (self.agent_id is None):
            raise errors.InvalidRequest("Transfer to new preferences or to a named agent, not both.")


class Transfers:
    """Calls in progress handed on. Given the table, the roster, the calls, the waiting
    line, the matcher and the agents' availability (the agent handing on may go back to
    the queue and take a caller)."""

    def __init__(
        self,
        table: CallCenterTable,
        agents: Agents,
        calls: Calls,
        line: WaitingLine,
        matcher: Matcher,
        availability: Availability,
    ):
        self.table, self.agents, self.calls, self.line = table, agents, calls, line
        self.matcher, self.availability = matcher, availability
        self.catalog = table.catalog

    def transfer(self, request: Transfer) -> Outcome:
        """End the agent's part in the call (then `request.then`, as ending a call) and give
        the call, at its original place (priority and arrival), to an agent who fits the
        new preferences, or to the queued agent named; with nobody free it waits. Returns
        the agent who handed it on and the call as it is after.

        With `from_agent_id` (the agent the person or the phone system saw on the call),
        only that agent's part is handed on: the same request sent again once it took
        effect is answered as done (`replayed`), and a call that has moved on otherwise is
        refused saying where it is, so a retry never transfers the call a second time."""
        call = self.calls.get(request.call_id)
        wanted = validate_preferences(self.catalog, request.preferences) if request.preferences is not None else None
        if request.from_agent_id is not None and call.agent_id != request.from_agent_id:
            return self._transferred_or_stale(call, request.from_agent_id, wanted, request.agent_id)
        agent, target = self._parties(call, request.agent_id)
        back, freed = self._hand_on(call, agent, wanted, request.then)
        taken = self.matcher.assign_to_queued(back, target) if target else self.matcher.match(back, new_call=False)
        if request.then == "queue" and freed.status == AgentStatus.WRAP_UP:  # not when their next status is set
            freed = self.availability.take_or_queue(freed, freed.change or "").agent or freed
        return Outcome(freed, taken or self.calls.get(call.call_id))

    def _parties(self, call: Call, agent_id: str | None) -> tuple[Agent, Agent | None]:
        """The agent on the call, and the queued agent it goes to (when one is named)."""
        if call.status != CallStatus.ASSIGNED or not call.agent_id:
            raise errors.Conflict(f"Call {call.call_id} is {call.status}: only a call in progress is transferred.")
        if call.offer_sk is not None:
            raise errors.Conflict(f"Call {call.call_id} has not been picked up yet: it cannot be transferred.")
        agent = self.agents.get(call.agent_id)
        if agent_id is None:
            return agent, None
        target = self.agents.get(agent_id)
        if target.agent_id == agent.agent_id:
            raise errors.InvalidRequest(f"{agent.name} is the agent on the call already.")
        if target.status != AgentStatus.QUEUED or not target.queue_token:
            raise errors.Conflict(f"{target.name} is {target.doing}: a call is transferred to a queued agent.")
        return agent, target

    def _hand_on(self, call: Call, agent: Agent, wanted: dict | None, then: str) -> tuple[Call, Agent]:
        """One transaction: the agent's part ended (to wrap-up or offline; the queue comes
        after), the call back in line. Returns the call as it waits and the agent freed."""
        stamp = to_iso(self.table.clock())
        back = self.line.back_in_line(call, stamp, "transferred", agent, preferences=wanted)
        change = replay.change_id("transfer", call.call_id)
        next_status, reason = agent.after_call(then)
        wrapping_up = (next_status, then) == (AgentStatus.WRAP_UP, AgentStatus.WRAP_UP)  # not queued at once
        until = wrap_up_until(self.table.db, call.line, self.table.clock()) if wrapping_up else None
        after, values = status_clause(agent.agent_id, next_status, change, reason, wrap_up_until=until)
        try:
            self.table.transact(
                [
                    self.table.agent_update(
                        agent,
                        f"SET {after}, version = version + :one, updated_at = :now REMOVE call_id",
                        {**values, ":now": stamp},
                    ),
                    *self.line.return_actions(call, back, condition_offer=False),
                    *self.table.event_actions(named.CALL_TRANSFERRED, back),
                    *self.table.status_actions(StatusChange.of(agent, next_status, stamp, reason)),
                ]
            )
        except errors.TransactionCancelled as exc:
            raise agent_changed(agent, exc) from exc
        return back, agent.off_the_call(next_status, reason, stamp, change)

    def _transferred_or_stale(
        self, call: Call, from_agent_id: str, preferences: dict | None, agent_id: str | None
    ) -> Outcome:
        """A transfer naming an agent no longer on the call: handed on by that agent, to
        where this request asks (this very request, sent again: answered as done), or
        refused saying where the call is, and whether the agent named was ever on it."""
        last = call.legs[-1] if call.legs else {}
        handed_on = last.get("agent_id") == from_agent_id and last.get("how") == "transferred"
        same = call.agent_id == agent_id if agent_id is not None else call.preferences == preferences
        if handed_on and same:
            return Outcome(self.agents.get(from_agent_id), call, replayed=True)
        where = f"with {call.agent_name}" if call.agent_id else call.status
        if not any(leg.get("agent_id") == from_agent_id for leg in call.legs):
            raise errors.Conflict(
                f"Agent {from_agent_id!r} was never on call {call.call_id}: it is {where}; nothing was transferred.",
                now={"call": call},
            )
        raise errors.Conflict(
            f"Call {call.call_id} is no longer with the agent named: it is {where} now.", now={"call": call}
        )
