"""Typed records and the conversion between them and DynamoDB's wire format.

One function turns each raw item into a record and one turns it back, so nothing
outside this package sees `{"S": ...}` maps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def marshal(item: dict[str, Any]) -> dict[str, dict]:
    """Python values to DynamoDB's attribute-value maps (None values are dropped)."""
    return {k: _serializer.serialize(_plain(v)) for k, v in item.items() if v is not None}


def marshal_value(value: Any) -> dict:
    return _serializer.serialize(_plain(value))


def unmarshal(item: dict[str, dict] | None) -> dict[str, Any]:
    """DynamoDB's attribute-value maps to Python values (numbers become int or float)."""
    if not item:
        return {}
    return {k: _native(_deserializer.deserialize(v)) for k, v in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _native(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, list):
        return [_native(v) for v in value]
    if isinstance(value, set):
        return {_native(v) for v in value}
    if isinstance(value, dict):
        return {k: _native(v) for k, v in value.items()}
    return value


def now() -> datetime:
    return datetime.now(UTC)


def to_iso(moment: datetime) -> str:
    """A sortable UTC timestamp with microseconds: lexical order is time order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


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

    ALL = (WAITING, ASSIGNED, ENDED)


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

    @property
    def waited_seconds(self) -> float | None:
        start = from_iso(self.arrived_at)
        end = from_iso(self.assigned_at) or now()
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
