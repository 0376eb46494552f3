"""The call center's records: agents, calls and queue metadata."""

from __future__ import annotations

from dataclasses import dataclass, field

from queues_app.ddb.clock import from_iso, now


class AgentStatus:
    OFFLINE = "offline"
    AVAILABLE = "available"
    QUEUED = "queued"
    ATTENDING = "attending"
    WRAP_UP = "wrap_up"

    ALL = (OFFLINE, AVAILABLE, QUEUED, ATTENDING, WRAP_UP)
    LABELS = {
        OFFLINE: "Offline",
        AVAILABLE: "Available",
        QUEUED: "Queued",
        ATTENDING: "Attending a call",
        WRAP_UP: "Wrap-up",
    }


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

    @property
    def status_label(self) -> str:
        return AgentStatus.LABELS.get(self.status, self.status)


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

    @property
    def waited_seconds(self) -> float | None:
        start = from_iso(self.arrived_at)
        left = self.ended_at if self.status == CallStatus.ABANDONED else None
        end = from_iso(self.assigned_at) or from_iso(left) or now()
        return (end - start).total_seconds() if start else None


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
