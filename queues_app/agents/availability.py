"""Agents' side of the call center: an agent made available (taking the longest-waiting
caller they fit, or queued), a call ended (by naming it), an agent logged off. Each change
is made from the state the request names (ddb/replay.py)."""

from __future__ import annotations

import dataclasses

from queues_app.agents.records import AFTER_CALL, Agent, AgentStatus
from queues_app.calls.records import CallStatus, Outcome
from queues_app.calls.store import ENDED_CALL_RETENTION
from queues_app.centre import keys
from queues_app.centre.parts import Parts
from queues_app.centre.table import agent_changed, leg, stale, status_clause
from queues_app.ddb import errors, replay
from queues_app.ddb.clock import to_iso
from queues_app.ddb.codec import marshal
from queues_app.figures import counters

MAX_TRANSACTION_ACTIONS = 100  # DynamoDB's limit per TransactWriteItems
# An assignment writes the agent, one delete and one metadata update per combination,
# the call and the waiting-caller item.
ASSIGNMENT_OVERHEAD = 3


class AgentTooBroad(errors.InvalidRequest):
    """The agent fits more queue combinations than one transaction can hold."""


class Availability(Parts):
    def check_fits_in_a_transaction(self, skills: dict[str, list[str]]) -> int:
        combos = len(self.catalog.combinations(skills))
        actions = 2 * combos + ASSIGNMENT_OVERHEAD
        if actions > MAX_TRANSACTION_ACTIONS:
            raise AgentTooBroad(
                f"This agent fits {combos} skill combinations; assigning them would take {actions} "
                f"actions in one DynamoDB transaction, over its limit of {MAX_TRANSACTION_ACTIONS}. "
                "Give the agent fewer skills, or split a skill dimension."
            )
        return combos

    def make_available(self, agent_id: str, *, expected_version: int | None = None) -> Outcome:
        """Give the agent the longest-waiting caller they fit, or queue them.

        Returns the agent as it is now and the call they took, if any. With
        `expected_version` (the version the person or the phone system saw), the change
        is made only from that version: the same request sent again once it took effect
        is answered as done (`replayed`), any other change since is refused saying what it
        was. An agent who is queued or attending already gets a Conflict, never a second
        set of messages.
        """
        agent = self.agents.get(agent_id)
        change = replay.change_id("available", agent.version if expected_version is None else expected_version)
        if expected_version is not None and agent.version != expected_version:
            return self._done_or_stale(agent, change, expected_version)
        self._check_can_queue(agent)
        self.check_fits_in_a_transaction(agent.skills)
        try:
            return self._make_available(agent, change)
        except errors.Conflict:
            if expected_version is None:
                raise
            # A copy of this request sent at the same moment may have made the change.
            return self._done_or_stale(self.agents.get(agent_id), change, expected_version)

    def _make_available(self, agent: Agent, change: str, after_call: str | None = None) -> Outcome:
        call = self.matcher.offer_waiting_callers(agent, from_queue=False, change=change, after_call=after_call)
        if call:
            counters.note(self.db, counters.CALLS, "completed")
            # The assignment changed exactly these fields of the agent as read.
            taken = dataclasses.replace(
                agent,
                status=AgentStatus.ATTENDING,
                call_id=call.call_id,
                version=agent.version + 1,
                updated_at=call.assigned_at or agent.updated_at,
                queue_token=None,
                change=change,
                reason=None,
                status_since=call.assigned_at or agent.status_since,
            )
            return Outcome(taken, call)

        agent = self.enqueue(agent, change)
        # Look once more: a caller may have started waiting while we queued.
        call = self.matcher.offer_waiting_callers(agent, from_queue=True, change=change, after_call=after_call)
        if call:
            counters.note(self.db, counters.CALLS, "completed")
            return Outcome(self.agents.get(agent.agent_id), call)
        return Outcome(agent)

    def _done_or_stale(self, agent: Agent, change: str, seen_version: int) -> Outcome:
        """An agent no longer at the version a request names: done by that very request
        (answered as it was, with the call they are on), or refused as stale."""
        if agent.change != change:
            raise stale(agent, seen_version)
        call = self.calls.find(agent.call_id) if agent.call_id and agent.status == AgentStatus.ATTENDING else None
        return Outcome(agent, call, replayed=True)

    @staticmethod
    def _check_can_queue(agent: Agent) -> None:
        if agent.status == AgentStatus.QUEUED:
            raise errors.Conflict(f"{agent.name} is already queued.", now={"agent": agent})
        if agent.status == AgentStatus.ATTENDING:
            raise errors.Conflict(
                f"{agent.name} is attending call {agent.call_id}; release the call first.", now={"agent": agent}
            )

    def enqueue(self, agent: Agent, change: str | None = None) -> Agent:
        stamp = to_iso(self.clock())
        token = keys.queue_token(stamp, agent.agent_id)
        combos = self.catalog.combinations(agent.skills)
        change = change or replay.change_id("available", agent.version)
        queued, values = status_clause(agent.agent_id, AgentStatus.QUEUED, change)
        actions = [
            self.writes.agent_update(
                agent,
                f"SET {queued}, queued_at = :now, queue_token = :token, "
                "version = version + :one, updated_at = :now REMOVE call_id",
                {**values, ":now": stamp, ":token": token},
            )
        ]
        message = {"type": "message", "agent_id": agent.agent_id, "name": agent.name, "skills": agent.skills}
        for combo in combos:
            actions.append(
                {
                    "Put": {
                        "TableName": self.table_name,
                        "Item": marshal({**keys.queue_message(combo, token), **message}),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            )
            actions.append(self.writes.meta_update(combo, +1))
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled as exc:
            raise agent_changed(agent, exc) from exc
        agent.status, agent.queued_at, agent.queue_token = AgentStatus.QUEUED, stamp, token
        agent.reason, agent.status_since = None, stamp
        agent.version += 1
        agent.call_id = None
        agent.change, agent.updated_at = change, stamp
        return agent

    def release(self, agent_id: str, then: str = "queue", *, call_id: str | None = None) -> Outcome:
        """End the agent's call; then queue them again (at the back), or wrap-up, or offline.

        With `call_id` (the call the person or the phone system saw), only that call is
        ended: the same request sent again once it took effect is answered as it was (the
        call the agent took next, `replayed`), and a call that ended otherwise, or is not
        the agent's, is refused saying what happened. Without it (commands of our own),
        whatever call the agent is on ends."""
        if then not in AFTER_CALL:
            raise errors.InvalidRequest("After a call an agent goes to 'queue', 'wrap_up' or 'offline'.")
        agent = self.agents.get(agent_id)
        if call_id is None:
            if agent.status != AgentStatus.ATTENDING:
                raise errors.Conflict(f"{agent.name} is not attending a call.", now={"agent": agent})
            call_id = agent.call_id
        elif agent.status != AgentStatus.ATTENDING or agent.call_id != call_id:
            return self._ended_or_stale(agent, call_id, then)
        change = replay.change_id("end", call_id or "", then)
        stamp = to_iso(self.clock())
        next_status = AgentStatus.OFFLINE if then == AgentStatus.OFFLINE else AgentStatus.WRAP_UP
        after, values = status_clause(agent.agent_id, next_status, change)
        actions = [
            self.writes.agent_update(
                agent,
                f"SET {after}, version = version + :one, updated_at = :now REMOVE call_id",
                {**values, ":now": stamp},
            )
        ]
        if call_id:
            actions.append(
                self.writes.update(
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
                        ":expires": int((self.clock() + ENDED_CALL_RETENTION).timestamp()),
                    },
                    condition="#status = :assigned AND agent_id = :agent",
                )
            )
            actions.append(self.writes.ended_fact_action(call_id, stamp))
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled as exc:
            now = self.agents.get(agent_id)
            if call_id and (now.status != AgentStatus.ATTENDING or now.call_id != call_id):
                # Ended meanwhile: by a copy of this request (answered as done), or otherwise.
                return self._ended_or_stale(now, call_id, then)
            raise agent_changed(agent, exc) from exc
        agent.status, agent.call_id, agent.change, agent.updated_at = next_status, None, change, stamp
        agent.reason, agent.status_since = None, stamp
        agent.version += 1
        if then == "queue":
            return self._make_available(agent, change, after_call=call_id)
        return Outcome(agent)

    def _ended_or_stale(self, agent: Agent, call_id: str, then: str) -> Outcome:
        """A release naming a call the agent is not on: the call ended by this very request
        (answered as it was: the agent now, and the call they took next), or a refusal
        saying what became of the call and what the agent is doing now."""
        call = self.calls.find(call_id)
        if call is None:
            raise errors.NotFound(f"No call with id {call_id!r}.")
        now = {"agent": agent, "call": call}
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
        if call.status == CallStatus.ABANDONED or not call.agent_id:
            raise errors.Conflict(f"Call {call_id} was abandoned while waiting; no agent took it.", now={"call": call})
        return self.release(call.agent_id, then, call_id=call_id)

    def log_off(self, agent_id: str, *, expected_version: int | None = None) -> Outcome:
        """Take the agent out of every queue at once and mark them offline. With
        `expected_version`, only from that version (as `make_available`), and an agent
        offline already at that version is refused like one queued already is."""
        return self._step_away(agent_id, AgentStatus.OFFLINE, None, expected_version)

    def set_not_ready(self, agent_id: str, reason: str, *, expected_version: int | None = None) -> Outcome:
        """The agent stays logged in but takes no call, for `reason` (a break, lunch...):
        out of every queue at once, as logging off is. From offline it logs them in not
        ready; not ready already, it changes the reason. An agent on a call is refused:
        the call is ended first (release), then the agent is set not ready."""
        if not reason:
            raise errors.InvalidRequest("Say why the agent is not ready.")
        return self._step_away(agent_id, AgentStatus.NOT_READY, reason, expected_version)

    def _step_away(self, agent_id: str, status: str, reason: str | None, expected_version: int | None) -> Outcome:
        agent = self.agents.get(agent_id)
        verb = "offline" if status == AgentStatus.OFFLINE else f"not-ready:{reason}"
        change = replay.change_id(verb, agent.version if expected_version is None else expected_version)
        if expected_version is not None and agent.version != expected_version:
            return self._done_or_stale(agent, change, expected_version)
        if agent.status == status and agent.reason == reason:
            if expected_version is None:
                return Outcome(agent)
            raise errors.Conflict(f"{agent.name} is already {agent.doing}.", now={"agent": agent})
        if agent.status == AgentStatus.ATTENDING:
            raise errors.Conflict(
                f"{agent.name} is attending call {agent.call_id}; release the call first.", now={"agent": agent}
            )
        stamp = to_iso(self.clock())
        away, values = status_clause(agent.agent_id, status, change, reason)
        actions = [
            self.writes.agent_update(
                agent,
                f"SET {away}, version = version + :one, updated_at = :now REMOVE queue_token, call_id",
                {**values, ":now": stamp},
            )
        ]
        if agent.status == AgentStatus.QUEUED and agent.queue_token:
            actions += self.writes.dequeue_actions(agent.skills, agent.queue_token)
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled as exc:
            if expected_version is not None:
                return self._done_or_stale(self.agents.get(agent_id), change, expected_version)
            raise agent_changed(agent, exc) from exc
        return Outcome(self.agents.get(agent_id))
