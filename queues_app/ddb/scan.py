"""Whole-table reads for invariant checks: a paginated, strongly consistent Scan, and
what a check reports. Never on a request path: a Scan reads every item."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from queues_app.ddb.client import Dynamo


def scan_all(db: Dynamo, logical_table: str) -> Iterator[dict]:
    """Every item of one of the project's tables, page by page."""
    return db.items("scan", TableName=db.table(logical_table), ConsistentRead=True)


@dataclass(frozen=True)
class Violation:
    """One broken invariant: which check, about what (a queue, agent, call or item key),
    and what was found."""

    check: str
    subject: str
    detail: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.check, self.subject)

    def __str__(self) -> str:
        return f"[{self.check}] {self.subject}: {self.detail}"
