"""The steps that bring the audit table's items to this version's layout (see
`upgrades.STEPS`)."""

from __future__ import annotations

from datetime import timedelta

from queues_app.audit.store import AuditTrail, day_partitions
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import parallel

DAY_FORMAT = "%Y-%m-%d"


def day_markers(table: CallCenterTable) -> int:
    """Each day of the retention that has entries but no marker (written before the days
    were marked) gets its marker, so the trail across days reads it: one Limit-1 Query of
    each of the day's partitions, a day's sent together. Returns how many days were marked."""
    trail = AuditTrail(table.db)
    today = trail.clock()
    days = [(today - timedelta(days=n)).strftime(DAY_FORMAT) for n in range(trail.retention_days + 1)]
    marked = set(trail.days_with_entries(days[-1], days[0]))

    def has_entries(partition: str) -> bool:
        found = table.db.query_partition(trail.table_name, partition, Limit=1, Select="COUNT")
        return found.get("Count", 0) > 0

    missing = [day for day in days if day not in marked and any(parallel.each(has_entries, day_partitions(day)))]
    trail.mark_days(missing)
    return len(missing)
