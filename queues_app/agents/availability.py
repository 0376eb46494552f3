"""An agent's availability: made available (taking the longest-waiting caller they fit, or
queued), set not ready with a reason, logged off. Each change is made from the state the
request names (ddb/replay.py)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from queues_app.agents.records import DISCONNECTED, Agent, AgentStatus, StatusChange
from queues_app.agents.roster import Agents
from queues_app.agents.skills import combination_levels
from queues_app.calls.records import Outcome
from queues_app.calls.store import Calls
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable, agent_changed, stale, status_clause, unless_seen_since
from queues_app.ddb import errors, replay
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.codec import marshal
from queues_app.event_names import AGENT_DISCONNECTED
from queues_app.figures import counters
from queues_app.lines.store import wrap_up_seconds
from queues_app.routing.matching import Matcher
from queues_app.routing.returning import ComingBack

WRAP_UP_READ_CAP = 500  # agents past the shortest wrap-up limit read per pass
MAX_TRANSACTION_ACTIONS = 100  # DynamoDB's limit per TransactWriteItems
# An assignment writes the agent and one delete and one metadata update per combination;
# for a waiting caller, the call, their place in line and its two count copies, the call's
# event, its answer's (or offer's) fact, and the ended call that records it took this one;
# the agent's change of status, its fact and an agent event for one listening callback.
ASSIGNMENT_OVERHEAD = 10


class AgentTooBroad(errors.InvalidRequest):
    """The agent fits more queue combinations than one transaction can hold."""


class Availability:
    """Agents joining the queues and leaving them. Given the table, the roster, the calls
    (to answer a repeated request with the call it gave) and the matcher (an agent coming
    back takes a waiting caller before queueing)."""

    def __init__(self, table: CallCenterTable, agents: Agents, calls: Calls, matcher: Matcher):
        self.table, self.agents, self.calls, self.matcher = table, agents, calls, matcher
        self.coming_back = ComingBack(matcher)
        self.db, self.catalog = table.db, table.catalog

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

    def make_available(
        self, agent_id: str, *, expected_version: int | None = None, read: Agent | None = None
    ) -> Outcome:
        """Give the agent the longest-waiting caller they fit, or queue them.

        Returns the agent as it is now and the call they took, if any. With
        `expected_version` (the version the person or the phone system saw), the change
        is made only from that version: the same request sent again once it took effect
        is answered as done (`replayed`), any other change since is refused saying what it
        was. An agent who is queued or attending already gets a Conflict, never a second
        set of messages. `read`: the agent as the caller has just read them (not read again).
        """
        agent = self.agents.get_unless_read(agent_id, read)
        change = replay.change_id("available", agent.version if expected_version is None else expected_version)
        if expected_version is not None and agent.version != expected_version:
            return self._done_or_stale(agent, change, expected_version)
        self._check_can_queue(agent)
        self.check_fits_in_a_transaction(agent.skills)
        try:
            return self.take_or_queue(agent, change)
        except errors.Conflict:
            if expected_version is None:
                if read is not None:  # changed since the caller read them: decided on them as they are
                    return self.make_available(agent_id)
                raise
            # A copy of this request sent at the same moment may have made the change.
            return self._done_or_stale(self.agents.get(agent_id), change, expected_version)

    def end_overdue_wrap_ups(self, cap: int = WRAP_UP_READ_CAP) -> list[Outcome]:
        """Make available every agent whose wrap-up has lasted its limit (`wrap_up_until`,
        or WRAP_UP_SECONDS from `status_since` for a wrap-up begun before the limit was
        set), each from the version read: exactly once, whoever else makes them available
        at the same moment (the same change: the other is answered as done). Costs nothing
        when no limit is set; else the wrap-up agents' index partitions and one
        BatchGetItem of those past the shortest limit. Returns what this pass did."""
        shortest = wrap_up_seconds(self.db)
        if shortest is None:
            return []
        moment = self.table.clock()
        oldest = to_iso(moment - timedelta(seconds=shortest))
        due = self.agents.ids_where(AgentStatus.WRAP_UP, lambda a: (a.status_since or "") <= oldest, cap)
        default = wrap_up_seconds(self.db, "")
        done = []
        for agent in self.agents.get_many(due):
            since = from_iso(agent.status_since)
            until = agent.wrap_up_until or (to_iso(since + timedelta(seconds=default)) if since and default else None)
            if agent.status != AgentStatus.WRAP_UP or not until or until > to_iso(moment):
                continue
            try:
                outcome = self.make_available(agent.agent_id, expected_version=agent.version)
            except (errors.Conflict, errors.InvalidRequest):
                continue  # made available, or changed, meanwhile
            if not outcome.replayed:
                done.append(outcome)
        return done

    def take_or_queue(self, agent: Agent, change: str, after_call: str | None = None) -> Outcome:
        call = self.coming_back.offer_waiting_callers(agent, from_queue=False, change=change, after_call=after_call)
        if call:
            counters.note(self.db, counters.CALLS, "completed")
            # The assignment changed exactly these fields of the agent as read.
            taken = dataclasses.replace(
                agent,
                status=AgentStatus.RINGING if call.offer_sk else AgentStatus.ATTENDING,
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
        call = self.coming_back.offer_waiting_callers(agent, from_queue=True, change=change, after_call=after_call)
        if call:
            counters.note(self.db, counters.CALLS, "completed")
            return Outcome(self.agents.get(agent.agent_id), call)
        return Outcome(agent)

    def _done_or_stale(self, agent: Agent, change: str, seen_version: int) -> Outcome:
        """An agent no longer at the version a request names: done by that very request
        (answered as it was, with the call they are on), or refused as stale."""
        if agent.change != change:
            raise stale(agent, seen_version)
        call = self.calls.find(agent.call_id) if agent.call_id and agent.status in AgentStatus.ON_A_CALL else None
        return Outcome(agent, call, replayed=True)

    @staticmethod
    def _check_can_queue(agent: Agent) -> None:
        if agent.status == AgentStatus.QUEUED:
            raise errors.Conflict(f"{agent.name} is already queued.", now={"agent": agent})
        on_a_call(agent)

    def enqueue(self, agent: Agent, change: str | None = None) -> Agent:
        """Queue the agent in every combination they fit (one transaction), as they are."""
        stamp = to_iso(self.table.clock())
        token = keys.queue_token(stamp, agent.agent_id)
        combos = self.catalog.combinations(agent.skills)
        change = change or replay.change_id("available", agent.version)
        queued, values = status_clause(agent.agent_id, AgentStatus.QUEUED, change)
        actions = [
            self.table.agent_update(
                agent,
                f"SET {queued}, queued_at = :now, queue_token = :token, "
                "version = version + :one, updated_at = :now REMOVE call_id",
                {**values, ":now": stamp, ":token": token},
            )
        ]
        actions += self.table.status_actions(StatusChange.of(agent, AgentStatus.QUEUED, stamp))
        # `v`: the agent's version while queued with this token (nothing but a change of
        # status, which takes the token away, writes a queued agent), for the matcher's event.
        message = {
            "type": "message",
            "agent_id": agent.agent_id,
            "name": agent.name,
            "skills": agent.skills,
            "v": agent.version + 1,
        }
        # The lines they serve, for a new caller's matching: their profile's name (its lines
        # read as routing reads them), or their own lines with each one's delay.
        if agent.profile:
            message["pf"] = agent.profile
        elif agent.lines:
            message["ln"] = {line_id: terms.delay_seconds for line_id, terms in agent.lines.items()}
        for combo in combos:
            # The agent's levels in this combination, for routing steps (`lv`, levels above 1).
            levels = combination_levels(self.catalog, agent.levels, combo)
            item = {**keys.queue_message(combo, token), **message, **({"lv": levels} if levels else {})}
            actions.append(
                {
                    "Put": {
                        "TableName": self.table.name,
                        "Item": marshal(item),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                }
            )
            actions.append(self.table.meta_update(combo, +1))
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled as exc:
            raise agent_changed(agent, exc) from exc
        return agent.queued_as(stamp, token, change)

    def log_off(self, agent_id: str, *, expected_version: int | None = None) -> Outcome:
        """Take the agent out of every queue at once and mark them offline. With
        `expected_version`, only from that version (as `make_available`), and an agent
        offline already at that version is refused like one queued already is."""
        return self._step_away(agent_id, AgentStatus.OFFLINE, None, expected_version)

    def set_not_ready(self, agent_id: str, reason: str, *, expected_version: int | None = None) -> Outcome:
        """The agent stays logged in but takes no call, for `reason` (a break, lunch...):
        out of every queue at once, as logging off is. From offline it logs them in not
        ready; not ready already, it changes the reason. An agent on a call (ringing or
        attending) keeps it: not ready becomes their next status, applied when the call
        ends (`next_status`; `cancel_next_status` takes it back)."""
        if not reason:
            raise errors.InvalidRequest("Say why the agent is not ready.")
        agent = self.agents.get(agent_id)
        if agent.status in AgentStatus.ON_A_CALL:
            return self._next_status(agent, reason, expected_version)
        return self._step_away(agent_id, AgentStatus.NOT_READY, reason, expected_version)

    def _next_status(self, agent: Agent, reason: str | None, expected_version: int | None) -> Outcome:
        """Set (or, with no reason, cancel) the status the agent goes to when their call
        ends, from the version read, while they are on that call."""
        seen = agent.version if expected_version is None else expected_version
        change = replay.change_id(f"next:{reason or ''}", seen)
        if agent.version != seen or agent.status not in AgentStatus.ON_A_CALL:
            if agent.change == change:
                return Outcome(agent, replayed=True)
            if agent.version != seen:
                raise stale(agent, seen)
            raise errors.Conflict(f"{agent.name} is not on a call: {agent.doing}.", now={"agent": agent})
        status = AgentStatus.NOT_READY if reason else ""  # empty: none (as `reason` is stored)
        update = self.table.agent_update(
            agent,
            "SET next_status = :next, next_reason = :reason, change = :change, version = version + :one, "
            "updated_at = :now",
            {":next": status, ":reason": reason or "", ":change": change, ":now": to_iso(self.table.clock())},
        )
        try:
            self.table.transact([update])
        except errors.TransactionCancelled as exc:
            now = self.agents.get(agent.agent_id)
            if now.change == change:
                return Outcome(now, replayed=True)
            raise stale(now, seen) if now.version != seen else agent_changed(agent, exc) from exc
        # As this change left them (their call may end the next moment and spend it).
        return Outcome(
            dataclasses.replace(
                agent, next_status=status or None, next_reason=reason, version=agent.version + 1, change=change
            )
        )

    def cancel_next_status(self, agent_id: str, *, expected_version: int | None = None) -> Outcome:
        """Take back the agent's next status: when their call ends, they go where the
        ending says. Refused when they have none."""
        agent = self.agents.get(agent_id)
        seen = agent.version if expected_version is None else expected_version
        if not agent.next_status and agent.change != replay.change_id("next:", seen):
            raise errors.Conflict(f"{agent.name} has no next status to cancel.", now={"agent": agent})
        return self._next_status(agent, None, expected_version)

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
        on_a_call(agent)
        actions = self._away_actions(agent, status, reason, change)
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled as exc:
            if expected_version is not None:
                return self._done_or_stale(self.agents.get(agent_id), change, expected_version)
            raise agent_changed(agent, exc) from exc
        return Outcome(self.agents.get(agent_id))

    def _away_actions(self, agent: Agent, status: str, reason: str | None, change: str, *also: str) -> list[dict]:
        """The agent as read, to `status` (offline, not ready), out of every queue: the
        agent's Update first, then their messages, the fact and the events."""
        stamp = to_iso(self.table.clock())
        away, values = status_clause(agent.agent_id, status, change, reason)
        actions = [
            self.table.agent_update(
                agent,
                f"SET {away}, version = version + :one, updated_at = :now REMOVE queue_token, call_id",
                {**values, ":now": stamp},
            )
        ]
        if agent.status == AgentStatus.QUEUED and agent.queue_token:
            actions += self.table.dequeue_actions(agent.skills, agent.queue_token)
        return actions + self.table.status_actions(StatusChange.of(agent, status, stamp, reason), *also)

    def disconnect(self, agent: Agent, absent_since: str) -> bool:
        """A queued agent whose client has sent no heartbeat since `absent_since`: not
        ready (`disconnected`) and out of every queue, from the version read, unless a
        heartbeat lands first. False when it did, or the agent changed meanwhile."""
        change = replay.change_id(DISCONNECTED, agent.version)
        actions = self._away_actions(agent, AgentStatus.NOT_READY, DISCONNECTED, change, AGENT_DISCONNECTED)
        unless_seen_since(actions[0], absent_since)
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled:
            return False
        return True


def on_a_call(agent: Agent) -> None:
    """Refuse a change that needs the agent free: they hold a call, ringing or attended."""
    if agent.status == AgentStatus.ATTENDING:
        raise errors.Conflict(
            f"{agent.name} is attending call {agent.call_id}; release the call first.", now={"agent": agent}
        )
    if agent.status == AgentStatus.RINGING:
        raise errors.Conflict(
            f"{agent.name}'s phone is ringing with call {agent.call_id}: wait for the answer (or the answer timeout), "
            "or end the call first.",
            now={"agent": agent},
        )
