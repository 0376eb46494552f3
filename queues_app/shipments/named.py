"""Named shipment queues: each with its own visibility timeout, retries, backoff and
tenant rate, stored as data shared by every host (in the callcenter table's
`SHIPMENT_QUEUES` partition, one item a queue, as lines are). `live`, today's queue, is
always there: its settings come from the deployment's until it is configured.
`spillover` (the live queue's sidelined work) and `callbacks` (the events to tokens'
callbacks) are the system's own and are not configured here."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.recent import RecentReads
from queues_app.ddb.versioned import delete_at_version, put_from_version, why_refused
from queues_app.shipments.records import DEFAULT_QUEUE, SPILLOVER_QUEUE, RetryPolicy
from queues_app.text import NAME_MAX, SHORT_NAME_PROBLEM, VERSION_MAX, counted, hidden_problem, is_short_name

QUEUES_PK = "SHIPMENT_QUEUES"
# The system's own queues, and the names the figures give the call centre's line and the
# task queue (the per-queue figures are kept by name).
RESERVED = (SPILLOVER_QUEUE, "callbacks", "calls", "tasks")
VISIBILITY_SECONDS = 30  # a receive's lease, unless the queue or the consumer says otherwise
MAX_VISIBILITY_SECONDS = 43_200  # 12 hours, as SQS
MAX_RECEIVES = 1_000
MAX_BACKOFF_SECONDS = 43_200
# How long a process works by the settings it read: a change made elsewhere reaches every
# worker within this (the process that made it, at once).
SETTINGS_MAX_AGE_SECONDS = 5.0
_READ: RecentReads[dict[str, QueueSettings]] = RecentReads(SETTINGS_MAX_AGE_SECONDS)


@dataclass(frozen=True)
class QueueSettings:
    queue_id: str
    name: str
    visibility_timeout_seconds: int
    max_receives: int
    backoff_base_seconds: float
    backoff_max_seconds: float
    tenant_rate: float | None  # shipments a second per tenant; None: no limit
    version: int = 0

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.max_receives, self.backoff_base_seconds, self.backoff_max_seconds)

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def deployment_default(queue_id: str = DEFAULT_QUEUE) -> QueueSettings:
    """A queue's settings before it is configured: the deployment's retry policy
    (SWITCHBOARD_SHIPMENT_RETRY) and, for `live`, its tenant rate (SWITCHBOARD_FAIRNESS)."""
    from queues_app.shipments.fairness import FairnessPolicy

    retry = RetryPolicy.from_settings()
    rate = FairnessPolicy.from_settings().tenant_rate if queue_id == DEFAULT_QUEUE else None
    return QueueSettings(
        queue_id,
        queue_id,
        VISIBILITY_SECONDS,
        retry.max_receives,
        retry.backoff_base_seconds,
        retry.backoff_max_seconds,
        rate,
    )


def _number(data: Mapping, name: str, default, *, low: float, high: float, whole: bool = False, optional=False):
    value = data.get(name, default)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise errors.InvalidRequest(f"{name} is a number from {low:g} to {high:g}.", field=name)
    if whole and value != int(value):
        raise errors.InvalidRequest(f"{name} is a whole number from {low:g} to {high:g}.", field=name)
    # To the thousandth (of a second, of a shipment a second): DynamoDB's numbers stop at
    # 1e-130, and no setting here means anything finer.
    value = value if whole else round(float(value), 3)
    if not low <= value <= high:
        raise errors.InvalidRequest(f"{name} is from {low:g} to {high:g}, not {value:g}.", field=name)
    return int(value) if whole else float(value)


def parse(data: Mapping[str, object]) -> QueueSettings:
    """A queue's settings from what a client or the store sent; what is left out takes the
    deployment's value. InvalidRequest naming the field for a bad one."""
    queue_id = data.get("queue_id")
    if not is_short_name(queue_id):
        raise errors.InvalidRequest(f"queue_id is {SHORT_NAME_PROBLEM}.", field="queue_id")
    assert isinstance(queue_id, str)
    if queue_id in RESERVED:
        raise errors.InvalidRequest(f"{queue_id!r} is a name the system uses: choose another id.", field="queue_id")
    base = deployment_default(queue_id)
    name = data.get("name") or queue_id
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > NAME_MAX:
        raise errors.InvalidRequest(f"name is 1 to {NAME_MAX} characters.", field="name")
    if problem := hidden_problem(name):
        raise errors.InvalidRequest(f"name: {problem}", field="name")
    version = data.get("version") or 0
    if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= VERSION_MAX:
        raise errors.InvalidRequest(
            "version is the queue's version as read (0 or left out for a new queue).", field="version"
        )
    backoff_base = _number(data, "backoff_base_seconds", base.backoff_base_seconds, low=0, high=MAX_BACKOFF_SECONDS)
    settings = QueueSettings(
        queue_id=queue_id,
        name=name.strip(),
        visibility_timeout_seconds=_number(
            data,
            "visibility_timeout_seconds",
            base.visibility_timeout_seconds,
            low=1,
            high=MAX_VISIBILITY_SECONDS,
            whole=True,
        ),
        max_receives=_number(data, "max_receives", base.max_receives, low=1, high=MAX_RECEIVES, whole=True),
        backoff_base_seconds=backoff_base,
        backoff_max_seconds=_number(
            data,
            "backoff_max_seconds",
            max(base.backoff_max_seconds, backoff_base),
            low=backoff_base,
            high=MAX_BACKOFF_SECONDS,
        ),
        tenant_rate=_number(data, "tenant_rate", base.tenant_rate, low=0.001, high=100_000, optional=True),
        version=version,
    )
    unknown = sorted(set(data) - {field.name for field in dataclasses.fields(QueueSettings)})
    if unknown:
        raise errors.InvalidRequest(f"{unknown[0]} is not a setting of a queue.", field=unknown[0])
    return settings


class NamedQueues:
    """The shipment queues configured, read and changed from the version read."""

    def __init__(self, db: Dynamo):
        self.db = db
        self.table = db.table("callcenter")

    def configured(self) -> list[QueueSettings]:
        """The queues configured, by id (one strongly consistent Query)."""
        items = self.db.partition_items(self.table, QUEUES_PK, ConsistentRead=True)
        found = {item["sk"]: parse({k: v for k, v in item.items() if k not in ("pk", "sk")}) for item in items}
        _READ.keep(self.db, found)
        return [found[queue_id] for queue_id in sorted(found)]

    def all(self) -> list[QueueSettings]:
        """Every queue a shipment may be sent to: those configured, and `live` always."""
        configured = self.configured()
        if any(queue.queue_id == DEFAULT_QUEUE for queue in configured):
            return configured
        return sorted([deployment_default(), *configured], key=lambda queue: queue.queue_id)

    def get(self, queue_id: str) -> QueueSettings:
        for queue in self.all():
            if queue.queue_id == queue_id:
                return queue
        raise errors.NotFound(f"No shipment queue {queue_id!r}.")

    def settings_for(self, queue_id: str) -> QueueSettings | None:
        """A queue's settings as workers and enqueues use them: read at most
        SETTINGS_MAX_AGE_SECONDS ago by this process; None for a queue not configured
        (`live` gives the deployment's; `spillover` works by live's; `callbacks` is not
        configured here, and costs no read)."""
        if queue_id in RESERVED and queue_id != SPILLOVER_QUEUE:
            return None
        own = DEFAULT_QUEUE if queue_id == SPILLOVER_QUEUE else queue_id
        found = self._recent().get(own)
        return found if found is not None or own != DEFAULT_QUEUE else deployment_default()

    def current(self) -> list[QueueSettings]:
        """The queues configured, as read at most SETTINGS_MAX_AGE_SECONDS ago by this
        process (a page's tabs: no read of its own most of the time)."""
        recent = self._recent()
        return [recent[queue_id] for queue_id in sorted(recent)]

    def _recent(self) -> dict[str, QueueSettings]:
        """The queues configured by id, as this process read them in the last few seconds."""
        recent = _READ.get(self.db)
        if recent is None:
            self.configured()
            recent = _READ.get(self.db) or {}
        return recent

    def put(self, data: Mapping[str, object]) -> QueueSettings:
        """Create a queue (`version` 0 or left out) or change one (`version` as read): the
        settings stored with their new version; the same change sent again after it was
        made is answered with them as it made them. From an older version: Conflict."""
        wanted = parse(data)
        stored = dataclasses.replace(wanted, version=wanted.version + 1)
        try:
            item = {"pk": QUEUES_PK, "sk": stored.queue_id, **stored.as_dict()}
            put_from_version(self.db, self.table, item, wanted.version)
        except errors.Conflict as exc:
            now = next((queue for queue in self.configured() if queue.queue_id == stored.queue_id), None)
            if now is not None and now == stored:
                return now  # this change, sent again (a retry after a timeout): done already
            raise why_refused(f"queue {stored.queue_id!r}", wanted.version, now.version if now else None) from exc
        finally:
            self.forget()
        return stored

    def delete(self, queue_id: str, version: int, *, holding: int) -> QueueSettings:
        """Remove a queue's settings, from the version read, once it holds no shipment
        (`holding`: queued, delayed, in flight or in its DLQ, as counted). `live` removed
        goes back to the deployment's settings."""
        queue = next((queue for queue in self.configured() if queue.queue_id == queue_id), None)
        if queue is None:
            raise errors.NotFound(f"No shipment queue {queue_id!r}.")
        if queue.version != version:
            raise errors.Conflict(
                f"Queue {queue_id!r} changed since version {version}: it is at version {queue.version}."
            )
        if holding and queue_id != DEFAULT_QUEUE:
            raise errors.Conflict(
                f"Queue {queue_id!r} holds {counted(holding, 'shipment')}: it is removed once it is empty."
            )
        try:
            delete_at_version(self.db, self.table, {"pk": QUEUES_PK, "sk": queue_id}, version, f"Queue {queue_id!r}")
        finally:
            self.forget()
        return queue

    def forget(self) -> None:
        _READ.forget(self.db)
