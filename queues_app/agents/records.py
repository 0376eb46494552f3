"""An agent's record: who they are, their skills and their status."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from queues_app.centre import keys
from queues_app.ddb.codec import record_from_item
from queues_app.lines.profiles import Terms, lines_as_dict, stored_lines


class AgentStatus:
    OFFLINE = "offline"
    AVAILABLE = "available"
    QUEUED = "queued"
    RINGING = "ringing"  # offered a call (ANSWER_TIMEOUT_SECONDS), not picked up yet
    ATTENDING = "attending"
    WRAP_UP = "wrap_up"
    NOT_READY = "not_ready"  # logged in, never offered a call, with a reason (break, lunch...)

    ALL = (OFFLINE, AVAILABLE, QUEUED, RINGING, ATTENDING, WRAP_UP, NOT_READY)
    ON_A_CALL = (RINGING, ATTENDING)  # holding a call: given it, whether picked up yet or not
    OCCUPIED = (*ON_A_CALL, WRAP_UP)  # busy with a call, for occupancy: its wrap-up too
    LABELS = {
        OFFLINE: "Offline",
        AVAILABLE: "Joining the queue",  # for the moment between "make available" and queued
        QUEUED: "Queued",
        RINGING: "Ringing",
        ATTENDING: "Attending a call",
        WRAP_UP: "Wrap-up",
        NOT_READY: "Not ready",
    }


def status_label(status: str, reason: str | None = None) -> str:
    """A status in words, not ready with its reason: "Queued", "Not ready: lunch"."""
    label = AgentStatus.LABELS.get(status, status)
    return f"{label}: {reason}" if status == AgentStatus.NOT_READY and reason else label


# The reason an agent who missed an offered call is made not ready with (ring-no-answer).
MISSED = "missed"
# ... and one whose client stopped sending heartbeats (AGENT_PRESENCE_SECONDS).
DISCONNECTED = "disconnected"
SYSTEM_REASONS = (MISSED, DISCONNECTED)


def not_ready_reasons() -> list[str]:
    """The reasons a person may give for an agent not ready (AGENT_NOT_READY_REASONS);
    `missed` and `disconnected` are the system's own."""
    from django.conf import settings

    given = getattr(settings, "AGENT_NOT_READY_REASONS", None) or ["break", "lunch", "training", "meeting"]
    return [r.strip() for r in given if r.strip() and r.strip() not in SYSTEM_REASONS]


@dataclass
class Agent:
    """A person who takes calls. `skills` maps each skill dimension to the values the
    agent has (gender has one value, language one or more)."""

    agent_id: str
    name: str
    skills: dict[str, list[str]]
    status: str = AgentStatus.OFFLINE
    version: int = 1
    created_at: str = ""
    updated_at: str = ""
    queued_at: str | None = None
    queue_token: str | None = None  # sort key of the agent's message items while queued
    call_id: str | None = None
    change: str | None = None  # the request that made this version (ddb/replay.py)
    reason: str | None = None  # why the agent is not ready (only while not ready)
    status_since: str | None = None  # when the agent's status last changed
    levels: dict[str, dict[str, int]] = field(default_factory=dict)  # skill levels above 1 (agents/skills.py)
    # The lines served (lines/profiles.py): a named profile, or their own; neither: every line.
    profile: str | None = None
    lines: dict[str, Terms] = field(default_factory=dict)
    # The status the agent goes to when their call ends, whatever the ending says (Amazon
    # Connect's "next status"): not ready, with `next_reason`. Only while on a call.
    next_status: str | None = None
    next_reason: str | None = None
    wrap_up_until: str | None = None  # when their wrap-up ends by itself (WRAP_UP_SECONDS); only in wrap-up
    seen_at: str | None = None  # their client's last heartbeat (AGENT_PRESENCE_SECONDS)

    @property
    def status_label(self) -> str:
        return status_label(self.status, self.reason)

    @property
    def skills_with_levels(self) -> dict[str, dict[str, int]]:
        """Each skill value with its level (1 unless set higher): the agent's skills as
        they are given back to be changed."""
        return {
            name: {value: self.levels.get(name, {}).get(value, 1) for value in values}
            for name, values in self.skills.items()
        }

    def after_call(self, then: str) -> tuple[str, str | None]:
        """The status (and reason) the agent goes to when their call ends and the ending
        says `then`: their next status when they have one, else wrap-up (the queue comes
        after it) or offline."""
        if self.next_status:
            return self.next_status, self.next_reason
        return (AgentStatus.OFFLINE if then == AgentStatus.OFFLINE else AgentStatus.WRAP_UP), None

    def queued_as(self, stamp: str, token: str, change: str) -> Agent:
        """The agent as queueing them at `stamp` with `token` wrote them (a new object: this
        one stays as it was read)."""
        return replace(
            self,
            status=AgentStatus.QUEUED,
            queued_at=stamp,
            queue_token=token,
            reason=None,
            status_since=stamp,
            version=self.version + 1,
            call_id=None,
            change=change,
            updated_at=stamp,
        )

    def off_the_call(self, status: str, reason: str | None, stamp: str, change: str | None) -> Agent:
        """The agent as the end (or transfer) of their call wrote them: `status` from `stamp`,
        no call and no next status. A new object: this one stays as it was read."""
        return replace(
            self,
            status=status,
            reason=reason,
            next_status=None,
            next_reason=None,
            call_id=None,
            version=self.version + 1,
            change=change,
            status_since=stamp,
            updated_at=stamp,
        )

    @property
    def next_label(self) -> str | None:
        """The next status in words, "Break after this call", or None."""
        if not self.next_status:
            return None
        return f"{(self.next_reason or 'not ready').capitalize()} after this call"

    @property
    def doing(self) -> str:
        """What the agent is doing, for a sentence: "on call 3f2a…", "queued", "in wrap-up"."""
        if self.status == AgentStatus.ATTENDING:
            return f"on call {self.call_id}" if self.call_id else "attending a call"
        if self.status == AgentStatus.RINGING:
            return f"ringing with call {self.call_id}" if self.call_id else "ringing"
        if self.status == AgentStatus.WRAP_UP:
            return "in wrap-up"
        if self.status == AgentStatus.NOT_READY:
            return f"not ready ({self.reason})" if self.reason else "not ready"
        return self.status_label.lower()


@dataclass(frozen=True)
class StatusChange:
    """One change of an agent's status, as the agents' report counts it and the
    `agent.status_changed` event tells it: from what (since when, why) to what, when, and
    the agent's version after it (None where the change did not know it)."""

    agent_id: str
    name: str
    was: str
    to: str
    at: str
    since: str | None = None
    was_reason: str | None = None
    reason: str | None = None
    version: int | None = None
    call_id: str | None = None  # the call taken, or left

    @classmethod
    def of(cls, agent: Agent, to: str, at: str, reason: str | None = None, call_id: str | None = None) -> StatusChange:
        """The change of `agent` as read to `to`: one version on."""
        return cls(
            agent.agent_id,
            agent.name,
            agent.status,
            to,
            at,
            agent.status_since,
            agent.reason if agent.status == AgentStatus.NOT_READY else None,
            reason if to == AgentStatus.NOT_READY else None,
            agent.version + 1,
            call_id or agent.call_id,
        )


# Where an agent goes once their call ends, in words.
AFTER_CALL = {"queue": "back to the queue", AgentStatus.WRAP_UP: "to wrap-up", AgentStatus.OFFLINE: "offline"}


AGENT_TYPE = "agent"  # the type of an agent item: the key of `agents_by_name`


def agent_to_item(agent: Agent) -> dict:
    return {
        **keys.agent(agent.agent_id),
        "type": AGENT_TYPE,
        "agent_id": agent.agent_id,
        "name": agent.name,
        "name_lower": agent.name.lower(),
        "skills": agent.skills,
        "levels": agent.levels,
        "status": agent.status,
        "status_q": keys.status_partition(agent.status, agent.agent_id),
        "version": agent.version,
        "created_at": agent.created_at,
        "updated_at": agent.updated_at,
        "queued_at": agent.queued_at,
        "queue_token": agent.queue_token,
        "call_id": agent.call_id,
        "change": agent.change,
        "reason": agent.reason,
        "status_since": agent.status_since or agent.updated_at or agent.created_at,
        **({"profile": agent.profile} if agent.profile else {}),
        **({"lines": lines_as_dict(agent.lines)} if agent.lines else {}),
    }


def agent_from_item(item: dict) -> Agent:
    return record_from_item(
        Agent,
        item,
        skills={k: list(v) for k, v in (item.get("skills") or {}).items()},
        levels={k: {value: int(n) for value, n in v.items()} for k, v in (item.get("levels") or {}).items()},
        reason=item.get("reason") or None,  # stored empty once not ready ends
        status_since=item.get("status_since") or item.get("updated_at"),
        profile=item.get("profile") or None,
        lines=stored_lines(item.get("lines")),
        next_status=item.get("next_status") or None,  # stored empty once it is applied or cancelled
        next_reason=item.get("next_reason") or None,
        wrap_up_until=item.get("wrap_up_until") or None,
    )
