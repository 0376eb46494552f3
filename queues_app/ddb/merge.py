"""Several partitions read as one: each partition is queried in parallel and their items
are merged in the sort key's order (`SortedMerge`), or their counts summed (`query_each`).

A key spread over shards (`ddb/shards.py`), a queue's sub-queues, a day of the audit
trail, the waiting line's partitions: every reader that lists them in order merges them
here, so that paging across partitions (never losing or repeating an item) is written
once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from queues_app.ddb import parallel
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import unmarshal


def query_each(db: Dynamo, queries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One Query per set of parameters, run in parallel (one round trip rather than one
    per partition); the responses in the order of `queries`."""
    return parallel.each(lambda query: db.call("query", **query), queries)


@dataclass
class Partition:
    query: dict[str, Any]  # its Query, without Limit and ExclusiveStartKey
    start: dict[str, Any] | None = None  # where its next Query starts (ExclusiveStartKey)
    pending: list[dict] = field(default_factory=list)  # items read and not taken yet, as read
    read: bool = False

    @property
    def reading(self) -> bool:
        """Read, and not to its end yet."""
        return self.read and self.start is not None


class SortedMerge:
    """Partitions of an index, each read in its sort order (descending with
    `descending`), merged into one order: the sort key, then the partition (in the order
    of `queries`), then the partition's own order.

    DynamoDB orders items of equal sort keys in a partition in its own way, so equal
    values are not merged by any attribute: each partition's items of a value come
    together, in the order read, and in partition order. A partition whose reading
    stopped (its LastEvaluatedKey) holds back what may come after its stop in that order:
    later values, and the same value in later partitions."""

    def __init__(self, db: Dynamo, queries: Sequence[dict[str, Any]], *, sort_key: str, descending: bool = False):
        self.db = db
        self.partitions = [
            Partition({k: v for k, v in query.items() if k != "ExclusiveStartKey"}, query.get("ExclusiveStartKey"))
            for query in queries
        ]
        self.sort_key, self.descending = sort_key, descending

    def _after(self, key: tuple[str, int], stop: tuple[str, int]) -> bool:
        return key < stop if self.descending else key > stop

    def _stop(self, n: int) -> tuple[str, int]:
        start = self.partitions[n].start
        assert start is not None
        return unmarshal(start)[self.sort_key], n

    def _frontier(self) -> int | None:
        """The partition whose stop comes first (None: every partition read to its end)."""
        reading = [n for n, p in enumerate(self.partitions) if p.reading]
        if not reading:
            return None
        pick = max if self.descending else min
        return pick(reading, key=self._stop)

    def _ordered(self) -> list[tuple[tuple[str, int], int, dict]]:
        entries = [((item[self.sort_key], n), n, item) for n, p in enumerate(self.partitions) for item in p.pending]
        # A stable sort: a partition's items of one value stay in the order read.
        return sorted(entries, key=lambda entry: entry[0], reverse=self.descending)

    def due(self, room: int) -> list[Partition]:
        """The partitions to read before `room` more items can be taken: those not read yet
        and those still being read whose stop holds back the room-th item pending."""
        ordered = self._ordered()
        edge = ordered[room - 1][0] if room and len(ordered) >= room else None
        return [
            p
            for n, p in enumerate(self.partitions)
            if not p.read or (p.reading and (edge is None or self._after(edge, self._stop(n))))
        ]

    def read(
        self,
        partitions: Sequence[Partition],
        limit: int | Callable[[int, Partition], int],
        keep: Callable[[dict], bool] = lambda item: True,
    ) -> None:
        """One Query of each of `partitions` (in parallel), of up to `limit` items each (or
        `limit(n, partition)` for the n-th partition); `keep` picks the items (unmarshalled)
        to merge among those read."""
        read_together([(self, partitions, limit)], keep)

    def queries(self, partitions: Sequence[Partition], limit: int | Callable[[int, Partition], int]) -> list[dict]:
        numbered = [(next(n for n, q in enumerate(self.partitions) if q is p), p) for p in partitions]
        return [
            {
                **p.query,
                "Limit": limit(n, p) if callable(limit) else limit,
                **({"ExclusiveStartKey": p.start} if p.start else {}),
            }
            for n, p in numbered
        ]

    def each(self, page_size: int) -> Iterator[dict]:
        """Every item, in the merged order, each partition read a page at a time as the
        caller goes on (stopping early reads no further page)."""
        while True:
            due = self.due(1)
            if due:
                self.read(due, page_size)
            taken = self.take(page_size)
            if taken:
                yield from taken
            elif not due:
                return

    def take(self, count: int) -> list[dict]:
        """Up to `count` items in the merged order, as long as no partition may hold one
        before them unread."""
        if count <= 0 or not all(p.read for p in self.partitions):
            return []
        frontier = self._frontier()
        bound = None if frontier is None else self._stop(frontier)
        taken: list[tuple[int, dict]] = []
        for key, n, item in self._ordered():
            if len(taken) >= count or (bound is not None and self._after(key, bound)):
                break
            taken.append((n, item))
        for n in {n for n, _ in taken}:
            gone = {id(item) for m, item in taken if m == n}
            self.partitions[n].pending = [item for item in self.partitions[n].pending if id(item) not in gone]
        return [item for _, item in taken]

    def stop(self) -> dict[str, Any] | None:
        """Where every partition is read up to: the stop (a LastEvaluatedKey) that comes
        first; None when every partition is read to its end."""
        frontier = self._frontier()
        return None if frontier is None else self.partitions[frontier].start

    @property
    def more(self) -> bool:
        """Whether anything may be left: items read and not taken, or partitions not read
        to their end."""
        return any(p.pending or not p.read or p.reading for p in self.partitions)


def read_together(
    reads: Sequence[tuple[SortedMerge, Sequence[Partition], int | Callable[[int, Partition], int]]],
    keep: Callable[[dict], bool] = lambda item: True,
) -> None:
    """The reads of several merges (each: the merge, its partitions to read, their Limit)
    in one parallel round: one round trip for every partition of every merge."""
    planned = [
        (partition, query)
        for merge, partitions, limit in reads
        for partition, query in zip(partitions, merge.queries(partitions, limit), strict=True)
    ]
    responses = query_each(reads[0][0].db, [query for _, query in planned]) if planned else []
    for (partition, _), response in zip(planned, responses, strict=True):
        partition.pending += [item for item in map(unmarshal, response.get("Items", [])) if keep(item)]
        partition.start = response.get("LastEvaluatedKey")
        partition.read = True
