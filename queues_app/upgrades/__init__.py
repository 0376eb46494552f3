"""Upgrades of the data an earlier version left in the tables: numbered steps, each run
once, in order, by `dynamo_tables create` (docs/deploy.md, "Upgrading").

The callcenter table holds the number of the last step applied (`keys.LAYOUT`). A run
applies the steps after it, each one idempotent and safe beside processes of the earlier
version still running (it moves an item only as it read it), and records each step's
number once it is done; a table created by this version is recorded as having had every
step, and runs none. The domain packages know only the layout of this version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.upgrades import audit, callcenter


@dataclass(frozen=True)
class Step:
    number: int
    moved: str  # what it moves, for "3 <moved>." ("waiting caller(s) moved into ...")
    run: Callable[[CallCenterTable], int]


# In the order the layouts changed; a new step takes the next number, never an old one's.
STEPS = (
    Step(1, "waiting caller(s) moved into the partition of their preferences", callcenter.waiting_line_by_preferences),
    Step(2, "copies of the waiting counts written", callcenter.waiting_count_copies),
    Step(3, "agent(s) moved into the roster's partitions", callcenter.roster_partitions),
    Step(4, "queue metadata item(s) spread over the metadata shards", callcenter.queue_metadata_shards),
    Step(5, "queued agent message(s) moved into their sub-queues", callcenter.sub_queues),
    Step(6, "agent(s) given their partition of the status index", callcenter.status_partitions),
    Step(7, "day(s) of the audit trail marked as having entries", audit.day_markers),
)
LATEST = STEPS[-1].number


@dataclass(frozen=True)
class Applied:
    step: Step
    moved: int


def applied(db: Dynamo) -> int:
    """The number of the last step the callcenter table has had (0: none yet)."""
    found = db.call("get_item", TableName=db.table("callcenter"), Key=marshal(keys.LAYOUT), ConsistentRead=True)
    return int(unmarshal(found["Item"]).get("step", 0)) if "Item" in found else 0


def upgrade(table: CallCenterTable) -> list[Applied]:
    """Apply the steps the table has not had, in order; what each moved."""
    done = applied(table.db)
    results = []
    for step in STEPS:
        if step.number <= done:
            continue
        results.append(Applied(step, step.run(table)))
        _record(table, step.number)
    return results


def start_new(table: CallCenterTable) -> None:
    """A table this version has just created holds nothing of an earlier one: every step
    is recorded as applied, none is run."""
    _record(table, LATEST)


def _record(table: CallCenterTable, number: int) -> None:
    try:
        table.db.call(
            "put_item",
            TableName=table.name,
            Item=marshal({**keys.LAYOUT, "step": number}),
            # Two runs at once both apply the step (it is idempotent); neither goes back.
            ConditionExpression="attribute_not_exists(pk) OR step < :step",
            ExpressionAttributeValues=marshal({":step": number}),
        )
    except errors.Conflict:
        pass  # another run recorded this step or a later one
