"""Every invariant of the live tables, as `check_invariants` checks them: the call
center's and the shipments', passes repeated until what is found holds still (a Scan
is not a snapshot; see docs/architecture.md)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from queues_app.agents.skills import SkillCatalog
from queues_app.centre import invariants as callcenter
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.scan import Violation
from queues_app.shipments import invariants as shipments

DEFAULT_PASSES = 3
DEFAULT_PAUSE = 0.5


@dataclass
class InvariantReport:
    violations: list[Violation] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    passes: int = 1

    @property
    def ok(self) -> bool:
        return not self.violations

    def summary(self) -> str:
        c = self.counts
        return (
            f"{c.get('agents', 0)} agents ({c.get('agents_queued', 0)} queued, "
            f"{c.get('agents_attending', 0)} attending), {c.get('queues', 0)} queue metadata items, "
            f"{c.get('messages', 0)} message items, {c.get('calls', 0)} calls "
            f"({c.get('calls_waiting', 0)} waiting, {c.get('calls_assigned', 0)} assigned, "
            f"{c.get('calls_ended', 0)} ended), {c.get('waiting_items', 0)} WAITING items, "
            f"{shipments.shipments_summary(c)}"
        )


def check_once(db: Dynamo | None = None, catalog: SkillCatalog | None = None) -> InvariantReport:
    """One pass: scan both tables, check, count."""
    db = db or default()
    catalog = catalog or SkillCatalog.from_settings()
    snap = callcenter.read_callcenter(db)
    items = shipments.read_shipments(db)
    return InvariantReport(
        violations=callcenter.check(snap, catalog) + shipments.check_shipments(items),
        counts={**callcenter.counts(snap), **shipments.shipment_counts(items)},
    )


def check(
    db: Dynamo | None = None,
    catalog: SkillCatalog | None = None,
    *,
    passes: int = DEFAULT_PASSES,
    pause: float = DEFAULT_PAUSE,
    sleep: Callable[[float], None] = time.sleep,
) -> InvariantReport:
    """Check both tables; while violations are found, re-run up to `passes` passes in all
    and keep only the violations found in every pass (as the last pass words them)."""
    db = db or default()
    catalog = catalog or SkillCatalog.from_settings()
    report = check_once(db, catalog)
    persistent = {v.key for v in report.violations}
    done = 1
    while persistent and done < passes:
        sleep(pause)
        report = check_once(db, catalog)
        done += 1
        persistent &= {v.key for v in report.violations}
    report.violations = [v for v in report.violations if v.key in persistent]
    report.passes = done
    return report


def find_violations(db: Dynamo | None = None, catalog: SkillCatalog | None = None, **options) -> list[Violation]:
    """The persistent violations only (see `audit`)."""
    return check(db, catalog, **options).violations
