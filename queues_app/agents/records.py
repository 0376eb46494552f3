"""The call center's records: agents, calls and queue metadata."""

from __future__ import annotations

from dataclasses import dataclass, field

from queues_app.agents import keys
from queues_app.ddb.clock import from_iso, now


class AgentStatus:
    OFFLINE = "offline"
    AVAILABLE = "available"
    QUEUED = "queued"
    ATTENDING = "attending"
    WRAP_UP = "wrap_up"
    NOT_READY = "not_ready"  # logged in, never offered a call, with a reason (break, lunch...)

    ALL = (OFFLINE, AVAILABLE, QUEUED, ATTENDING, WRAP_UP, NOT_READY)
    LABELS = {
        OFFLINE: "Offline",
        AVAILABLE: "Joining the queue",  # for the moment between "make available" and queued
        QUEUED: "Queued",
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


def not_ready_reasons() -> list[str]:
    """The reasons a person may give for an agent not ready (AGENT_NOT_READY_REASONS);
    `missed` is the system's own."""
    from django.conf import settings

    given = getattr(settings, "AGENT_NOT_READY_REASONS", None) or ["break", "lunch", "training", "meeting"]
    return [r.strip() for r in given if r.strip() and r.strip() != MISSED]


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

    @property
    def status_label(self) -> str:
        return status_label(self.status, self.reason)

    @property
    def doing(self) -> str:
        """What the agent is doing, for a sentence: "on call 3f2a…", "queued", "in wrap-up"."""
        if self.status == AgentStatus.ATTENDING:
            return f"on call {self.call_id}" if self.call_id else "attending a call"
        if self.status == AgentStatus.WRAP_UP:
            return "in wrap-up"
        if self.status == AgentStatus.NOT_READY:
            return f"not ready ({self.reason})" if self.reason else "not ready"
        return self.status_label.lower()


class CallStatus:
    WAITING = "waiting"
    ASSIGNED = "assigned"
    ENDED = "ended"
    ABANDONED = "abandoned"  # the caller hung up while waiting

    ALL = (WAITING, ASSIGNED, ENDED, ABANDONED)


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
    def answer_by(self) -> str | None:
        """While the call is offered: when the offer runs out."""
        return keys.offer_deadline(self.offer_sk) if self.offer_sk else None

    @property
    def waited_seconds(self) -> float | None:
        start = from_iso(self.arrived_at)
        left = self.ended_at if self.status == CallStatus.ABANDONED else None
        end = from_iso(self.assigned_at) or from_iso(left) or now()
        return (end - start).total_seconds() if start else None


# Where an agent goes once their call ends, in words.
AFTER_CALL = {"queue": "back to the queue", AgentStatus.WRAP_UP: "to wrap-up", AgentStatus.OFFLINE: "offline"}


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


@dataclass
class QueueInfo:
    """Metadata of one skill-combination queue (the article's `Q#Spanish#M` item)."""

    combination: tuple[str, ...]
    name: str
    depth: int = 0
    version: int = 0
    oldest_queued_at: str | None = None

    @property
    def oldest_age_seconds(self) -> float | None:
        oldest = from_iso(self.oldest_queued_at)
        return (now() - oldest).total_seconds() if oldest else None


AGENT_TYPE = "agent"  # the type of an agent item: the key of `agents_by_name`


def agent_to_item(agent: Agent) -> dict:
    return {
        **keys.agent(agent.agent_id),
        "type": AGENT_TYPE,
        "agent_id": agent.agent_id,
        "name": agent.name,
        "name_lower": agent.name.lower(),
        "skills": agent.skills,
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
    }


def agent_from_item(item: dict) -> Agent:
    return Agent(
        agent_id=item["agent_id"],
        name=item["name"],
        skills={k: list(v) for k, v in (item.get("skills") or {}).items()},
        status=item.get("status", AgentStatus.OFFLINE),
        version=int(item.get("version", 1)),
        created_at=item.get("created_at", ""),
        updated_at=item.get("updated_at", ""),
        queued_at=item.get("queued_at"),
        queue_token=item.get("queue_token"),
        call_id=item.get("call_id"),
        change=item.get("change"),
        reason=item.get("reason") or None,
        status_since=item.get("status_since") or item.get("updated_at"),
    )
