"""Audited changes of agents: create, edit, make available, release (end their call),
set not ready, log off, one at a time or on a selection."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from queues_app import event_names as named
from queues_app.agents.records import Agent, AgentStatus, not_ready_reasons
from queues_app.calls.records import CallStatus, Outcome
from queues_app.ddb import errors
from queues_app.operations.base import Recorder
from queues_app.operations.bulk import (
    DONE_ALREADY,
    GONE,
    BulkReport,
    Effect,
    Seen,
    agent_action,
    agent_change,
    each_seen,
    not_ready_reason,
)
from queues_app.operations.wording import took

THEN_WORDS = {"queue": "queued", "wrap_up": "wrap-up", "offline": "offline"}


class AgentOperations:
    """Audited changes of agents."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder
        self.call_center, self.agents, self.system = recorder.call_center, recorder.agents, recorder.system

    def create_agent(
        self, name: str, skills: dict, *, agent_id: str | None = None, profile: object = None, lines: object = None
    ) -> Agent:
        agent = self.agents.create(name, skills, agent_id, profile=profile, lines=lines)
        self.recorder.record(named.AGENT_CREATED, "agent", agent.agent_id, f"created agent {agent.name}", None, agent)
        return agent

    def update_agent(
        self, agent_id: str, *, name: str, skills: dict, expected_version: int, **serving: object
    ) -> Outcome:
        """Rename the agent or change their skills, and (given as `profile` or `lines`) the
        lines they serve."""
        before = self.agents.get(agent_id)
        with self.recorder.telling_what_changed("agent", agent_id):
            outcome = self.agents.edit(agent_id, name=name, skills=skills, expected_version=expected_version, **serving)
        if not outcome.replayed and outcome.agent:
            after = outcome.agent
            self.recorder.record(named.AGENT_EDITED, "agent", agent_id, f"edited agent {after.name}", before, after)
        return outcome

    def remove_agent(self, agent_id: str, *, expected_version: int) -> Agent:
        """Remove a logged-off (or not ready) agent from the roster, from the version read."""
        with self.recorder.telling_what_changed("agent", agent_id):
            agent = self.agents.remove(agent_id, expected_version=expected_version)
        self.recorder.record(named.AGENT_REMOVED, "agent", agent_id, f"removed agent {agent.name}", agent, None)
        return agent

    def make_available(self, agent_id: str, *, expected_version: int | None = None) -> Outcome:
        before = self.agents.get(agent_id)  # read once: the change decides on it, the audit's `before`
        with self.recorder.telling_what_changed("agent", agent_id):
            outcome = self.call_center.make_available(agent_id, expected_version=expected_version, read=before)
        agent, call = outcome
        if outcome.replayed or agent is None:
            return outcome
        if call:
            summary = f"{agent.name} {took(call)}"
            assigned = self.system.call_assigned(call, self.recorder.actor, self.recorder.source)
            self.recorder.record(named.AGENT_AVAILABLE, "agent", agent_id, summary, before, agent, assigned)
        else:
            self.recorder.record(named.AGENT_AVAILABLE, "agent", agent_id, f"{agent.name} queued", before, agent)
        return outcome

    def release(self, agent_id: str, then: str = "queue", *, call_id: str | None = None) -> Outcome:
        """End the agent's call (the one named, when `call_id` is given), then `then`."""
        before = self.agents.get(agent_id)
        with (
            self.recorder.telling_what_changed("call", call_id)
            if call_id
            else self.recorder.telling_what_changed("agent", agent_id)
        ):
            outcome = self.call_center.release(agent_id, then=then, call_id=call_id, read=before)
        agent, call = outcome
        if outcome.replayed or agent is None:
            return outcome
        rang = before.status == AgentStatus.RINGING  # the caller hung up before the pick-up
        summary = f"released {agent.name} from call {before.call_id}{' while it rang' if rang else ''}, then "
        if call:
            summary += took(call)
            assigned = [self.system.call_assigned(call, self.recorder.actor, self.recorder.source)]
        else:
            summary += THEN_WORDS.get(then, then)
            assigned = []
        ended = self._ended(agent, before.call_id, rang)
        self.recorder.record(named.AGENT_RELEASED, "agent", agent_id, summary, before, agent, *ended, *assigned)
        return outcome

    def _ended(self, agent: Agent, call_id: str | None, rang: bool) -> list[dict]:
        """The call's side of a release: it ended (abandoned, when it ended as it rang)."""
        if not call_id:
            return []
        if rang:
            summary = f"abandoned while it rang for {agent.name}"
            before, after = {"status": "offered"}, {"status": "abandoned"}
            return [self.recorder.entry(named.CALL_ABANDONED, "call", call_id, summary, before, after)]
        summary = f"ended: {agent.name} released"
        return [
            self.recorder.entry(named.CALL_ENDED, "call", call_id, summary, {"status": "assigned"}, {"status": "ended"})
        ]

    def end_call(self, call_id: str, then: str = "queue") -> Outcome:
        """End a call in progress by naming it; its agent then goes `then`."""
        call = self.call_center.get_call(call_id)
        if call.status not in (CallStatus.ASSIGNED, CallStatus.ENDED) or not call.agent_id:
            with self.recorder.telling_what_changed("call", call_id):
                return self.call_center.end_call(call_id, then)  # refused: says why
        return self.release(call.agent_id, then, call_id=call_id)

    def log_off(self, agent_id: str, *, expected_version: int | None = None) -> Outcome:
        before = self.agents.get(agent_id)
        with self.recorder.telling_what_changed("agent", agent_id):
            outcome = self.call_center.log_off(agent_id, expected_version=expected_version)
        agent = outcome.agent
        if not outcome.replayed and agent is not None and agent.version != before.version:
            self.recorder.record(named.AGENT_OFFLINE, "agent", agent_id, f"logged {agent.name} off", before, agent)
        return outcome

    def set_not_ready(self, agent_id: str, reason: str, *, expected_version: int | None = None) -> Outcome:
        """Logged in, offered no call, for one of AGENT_NOT_READY_REASONS."""
        reasons = not_ready_reasons()
        if reason not in reasons:
            raise errors.InvalidRequest(f"A reason to be not ready is one of {', '.join(reasons)}; not {reason!r}.")
        before = self.agents.get(agent_id)
        with self.recorder.telling_what_changed("agent", agent_id):
            outcome = self.call_center.set_not_ready(agent_id, reason, expected_version=expected_version)
        agent = outcome.agent
        if not outcome.replayed and agent is not None and agent.version != before.version:
            summary = f"{agent.name} not ready: {reason}" + (" after this call" if agent.next_status else "")
            self.recorder.record(named.AGENT_NOT_READY, "agent", agent_id, summary, before, agent)
        return outcome

    def cancel_next_status(self, agent_id: str, *, expected_version: int | None = None) -> Outcome:
        """The agent's next status taken back: the end of their call decides where they go."""
        before = self.agents.get(agent_id)
        with self.recorder.telling_what_changed("agent", agent_id):
            outcome = self.call_center.cancel_next_status(agent_id, expected_version=expected_version)
        agent = outcome.agent
        if not outcome.replayed and agent is not None:
            summary = f"{agent.name}'s next status cancelled"
            self.recorder.record(named.AGENT_NOT_READY, "agent", agent_id, summary, before, agent)
        return outcome

    def agents_effect(self, action: str, selection: Iterable[Seen]) -> Effect:
        """What `on_agents` would do to each agent, from their records now (one BatchGetItem):
        agents changed since they were shown are passed over, named with what they are now."""
        known = agent_action(action)
        if known is None:
            raise errors.InvalidRequest(f"Unknown agent action {action!r}.")
        passes_over, does = known
        seen = each_seen(selection)
        found = {a.agent_id: a for a in self.agents.get_many(list(seen))}
        effect = Effect(does)
        for agent_id, shown in seen.items():
            agent = found.get(agent_id)
            if agent is not None and agent.version != shown.version:
                if agent.change == agent_change(action, shown):
                    effect.pass_over(agent_id, DONE_ALREADY)
                else:
                    effect.changed_since(agent_id, agent.name, agent.doing)
                continue
            reason = GONE if agent is None else passes_over.get(agent.status)
            if reason:
                effect.pass_over(agent_id, reason)
            else:
                effect.acting.append(Seen(agent_id, shown.version, agent.call_id if agent else None))
        return effect

    def on_agents(self, action: str, selection: Iterable[Seen]) -> BulkReport:
        """The same agent action on a selection, each agent only as it was shown: those it
        applies to as they are now, the others passed over with the reason."""
        do: dict[str, Callable[[Seen], object]] = {
            "available": lambda seen: self.make_available(seen.item_id, expected_version=seen.version),
            "release": lambda seen: self.release(seen.item_id, call_id=seen.call_id),
            "offline": lambda seen: self.log_off(seen.item_id, expected_version=seen.version),
        }
        reason = not_ready_reason(action)
        if reason:
            do[action] = lambda seen: self.set_not_ready(seen.item_id, reason, expected_version=seen.version)
        return self.agents_effect(action, selection).apply(do[action])
