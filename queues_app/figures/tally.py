"""Counting call facts into the service-level figures, each exactly once.

A fact (`figures/facts.py`) is counted by one TransactWriteItems that ADDs its figures
to their items (the minute's, the centre's day's, the quarter hour's) and deletes the fact
on the condition that it is still there. Two processes counting the same fact cannot both
succeed, and a process that dies before its transaction leaves the fact for the next one:
no figure is doubled or lost, whoever counts and whenever they die.

Two counters share the work: each process counts the facts its own changes wrote at its
next flush, by key (`count_expected`, one BatchGetItem); `collect_metrics` sweeps every
fact partition on each pass (`sweep`) and counts whatever is left, such as the facts of a
process that died or has not flushed. Design and cost: docs/scale.md.
"""

from __future__ import annotations

import logging
import random
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from queues_app.ddb import batch, errors, parallel
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import from_iso, now
from queues_app.ddb.codec import marshal
from queues_app.figures import agent_days, facts, service_level
from queues_app.figures.counters import MetricsStore
from queues_app.lines.store import Promise
from queues_app.lines.store import promises as line_promises

log = logging.getLogger(__name__)

# Each ended call's preferences as first asked, when it was first answered and its line,
# read from the call records: set by the app's ready() to `calls.store.first_answers` (the figures
# import nothing of the domains).
CallAnswers = Callable[[Dynamo, list[str]], dict[str, tuple[Mapping | None, str | None, str | None]]]
_call_answers: CallAnswers | None = None


def read_answers_with(reader: CallAnswers | None) -> None:
    global _call_answers
    _call_answers = reader


# DynamoDB takes 100 actions in a transaction: each fact is one Delete, and each figure
# item its facts add to is one Update (three per combination and minute).
MAX_ACTIONS = 100
ATTEMPTS = 3

Key = tuple[str, str]


@dataclass
class Fact:
    key: Key
    kind: str
    call_id: str
    at: datetime
    combination: str | None
    seconds: float | None
    line: str | None = None
    item: dict = field(default_factory=dict)  # as stored: an agent's change of status is read from it

    @classmethod
    def from_item(cls, item: dict) -> Fact:
        seconds = item.get("seconds")
        status = item["kind"] == facts.STATUS  # nothing to read from a call's record
        return cls(
            key=(item["pk"], item["sk"]),
            kind=item["kind"],
            call_id=item.get("call_id") or "",
            at=from_iso(item["at"]) or now(),
            combination=item.get("combination"),
            seconds=0.0 if status else (float(seconds) if seconds is not None else None),
            line=item.get("line"),
            item=item,
        )


@dataclass
class TallyReport:
    counted: int = 0  # facts added to the figures by this pass
    already: int = 0  # facts someone else counted first
    left: list[Key] = field(default_factory=list)  # not counted this time (a race, an error)


class Tally:
    def __init__(self, db: Dynamo, clock: Callable[[], datetime] = now):
        self.db = db
        self.store = MetricsStore(db, clock)
        self.clock = clock

    @property
    def table_name(self) -> str:
        return self.db.table("metrics")

    # --- finding facts ------------------------------------------------------------------

    def count_expected(self, keys: list[Key]) -> list[Key]:
        """Count the facts of these keys that exist; return the keys not counted (not
        there, maybe not yet, or lost to a race)."""
        wanted = [{"pk": pk, "sk": sk} for pk, sk in keys]
        found = [Fact.from_item(item) for item in batch.get_items(self.db, self.table_name, wanted, consistent=True)]
        there = {fact.key for fact in found}
        report = self.count(found)
        return [key for key in keys if key not in there] + report.left

    def sweep(self) -> TallyReport:
        """Count every fact waiting in every partition (one Query each, sent together)."""

        def read(partition: str) -> list[Fact]:
            items = self.db.partition_items(self.table_name, partition, ConsistentRead=True)
            return [Fact.from_item(item) for item in items]

        waiting = [fact for part in parallel.each(read, facts.partitions()) for fact in part]
        return self.count(waiting)

    # --- counting -----------------------------------------------------------------------

    def count(self, found: list[Fact]) -> TallyReport:
        report = TallyReport()
        self._complete(found)
        for chunk in self._chunks(found):
            self._count_chunk(chunk, report)
        return report

    def _chunks(self, found: list[Fact]) -> list[list[Fact]]:
        """As many facts per transaction as fit: the fewer transactions, the fewer writes to
        the figure items every counter shares."""
        chunks: list[list[Fact]] = []
        chunk: list[Fact] = []
        items: set[Key] = set()
        for fact in sorted(found, key=lambda f: (f.at, f.key)):
            wanted = {(pk, sk) for pk, sk, _, _ in self._figures(fact, {})}
            if chunk and len(chunk) + 1 + len(items | wanted) > MAX_ACTIONS:
                chunks.append(chunk)
                chunk, items = [], set()
            chunk.append(fact)
            items |= wanted
        return [*chunks, chunk] if chunk else chunks

    @staticmethod
    def _figures(fact: Fact, promises: dict[str, Promise], shard: int = 0):
        """(pk, sk, how long kept, (sums, maxima)) of each item a fact adds to: its
        combination's, and its line's by the line's own promise; an agent's day for a change
        of their status or a call they answered."""
        if fact.kind == facts.STATUS:
            for pk, sk, keep, values in agent_days.status_figures(fact.item):
                yield pk, sk, keep, (values, {})
            return
        seconds = fact.seconds or 0.0
        if fact.kind == facts.ANSWERED and fact.item.get("agent_id"):
            promise = promises.get(fact.line) if fact.line else None
            for pk, sk, keep, values in agent_days.answered_figures(fact.item, seconds, promise):
                yield pk, sk, keep, (values, {})
        counted = service_level.fact_figures(fact.kind, seconds)
        for pk, sk, keep in service_level.figure_keys(fact.at, fact.combination or "any", shard):
            yield pk, sk, keep, counted
        if fact.line:
            by_line = service_level.line_fact_figures(fact.kind, seconds, promises.get(fact.line))
            for pk, sk, keep in service_level.line_figure_keys(fact.at, fact.line, shard):
                yield pk, sk, keep, by_line

    def _complete(self, found: list[Fact]) -> None:
        """An ended call's combination, line and handle time, from its record (one
        BatchGetItem): its handle time counts for the line that answered it."""
        missing = [fact for fact in found if fact.seconds is None]
        if not missing:
            return
        if _call_answers is None:
            raise RuntimeError("figures.tally.read_answers_with was not called (the app's ready() calls it)")
        answers = _call_answers(self.db, sorted({fact.call_id for fact in missing}))
        for fact in missing:
            asked, answered, line = answers.get(fact.call_id, (None, None, None))
            answered_at = from_iso(answered)
            fact.combination, fact.line = facts.combination_name(asked), fact.line or line
            if answered_at is None:
                log.warning("call %s ended with no record of its answer: counted with no handle time", fact.call_id)
                fact.seconds = 0.0
                continue
            fact.seconds = round(max(0.0, (fact.at - answered_at).total_seconds()), 3)

    def _count_chunk(self, chunk: list[Fact], report: TallyReport) -> None:
        for _attempt in range(ATTEMPTS):
            if not chunk:
                return
            sums: dict[Key, dict[str, float]] = defaultdict(lambda: defaultdict(float))
            peaks: dict[tuple[str, str, str], float] = {}
            kept: dict[Key, timedelta | None] = {}
            promises = line_promises(self.db) if any(fact.line for fact in chunk) else {}
            # The figure partitions' shard this transaction adds to: one for all its items,
            # so that the chunk holds as many as it was planned with.
            shard = random.randrange(service_level.FIGURE_SHARDS)
            for fact in chunk:
                for pk, sk, keep, (values, maxima) in self._figures(fact, promises, shard):
                    kept[(pk, sk)] = keep
                    for name, value in values.items():
                        sums[(pk, sk)][name] += value
                    for name, value in maxima.items():
                        peaks[(pk, sk, name)] = max(value, peaks.get((pk, sk, name), value))
            # A maximum is idempotent: raised before the sums, it is right whether or not
            # the transaction below goes through (the fact then raises it again).
            for (pk, sk, name), value in peaks.items():
                self.store.raise_peak(pk, sk, name, value, kept[(pk, sk)])
            deletes = [
                {
                    "Delete": {
                        "TableName": self.table_name,
                        "Key": marshal({"pk": fact.key[0], "sk": fact.key[1]}),
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                }
                for fact in chunk
            ]
            updates = [
                self.store.add_action(pk, sk, dict(values), keep=kept[(pk, sk)]) for (pk, sk), values in sums.items()
            ]
            try:
                self.db.call("transact_write_items", TransactItems=deletes + updates)
            except errors.TransactionCancelled as exc:
                gone = set(exc.failed_indexes("ConditionalCheckFailed"))
                if not gone:  # a concurrent writer (another counter): the next pass
                    report.left += [fact.key for fact in chunk]
                    return
                report.already += len(gone)
                chunk = [fact for index, fact in enumerate(chunk) if index not in gone]
                continue
            report.counted += len(chunk)
            return
        report.left += [fact.key for fact in chunk]


def count_expected(db: Dynamo, keys: list[Key]) -> list[Key]:
    """What `counters.MetricsStore.flush` calls with the facts this process wrote."""
    return Tally(db).count_expected(keys)
