"""An agent coming back (made available, or ending a call to the queue) takes the
longest-waiting caller they fit: the callers kept for them as their preferred agent first,
then, line by line in their routing profile's priority, the heads of the line's parts they
fit, passing callers kept for someone else, of other lines, not yet waited past the line's
delay, or whose routing step they do not meet. One conditioned transaction per try, as matching's
(docs/architecture.md, "Matching")."""

from __future__ import annotations

from typing import cast

from queues_app import steps
from queues_app.agents.records import Agent, AgentStatus, StatusChange
from queues_app.agents.skills import best_levels, fits, meets
from queues_app.calls.records import Call, CallStatus
from queues_app.centre import keys
from queues_app.centre.table import agent_changed, status_clause
from queues_app.ddb import errors
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.lines import profiles
from queues_app.routing.matching import Matcher, assignment_change, why_entry
from queues_app.routing.queues import Candidate

# How many times an agent coming back reads the line's heads again when others took them.
OFFER_ROUNDS = 3
_TAKEN = object()  # every head offered was taken by someone else meanwhile


class ComingBack:
    """Gives an agent who frees up the first waiting caller they may take."""

    def __init__(self, matcher: Matcher):
        self.matcher = matcher

    def offer_waiting_callers(
        self, agent: Agent, *, from_queue: bool, change: str | None = None, after_call: str | None = None
    ) -> Call | None:
        """Give the agent the first waiting caller (priority, then arrival) they fit.

        The look before queueing may read the line's counts eventually consistently (a
        caller it misses is found by the look after); the look after reads them strongly.
        When every head read was taken meanwhile, the line is read again, a few times.
        `change` marks the agent's new version with the request being served; with
        `after_call` (the call the agent just ended), that call records the one taken in
        the same transaction, so that the ending, sent again, is answered as it was."""
        moment = self.matcher.clock()

        def takes(waiting: dict) -> bool:  # not kept for another agent, and the agent meets their step now
            if waiting.get("pref") not in (None, agent.agent_id) and waiting.get("pref_until", "") > to_iso(moment):
                return False
            wanted = steps.min_level(waiting.get("steps") or [], waiting.get("arrived_at", ""), moment)
            prefs = waiting.get("preferences") or {}
            return not wanted or meets(best_levels(agent.skills, agent.levels, prefs), wanted)

        kept = self._kept_for(agent, moment)
        if kept:  # the callers kept for this agent come first
            outcome = self._offer_heads(
                agent, kept, from_queue=from_queue, change=change, after_call=after_call, how="preferred"
            )
            if outcome is not _TAKEN:
                return cast(Call | None, outcome)
        serving = self.matcher.profiles.serving(agent.profile, agent.lines)
        line = self.matcher.line
        # The counts of the parts of the line they fit, read once for every priority's first look.
        counts = line.counts(line.partitions_for(agent.skills), consistent=from_queue)
        # Their lines by priority, first priority first (one group of every line without a profile).
        for lines in profiles.tiers(serving) if serving else [None]:

            def on_lines(waiting: dict, lines=lines) -> bool:
                if lines is None:
                    return takes(waiting)
                arrived, line_id = keys.parse_wait_since(waiting.get("wait_since", ""))
                waited = (moment - (from_iso(arrived) or moment)).total_seconds()
                return line_id in lines and profiles.admits(serving, line_id, waited) and takes(waiting)

            for round_ in range(OFFER_ROUNDS):
                read = counts if round_ == 0 else None  # after heads were taken by others: read again
                heads = line.heads_for(agent.skills, consistent=from_queue, takes=on_lines, counts=read)
                if not heads:
                    break
                outcome = self._offer_heads(agent, heads, from_queue=from_queue, change=change, after_call=after_call)
                if outcome is not _TAKEN:
                    return cast(Call | None, outcome)
        return None

    def _kept_for(self, agent: Agent, moment) -> list[dict]:
        """The callers waiting for this agent as their preferred agent, whom they fit, in
        line order (as heads to offer)."""
        found = [self.matcher.calls.find(call_id) for call_id in self.matcher.line.preferring(agent.agent_id, moment)]
        kept = [c for c in found if c and c.status == CallStatus.WAITING and fits(agent.skills, c.preferences)]
        return [{"call_id": c.call_id} for c in sorted(kept, key=lambda c: c.wait_sk or "")]

    def _offer_heads(
        self,
        agent: Agent,
        heads: list[dict],
        *,
        from_queue: bool,
        change: str | None,
        after_call: str | None,
        how: str = "chosen",
    ) -> object:
        for waiting in heads:
            call = self.matcher.calls.find(waiting["call_id"])
            if not call or call.status != CallStatus.WAITING:
                continue
            also = [self.matcher.calls.next_call_action(after_call, call.call_id)] if after_call else []
            if from_queue:
                candidate = Candidate(
                    token=agent.queue_token or "",
                    agent_id=agent.agent_id,
                    name=agent.name,
                    skills=agent.skills,
                    queue="(agent came back)",
                    version=agent.version,
                )
                assigned = self.matcher.try_assign(
                    call,
                    candidate,
                    new_call=False,
                    considered=[],
                    others=[],
                    change=change,
                    also=also,
                    chosen_as=how,
                )
                # `_try_assign` also returns the call when another agent took it meanwhile.
                if assigned and assigned.agent_id == agent.agent_id:
                    return assigned
                current = self.matcher.agents.get(agent.agent_id)
                if current.status != AgentStatus.QUEUED or current.queue_token != agent.queue_token:
                    return None  # someone else took the agent first
                continue
            assigned = self._give_free_agent(agent, call, change=change, also=also, how=how)
            if assigned:
                return assigned
        return _TAKEN

    def _give_free_agent(
        self,
        agent: Agent,
        call: Call,
        *,
        change: str | None = None,
        also: list[dict] | None = None,
        how: str = "chosen",
    ) -> Call | None:
        """Assign a caller to an agent who is not queued (offline, available, wrap-up)."""
        stamp = to_iso(self.matcher.clock())
        assigned = Call(**call.__dict__)
        assigned.status, assigned.agent_id, assigned.agent_name = CallStatus.ASSIGNED, agent.agent_id, agent.name
        assigned.assigned_at, assigned.wait_sk = stamp, None
        chosen = why_entry(agent.agent_id, agent.name, stamp, "preferred" if how == "preferred" else "returned")
        if (step := self.matcher.step_number(call)) is not None:
            chosen["step"] = step
        assigned.why = [chosen]
        call_actions = self.matcher.calls.assignment_actions(call, assigned, new_call=False)
        status = AgentStatus.RINGING if assigned.offer_sk else AgentStatus.ATTENDING
        attending, values = status_clause(agent.agent_id, status, change or assignment_change(call.call_id))
        actions = [
            self.matcher.table.agent_update(
                agent,
                f"SET {attending}, call_id = :call, version = version + :one, updated_at = :now REMOVE queue_token",
                {**values, ":call": call.call_id, ":now": stamp},
            ),
            *call_actions,
            *(also or []),
            *self.matcher.table.status_actions(StatusChange.of(agent, status, stamp, call_id=call.call_id)),
        ]
        try:
            self.matcher.table.transact(actions)
        except errors.TransactionCancelled as exc:
            if exc.reasons and exc.reasons[0].failed and exc.reasons[0].code == "ConditionalCheckFailed":
                raise agent_changed(agent, exc) from exc
            return None  # the caller went to someone else (or a lost race): try the next caller
        return assigned
