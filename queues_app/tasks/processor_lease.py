"""The task processor's lease: the project's one fenced lease (`ddb.lease.Lease`) on the
item `LEASE#<name>` of the tasks table. It has no `task_status`, so it never shows up in
the `by_status` index the queue reads."""

from __future__ import annotations

import time
from collections.abc import Callable

from queues_app.ddb.client import Dynamo
from queues_app.ddb.lease import Lease

LEASE_PREFIX = "LEASE#"
LEASE_NAME = "task-processor"


def processor_lease(
    db: Dynamo | None = None,
    *,
    name: str = LEASE_NAME,
    holder: str,
    duration: float = 15.0,
    margin: float | None = None,
    now: Callable[[], float] = time.time,
) -> Lease:
    """`holder`'s handle on the lease of the role `name` (the task processor's by default)."""
    return Lease(
        db,
        table="tasks",
        key={"task_id": LEASE_PREFIX + name},
        holder=holder,
        name=name,
        duration=duration,
        margin=margin,
        now=now,
    )
