"""The tables as earlier versions left them: their indexes, and items written their way
(`schema.create_tables` brings both up to date)."""

from queues_app.centre import keys
from queues_app.ddb.codec import marshal

# The callcenter table's indexes before agents and calls had their own.
OLDER_INDEXES = (
    ("by_status", "status", "sk", "INCLUDE", ("agent_id", "name", "name_lower", "skills", "call_id", "version")),
    ("waiting_by_arrival", "wait_q", "wait_since", "KEYS_ONLY", ()),
    ("waiting_to_relax", "relax_q", "relax_at", "KEYS_ONLY", ()),
    ("by_name", "type", "name_lower", "ALL", ()),
)
# Before the status index was spread over partitions.
AGENT_FIELDS = ("agent_id", "name", "skills", "queued_at", "call_id", "version", "updated_at", "created_at")
PREVIOUS_INDEXES = (
    ("agents_by_status", "status", "name_lower", "INCLUDE", AGENT_FIELDS),
    ("agents_by_name", "type", "name_lower", "INCLUDE", ("agent_id", "name", "skills", "created_at")),
    ("waiting_by_arrival", "wait_q", "wait_since", "KEYS_ONLY", ()),
    ("waiting_to_relax", "relax_q", "relax_at", "KEYS_ONLY", ()),
)


# Before the status index projected the status's start and reason.
SHARDED_INDEXES = (
    ("agents_by_status_shard", "status_q", "name_lower", "INCLUDE", (*AGENT_FIELDS, "status")),
    ("agents_by_name", "type", "name_lower", "INCLUDE", ("agent_id", "name", "skills", "created_at")),
    ("waiting_by_arrival", "wait_q", "wait_since", "KEYS_ONLY", ()),
    ("waiting_to_relax", "relax_q", "relax_at", "KEYS_ONLY", ()),
)

# Before routing steps: every index of today but the callers' steps.
STATUS_FIELDS = (*AGENT_FIELDS, "status", "status_since", "reason")
BEFORE_STEPS_INDEXES = (
    (
        "agents_by_status_since",
        "status_q",
        "name_lower",
        "INCLUDE",
        (*AGENT_FIELDS, "status", "status_since", "reason"),
    ),
    ("agents_by_name", "type", "name_lower", "INCLUDE", ("agent_id", "name", "skills", "created_at")),
    ("waiting_by_arrival", "wait_q", "wait_since", "KEYS_ONLY", ()),
    ("waiting_to_relax", "relax_q", "relax_at", "KEYS_ONLY", ()),
)


def make_old_style(db, router, call) -> None:
    """Put a waiting caller back the way an earlier version kept them: in the single
    `WAITING` partition, without a count."""
    wanted = router.table.wanted(call.preferences)
    table = db.table("callcenter")
    db.call("delete_item", TableName=table, Key=marshal(keys.waiting_caller(wanted, call.wait_sk)))
    for copy in range(keys.WAIT_COUNT_COPIES):
        db.call(
            "update_item",
            TableName=table,
            Key=marshal(keys.waiting_count(wanted, copy)),
            UpdateExpression="ADD waiting :minus",
            ExpressionAttributeValues=marshal({":minus": -1}),
        )
    old = {"pk": keys.OLD_WAITING_PK, "sk": call.wait_sk, "type": "waiting", "call_id": call.call_id}
    db.call("put_item", TableName=table, Item=marshal(old))


def without_status_partition(db, agent_id: str) -> None:
    """An agent as a version before the spread status index wrote it: no `status_q`."""
    db.call(
        "update_item",
        TableName=db.table("callcenter"),
        Key=marshal(keys.agent(agent_id)),
        UpdateExpression="REMOVE status_q",
    )


def as_before_numbered_steps(db) -> None:
    """The callcenter table as a version before the upgrade steps were numbered left it: no
    record of the steps it has had, so `dynamo_tables create` runs every one."""
    db.call("delete_item", TableName=db.table("callcenter"), Key=marshal(keys.LAYOUT))


def an_unmarked_audit_entry(db, moment=None) -> dict:
    """An audit entry as a version before the trail's days were marked wrote it: the entry,
    and no marker of its day."""
    from queues_app.audit.store import AuditTrail

    trail = AuditTrail(db)
    item = trail.entry_item(actor="old", source="page", action="agent.update", target="agent:a1", moment=moment)
    db.call("put_item", TableName=trail.table_name, Item=marshal(item))
    return item
