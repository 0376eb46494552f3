"""Load shedding that is counted instead of silent: the sweeper deletes pending tasks
that expired, counting each as shed with its age, and keeps per-minute totals."""

from __future__ import annotations

from datetime import datetime, timedelta

from queues_app.ddb import batch, errors
from queues_app.ddb.clock import from_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.tables import TASKS_BY_STATUS
from queues_app.figures import counters
from queues_app.tasks.records import SHED_STATS_PREFIX, ShedReport, TaskStatus
from queues_app.tasks.store import TaskStore


class Shedding:
    """Expired pending tasks deleted and counted as shed, with per-minute totals."""

    def __init__(self, store: TaskStore):
        self.store = store

    def sweep_expired(self, *, limit: int = 1000) -> ShedReport:
        """Count pending tasks that expired as shed, with their age, and delete them.
        Reads the pending index oldest first and stops at the first task still alive
        (creation order is expiry order for pending tasks)."""
        moment = self.store.clock()
        epoch = int(moment.timestamp())
        report = ShedReport()
        pages = (
            self.store.db.pages(
                "query",
                TableName=self.store.table_name,
                IndexName=TASKS_BY_STATUS.name,
                KeyConditionExpression="task_status = :pending",
                ExpressionAttributeValues=marshal({":pending": TaskStatus.PENDING}),
                ScanIndexForward=True,
                PaginationConfig={"PageSize": 100},
            )
            if limit > 0
            else iter(())
        )
        for page in pages:
            alive_seen = False
            for item in (unmarshal(i) for i in page.get("Items", [])):
                if int(item.get("expires_at", 0)) > epoch:
                    alive_seen = True
                    break
                age = self._delete_shed(item, epoch, moment)
                if age is not None:
                    report.shed += 1
                    report.ages_seconds.append(age)
            if alive_seen or report.shed >= limit:
                break  # no further page is read
        if report.shed:
            self._record_shed(report, moment)
            counters.note(self.store.db, counters.TASKS, "shed", report.shed)
        return report

    def _delete_shed(self, item: dict, epoch: int, moment: datetime) -> float | None:
        try:
            response = self.store.db.call(
                "delete_item",
                TableName=self.store.table_name,
                Key=marshal({"task_id": item["task_id"]}),
                ConditionExpression="task_status = :pending AND expires_at <= :epoch",
                ExpressionAttributeValues=marshal({":pending": TaskStatus.PENDING, ":epoch": epoch}),
                ReturnValues="ALL_OLD",
            )
        except errors.Conflict:
            return None  # taken, or deleted by TTL or another sweeper, meanwhile
        old = unmarshal(response.get("Attributes"))
        created = from_iso(old.get("created"))
        return (moment - created).total_seconds() if created else 0.0

    def _record_shed(self, report: ShedReport, moment: datetime) -> None:
        """Per-minute totals of shed tasks (count, summed and largest age) in a stats item."""
        minute = moment.strftime("%Y-%m-%dT%H:%M")
        self.store.db.call(
            "update_item",
            TableName=self.store.table_name,
            Key=marshal({"task_id": SHED_STATS_PREFIX + minute}),
            UpdateExpression="ADD shed :n, age_sum :sum SET #minute = :minute, expires_at = :expires",
            ExpressionAttributeNames={"#minute": "minute"},
            ExpressionAttributeValues=marshal(
                {
                    ":n": report.shed,
                    ":sum": round(sum(report.ages_seconds), 3),
                    ":minute": minute,
                    ":expires": int((moment + timedelta(days=2)).timestamp()),
                }
            ),
        )

    def shed_history(self, minutes: int = 60) -> list[dict]:
        """Shed counts for the last `minutes` minutes (one BatchGetItem per 100 minutes)."""
        moment = self.store.clock()
        keys = [SHED_STATS_PREFIX + (moment - timedelta(minutes=m)).strftime("%Y-%m-%dT%H:%M") for m in range(minutes)]
        rows = batch.get_items(self.store.db, self.store.table_name, [{"task_id": k} for k in keys])
        return sorted(
            (
                {"minute": r["minute"], "shed": int(r.get("shed", 0)), "age_sum": float(r.get("age_sum", 0))}
                for r in rows
            ),
            key=lambda r: r["minute"],
        )
