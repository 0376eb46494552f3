"""A call in progress ended: by naming its agent (a release) or the call (the phone
system's hang-up); the agent then goes back to the queue, to wrap-up or offline. Only the
call named ends: sent again, the ending is answered as it was (ddb/replay.py)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from queues_app import event_names as named
from queues_app.agents.availability import Availability
from queues_app.agents.records import AFTER_CALL, Agent, AgentStatus, StatusChange
from queues_app.agents.roster import Agents
from queues_app.calls.records import Call, CallStatus, Outcome
from queues_app.calls.store import ENDED_CALL_RETENTION, Calls
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable, agent_changed, leg, status_clause
from queues_app.ddb import errors, replay
from queues_app.ddb.clock import to_iso
from queues_app.figures import facts
from queues_app.lines.store import wrap_up_limits, wrap_up_seconds, wrap_up_until

# What becomes of a call (the caller's, as its maker read it) that ends while it rings: its
# changes, given its agent, where the agent goes and the moment.
RangOut = Callable[[Agent, str, str], list[dict]]


class Endings:
    """Calls in progress ended. Given the table, the roster, the calls, and the agents'
    availability (an agent going back to the queue may take a waiting caller at once)."""

    def __init__(self, table: CallCenterTable, agents: Agents, calls: Calls, availability: Availability):
        self.table, self.agents, self.calls, self.availability = table, agents, calls, availability
        self.db = table.db

    def release(
        self, agent_id: str, then: str = "queue", *, call_id: str | None = None, read: Agent | None = None
    ) -> Outcome:
        """End the agent's call; then queue them again (at the back), or wrap-up, or offline.

        With `call_id` (the call the person or the phone system saw), only that call is
        ended: the same request sent again once it took effect is answered as it was (the
        call the agent took next, `replayed`), and a call that ended otherwise, or is not
        the agent's, is refused saying what happened. Without it (commands of our own),
        whatever call the agent is on ends. `read`: the agent as the caller has just read them
        (not read again; a change since fails the conditioned write, which reads them anew)."""
        if then not in AFTER_CALL:
            raise errors.InvalidRequest("After a call an agent goes to 'queue', 'wrap_up' or 'offline'.")
        agent = self.agents.get_unless_read(agent_id, read)
        if call_id is None:
            if agent.status not in AgentStatus.ON_A_CALL:
                raise errors.Conflict(f"{agent.name} is not on a call.", now={"agent": agent})
            call_id = agent.call_id
        for _attempt in range(3):  # the agent changed on the same call (a next status set): again
            if agent.status not in AgentStatus.ON_A_CALL or agent.call_id != call_id:
                return self._ended_or_stale(agent, call_id or "", then)
            ended = self._end(agent, call_id or "", then)
            if ended is not None:
                return ended
            agent = self.agents.get(agent_id)
        raise errors.Conflict(f"{agent.name} was being changed at the same moment; try again.")

    def _end(self, agent: Agent, call_id: str, then: str, ringing: RangOut | None = None) -> Outcome | None:
        """One try at ending the agent's call as read; None when the agent changed meanwhile
        (read them again). `ringing`: what becomes of a call that ends before it was
        picked up (abandoned, unless told otherwise)."""
        change = replay.change_id("end", call_id, then)
        stamp = to_iso(self.table.clock())
        next_status, reason = agent.after_call(then)
        wrapping_up = (next_status, then) == (AgentStatus.WRAP_UP, AgentStatus.WRAP_UP)  # not queued at once
        until = self._wrap_up_until(call_id) if wrapping_up else None
        after, values = status_clause(agent.agent_id, next_status, change, reason, wrap_up_until=until)
        actions = [
            self.table.agent_update(
                agent,
                f"SET {after}, version = version + :one, updated_at = :now REMOVE call_id",
                {**values, ":now": stamp},
            ),
        ]
        if call_id and agent.status == AgentStatus.RINGING:
            if ringing is not None:
                actions += ringing(agent, then, stamp)
            else:
                actions += self._rang_out(self.calls.get(call_id), agent, then, stamp)
        elif call_id:
            actions += self._call_ended(call_id, agent, then, stamp)
        actions += self.table.status_actions(StatusChange.of(agent, next_status, stamp, reason, call_id=call_id))
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled as exc:
            if exc.lost_race:
                raise agent_changed(agent, exc) from exc
            return None  # ended meanwhile (by a copy of this request, or otherwise) or changed: read again
        agent = agent.off_the_call(next_status, reason, stamp, change)  # the agent given is left as read
        if then == "queue" and next_status == AgentStatus.WRAP_UP:
            return self.availability.take_or_queue(agent, change, after_call=call_id)
        return Outcome(agent)

    def end_ringing(self, agent: Agent, call_id: str, then: str, ringing: RangOut) -> Outcome | None:
        """The agent's ringing call ends as `ringing` says (a queued callback not reached),
        the agent going `then`; None when the agent changed meanwhile (read them again)."""
        return self._end(agent, call_id, then, ringing)

    def _wrap_up_until(self, call_id: str) -> str | None:
        """When a wrap-up after this call ends by itself (its line's `wrap_up_seconds`, else
        WRAP_UP_SECONDS), or None: it lasts until the agent is made available. The call is
        read for its line only when some line sets its own."""
        if wrap_up_seconds(self.db) is None:
            return None
        call = self.calls.find(call_id) if wrap_up_limits(self.db) else None
        return wrap_up_until(self.db, call.line if call else None, self.table.clock())

    def _call_ended(self, call_id: str, agent: Agent, then: str, stamp: str) -> list[dict]:
        """The call ended, on condition that it is still this agent's (with the agent's
        part as its last leg and where they went), and the fact that it ended."""
        ended = self.table.update(
            keys.call(call_id),
            "SET #status = :ended, ended_at = :now, expires_at = :expires, end_then = :then, "
            "legs = list_append(if_not_exists(legs, :none), :leg), version = version + :one "
            "REMOVE offer_sk",
            {
                ":ended": CallStatus.ENDED,
                ":now": stamp,
                ":one": 1,
                ":then": then,
                ":none": [],
                ":leg": [leg(agent, stamp, "ended")],
                ":assigned": CallStatus.ASSIGNED,
                ":agent": agent.agent_id,
                ":expires": int((self.table.clock() + ENDED_CALL_RETENTION).timestamp()),
            },
            condition="#status = :assigned AND agent_id = :agent",
        )
        return [ended, self.table.ended_fact_action(call_id, stamp)]

    def _rang_out(self, call: Call, agent: Agent, then: str, stamp: str) -> list[dict]:
        """A call that ends while it rings (the caller hung up before the agent picked up):
        abandoned, as a caller who hangs up while waiting is (its wait counted to now),
        with the agent's part as its last leg (`rang`); its offer withdrawn."""
        part = leg(dataclasses.replace(agent, status_since=call.assigned_at), stamp, "rang")
        left = dataclasses.replace(call, status=CallStatus.ABANDONED, ended_at=stamp, agent_id=None, offer_sk=None)
        left.legs = [*call.legs, part]
        return [
            self.table.update(
                keys.call(call.call_id),
                "SET #status = :abandoned, ended_at = :now, expires_at = :expires, end_then = :then, "
                "legs = list_append(if_not_exists(legs, :none), :leg), version = version + :one "
                "REMOVE offer_sk, agent_id, agent_name",
                {
                    ":abandoned": CallStatus.ABANDONED,
                    ":now": stamp,
                    ":expires": int((self.table.clock() + ENDED_CALL_RETENTION).timestamp()),
                    ":then": then,
                    ":none": [],
                    ":leg": [part],
                    ":one": 1,
                    ":assigned": CallStatus.ASSIGNED,
                    ":agent": agent.agent_id,
                    ":offer": call.offer_sk,
                },
                condition="#status = :assigned AND agent_id = :agent AND offer_sk = :offer",
            ),
            self.table.offer_gone(call),
            *self.table.event_actions(named.CALL_ABANDONED, left),
            self.table.fact_action(facts.ABANDONED, left, stamp),
        ]

    def _ended_or_stale(self, agent: Agent, call_id: str, then: str) -> Outcome:
        """A release naming a call the agent is not on: the call ended by this very request
        (answered as it was: the agent now, and the call they took next), or a refusal
        saying what became of the call and what the agent is doing now."""
        call = self.calls.find(call_id)
        if call is None:
            raise errors.NotFound(f"No call with id {call_id!r}.")
        now = {"agent": agent, "call": call}
        last = call.legs[-1] if call.legs else {}
        if call.status == CallStatus.ABANDONED and last.get("how") == "rang" and last.get("agent_id") == agent.agent_id:
            if call.end_then == then:  # ended while it rang, by this very request
                return Outcome(agent, replayed=True)
            raise errors.Conflict(
                f"Call {call_id} already ended while it rang; {agent.name} is {agent.doing} now.", now=now
            )
        if call.agent_id != agent.agent_id:
            whose = f"it is {call.agent_name}'s" if call.agent_id else f"it is {call.status}"
            raise errors.Conflict(f"Call {call_id} is not {agent.name}'s call: {whose}.", now=now)
        if call.status == CallStatus.ENDED and call.end_then == then:
            taken = self.calls.find(call.next_call_id) if call.next_call_id else None
            return Outcome(agent, taken, replayed=True)
        if call.status == CallStatus.ENDED:
            went = f" ({agent.name} went {AFTER_CALL[call.end_then]})" if call.end_then in AFTER_CALL else ""
            raise errors.Conflict(f"Call {call_id} already ended{went}; {agent.name} is {agent.doing} now.", now=now)
        raise errors.Conflict(f"Call {call_id} is {call.status}; {agent.name} is {agent.doing} now.", now=now)

    def end_call(self, call_id: str, then: str = "queue") -> Outcome:
        """End a call in progress by naming it (the phone system's hang-up): its agent then
        goes back to the queue, to wrap-up or offline, as `release` with the call named."""
        call = self.calls.get(call_id)
        if call.status == CallStatus.WAITING:
            raise errors.Conflict(
                f"Call {call_id} is still waiting for an agent: a caller who hangs up while waiting is abandoned.",
                now={"call": call},
            )
        last = call.legs[-1] if call.legs else {}
        if call.status == CallStatus.ABANDONED and last.get("how") == "rang":
            return self.release(last.get("agent_id") or "", then, call_id=call_id)  # sent again: as it was
        if call.status == CallStatus.ABANDONED or not call.agent_id:
            raise errors.Conflict(f"Call {call_id} was abandoned while waiting; no agent took it.", now={"call": call})
        return self.release(call.agent_id, then, call_id=call_id)
