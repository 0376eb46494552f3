"""Every DynamoDB table the project uses, defined in one place.

Names here are logical; the physical name is `DYNAMODB_TABLE_PREFIX` + logical name.
`schema.py` creates, describes and deletes them from these definitions.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Index:
    """A global secondary index: what readers name (`INDEX.name`) and query on."""

    name: str
    partition_key: str
    sort_key: str | None = None
    projection: str = "ALL"  # ALL | KEYS_ONLY | INCLUDE
    include: tuple[str, ...] = ()


@dataclass(frozen=True)
class TableSpec:
    logical_name: str
    description: str
    partition_key: str = "pk"
    sort_key: str | None = "sk"
    indexes: tuple[Index, ...] = ()
    ttl_attribute: str | None = None
    stream: bool = False
    # Attribute types for keys; every key attribute in this project is a string
    # unless listed here.
    number_attributes: tuple[str, ...] = field(default=())
    # Indexes an earlier version defined: `dynamo_tables create` deletes them from a live
    # table once the indexes that replace them are active.
    retired_indexes: tuple[str, ...] = ()

    def key_attributes(self) -> list[str]:
        names = [self.partition_key] + ([self.sort_key] if self.sort_key else [])
        for index in self.indexes:
            names.append(index.partition_key)
            if index.sort_key:
                names.append(index.sort_key)
        return list(dict.fromkeys(names))


# --- the indexes, each defined once; the code names them by these handles -------------

# Agents by status in name order, for status filters of the list and capped status counts
# that cost the same with ten agents as with ten thousand. Each status is spread over 8
# partitions (`status_q` = `<status>#<n>`, n a hash of the agent id), since every call
# moves an agent through three statuses: a status's list is its partitions merged, its
# count their sum. Sparse: only agents have `status_q` and `name_lower`. It projects
# since when an agent is in their status and why (not ready), which the list shows: it
# replaced `agents_by_status_shard`, which projected neither.
AGENTS_BY_STATUS = Index(
    "agents_by_status_since",
    "status_q",
    "name_lower",
    projection="INCLUDE",
    include=(
        "agent_id",
        "name",
        "status",
        "skills",
        "queued_at",
        "call_id",
        "version",
        "updated_at",
        "created_at",
        "status_since",
        "reason",
    ),
)
# Agents in name order, for the agents list: a page of names is one Query however many
# agents there are. It projects only what does not change with an agent's status, so that
# taking or ending a call does not rewrite the entry (the list reads the page's agents in
# one BatchGetItem). Sparse like the one above.
AGENTS_BY_NAME = Index(
    "agents_by_name",
    "type",
    "name_lower",
    projection="INCLUDE",
    include=("agent_id", "name", "skills", "created_at"),
)
# Waiting callers, sparse (only their items carry these keys), each index spread over a
# few partitions (`LINE#0`..): by arrival alone (the longest wait: one Limit-1 query per
# partition), and by when their preferences are next relaxed (escalation reads only those
# due). The line in order is its partitions merged.
WAITING_BY_ARRIVAL = Index("waiting_by_arrival", "wait_q", "wait_since", projection="KEYS_ONLY")
WAITING_TO_RELAX = Index("waiting_to_relax", "relax_q", "relax_at", projection="KEYS_ONLY")
# Callers with routing steps, by when their step in force expires: escalation offers them
# again to the agents the next step admits (queues_app/steps.py).
WAITING_BY_STEP = Index("waiting_by_step", "step_q", "step_due", projection="KEYS_ONLY")

# Waiting shipments in peek order: <9-priority>#<enqueued_at>#<id>.
SHIPMENTS_READY = Index("ready", "ready_q", "ready_sk", projection="KEYS_ONLY")
# In flight (until the lease deadline) and delayed (until visible): <visible_at>#<id>.
SHIPMENTS_INVISIBLE = Index(
    "invisible", "invisible_q", "invisible_sk", projection="INCLUDE", include=("status", "attempts")
)
# The dead-letter queue, oldest first: <dlq_at>#<id>.
SHIPMENTS_DLQ = Index("dlq", "dlq_q", "dlq_sk", projection="KEYS_ONLY")

# Pending tasks newest first (ScanIndexForward false): <created>#<task_id>.
TASKS_BY_STATUS = Index("by_status", "task_status", "created_sk", projection="INCLUDE", include=("expires_at",))

# One item's history in the audit trail: <at>#<entry id>.
AUDIT_BY_TARGET = Index("by_target", "target", "sk", projection="ALL")


CALLCENTER = TableSpec(
    logical_name="callcenter",
    description=(
        "Agents, queue metadata per skill combination, agent-queue message items, "
        "calls and waiting callers (single-table design, as in the FIFO article)."
    ),
    indexes=(AGENTS_BY_STATUS, AGENTS_BY_NAME, WAITING_BY_ARRIVAL, WAITING_TO_RELAX, WAITING_BY_STEP),
    # Agents and calls shared `by_status` (status, sk): calls in progress are now read
    # through their attending agents. `by_name` projected the whole agent.
    # `agents_by_status` (status, name_lower) took every write of a status in one partition.
    retired_indexes=("by_status", "by_name", "agents_by_status", "agents_by_status_shard"),
    # Ended calls expire after a retention period.
    ttl_attribute="expires_at",
)

SHIPMENTS = TableSpec(
    logical_name="shipments",
    description=(
        "Shipments and their priority queue: one sparse index per queue state, so that "
        "peeking never reads past shipments in flight."
    ),
    partition_key="id",
    sort_key=None,
    indexes=(SHIPMENTS_READY, SHIPMENTS_INVISIBLE, SHIPMENTS_DLQ),
)

TASKS = TableSpec(
    logical_name="tasks",
    description=(
        "The LIFO task queue: tasks by status and creation time, expiring through TTL, "
        "with a stream that wakes the processor."
    ),
    partition_key="task_id",
    sort_key=None,
    indexes=(TASKS_BY_STATUS,),
    ttl_attribute="expires_at",
    stream=True,
)

AUDIT = TableSpec(
    logical_name="audit",
    description=(
        "The audit trail: every supervisor action (pages, admin, API) with who, what, "
        "when, before and after; newest first per day, and per target through an index."
    ),
    # pk AUDIT#<day>#<n> (16 shards a day; AUDIT#<day> before them), sk <at>#<entry id>.
    indexes=(AUDIT_BY_TARGET,),
    ttl_attribute="expires_at",
)

METRICS = TableSpec(
    logical_name="metrics",
    description=(
        "Per-queue figures a minute at a time (gauges sampled, counters added by every "
        "process), running totals, request capacity per operation, and tenant rate windows."
    ),
    # pk SAMPLE#<queue> / TOTAL / CAPACITY#<operation> / RATE#<tenant>; sk a minute or a second.
    ttl_attribute="expires_at",
)

TABLES: dict[str, TableSpec] = {spec.logical_name: spec for spec in (CALLCENTER, SHIPMENTS, TASKS, AUDIT, METRICS)}
