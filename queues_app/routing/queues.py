"""Each skill combination's queue: its metadata, its oldest agent, and the heads of its
sub-queues merged into the head of the queue."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from queues_app.agents.skills import matching_combinations, meets
from queues_app.calls.records import QueueOrder
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import batch
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import from_iso, now
from queues_app.ddb.merge import SortedMerge, read_together


@dataclass
class QueueInfo:
    """Metadata of one skill-combination queue (the article's `Q#Spanish#M` item)."""

    combination: tuple[str, ...]
    name: str
    depth: int = 0
    version: int = 0
    oldest_queued_at: str | None = None

    @property
    def oldest_age_seconds(self) -> float | None:
        oldest = from_iso(self.oldest_queued_at)
        return (now() - oldest).total_seconds() if oldest else None


REMEMBERED = "_remembered"  # a message served from a `HeadCache`, not read for this look


class HeadCache:
    """The heads of the queues this process read last (per table and combination, oldest
    first), for its next new callers' first look within `seconds`: the matching
    dispatcher's, which matches every new caller of its shards, so that what it read a
    moment ago is what the queues hold, less the agents it has taken since (left out by
    `usable`) and those queued since (after every head read: later in line). An agent
    taken meanwhile by another process fails its conditioned write, and the queues are
    read again (`forget`). Off (0 s) in every other process."""

    def __init__(self, seconds: float = 0.0):
        self.seconds = seconds
        self._heads: dict[tuple[str, tuple[str, ...]], tuple[float, list[dict]]] = {}
        self._lock = threading.Lock()

    def get(self, table: str, combo: tuple[str, ...], usable: Callable[[dict], bool]) -> list[dict] | None:
        """The head read of `combo` within `seconds`, less what `usable` leaves out; None
        when there is none, or nothing of it is left (the queue past it was not read)."""
        with self._lock:
            found = self._heads.get((table, combo))
        if found is None or time.monotonic() - found[0] > self.seconds:
            return None
        left = [item for item in found[1] if usable(item)]
        return left or None

    def put(self, table: str, combo: tuple[str, ...], head: list[dict]) -> None:
        """Keeps the head just read, each message marked as remembered when served again."""
        if self.seconds > 0:
            with self._lock:
                self._heads[(table, combo)] = (time.monotonic(), [{**item, REMEMBERED: True} for item in head])

    def forget(self, table: str) -> None:
        with self._lock:
            for key in [k for k in self._heads if k[0] == table]:
                del self._heads[key]

    def forget_all(self) -> None:
        with self._lock:
            self._heads.clear()


def queue_heads(
    db: Dynamo,
    table: str,
    combos: Sequence[tuple[str, ...]],
    limit: int,
    *,
    newest_first: bool = False,
    consistent: bool = True,
    keep: Callable[[dict], bool] | None = None,
    remembered: tuple[HeadCache, Callable[[dict], bool]] | None = None,
) -> list[list[dict]]:
    """The first messages of each combination's queue, oldest first (newest first with
    `newest_first`): one Query of each sub-queue (strongly consistent unless `consistent`
    is false), all sent at once, merged by token. A sub-queue that holds more than its
    page stops its queue's merge at the page's last token: past it, a message of that
    sub-queue could be missing, so each head is the queue's own first messages, none
    skipped (FIFO across sub-queues).

    With `keep` (a routing step's minimum levels), only the messages it keeps count, and a
    queue with none of them in its first page is read on, a page at a time, until it has
    one or ends: the earliest agent who meets the step is found however many who do not
    queued before.

    With `remembered` (a `HeadCache` and what of it is usable; an eventually consistent,
    oldest-first look without `keep`), the heads it holds are taken from it and only the
    other combinations read (and kept in it)."""
    if remembered is not None and not consistent and not newest_first and keep is None:
        return _remembered_heads(db, table, combos, limit, *remembered)
    merges = []
    for combo in combos:
        queries = [
            {
                "TableName": table,
                "KeyConditionExpression": "pk = :pk",
                "ExpressionAttributeValues": {":pk": {"S": pk}},
                "ConsistentRead": consistent,
                "ScanIndexForward": not newest_first,
            }
            for pk in keys.queue_partitions(combo)
        ]
        merges.append(SortedMerge(db, queries, sort_key="sk", descending=newest_first))
    if keep is None:
        read_together([(merge, merge.partitions, limit) for merge in merges])
        return [merge.take(limit * keys.QUEUE_SPLIT) for merge in merges]
    # The first read as without a step (most agents meet it); a queue that gave no one who
    # meets it is read on, in larger pages, until it does or ends.
    read_together([(merge, merge.partitions, limit) for merge in merges], keep)
    heads = []
    for merge in merges:
        head = merge.take(limit * keys.QUEUE_SPLIT)
        while not head and (due := merge.due(1)):
            merge.read(due, max(limit, STEP_PAGE), keep)
            head = merge.take(limit * keys.QUEUE_SPLIT)
        heads.append(head)
    return heads


def _remembered_heads(
    db: Dynamo,
    table: str,
    combos: Sequence[tuple[str, ...]],
    limit: int,
    cache: HeadCache,
    usable: Callable[[dict], bool],
) -> list[list[dict]]:
    """`queue_heads` from what `cache` holds, reading (and keeping) only the others."""
    known = {combo: cache.get(table, combo, usable) for combo in combos}
    missing = [combo for combo, head in known.items() if head is None]
    for combo, head in zip(missing, queue_heads(db, table, missing, limit, consistent=False), strict=True):
        cache.put(table, combo, head)
        known[combo] = head
    return [known[combo] or [] for combo in combos]


# Messages read per sub-queue and page while looking past agents below a routing step.
STEP_PAGE = 100


@dataclass(frozen=True)
class Candidate:
    """A queued agent seen at the head of a queue."""

    token: str
    agent_id: str
    name: str
    skills: dict
    queue: str  # the queue's name, whichever of its sub-queues the agent was read from
    levels: dict = field(default_factory=dict)  # their levels in that queue's combination, above 1
    version: int | None = None  # the agent's while queued (None: a message written before it said)
    remembered: bool = False  # served from the process's `HeadCache`, not read for this look

    @property
    def queued_at(self) -> str:
        return self.token.rsplit("#", 1)[0]


def queue_candidates(
    table: CallCenterTable,
    preferences: dict,
    order: str,
    limit: int,
    *,
    consistent: bool = True,
    min_level: dict[str, int] | None = None,
    admit: Callable[[dict], bool] | None = None,
    remembered: tuple[HeadCache, Callable[[dict], bool]] | None = None,
) -> list[Candidate]:
    """Heads of every queue that fits the preferences, merged in queue order (FIFO, or LIFO
    newest first): one Query of each of their sub-queues, all sent at once (`queue_heads`).
    With `min_level` (a routing step), only agents at those levels or above; with `admit`
    (their routing profiles), only the agents whose messages it admits."""
    combos = matching_combinations(table.catalog, preferences)
    newest_first = order == QueueOrder.LIFO

    def meets_all(item: dict) -> bool:
        return (not min_level or meets(item.get("lv") or {}, min_level)) and (admit is None or admit(item))

    keep = meets_all if min_level or admit else None
    heads = queue_heads(
        table.db,
        table.name,
        combos,
        limit,
        newest_first=newest_first,
        consistent=consistent,
        keep=keep,
        remembered=remembered,
    )
    seen: dict[str, Candidate] = {}
    for combo, head in zip(combos, heads, strict=True):
        for item in head:
            seen.setdefault(
                item["agent_id"],
                Candidate(
                    token=item["sk"],
                    agent_id=item["agent_id"],
                    name=item.get("name", ""),
                    skills=item.get("skills") or {},
                    queue=keys.queue_name(combo),
                    levels={k: int(v) for k, v in (item.get("lv") or {}).items()},
                    version=int(item["v"]) if "v" in item else None,
                    remembered=bool(item.get(REMEMBERED)),
                ),
            )
    return sorted(seen.values(), key=lambda c: c.token, reverse=newest_first)


def list_queues(table: CallCenterTable) -> list[QueueInfo]:
    """Every combination's metadata (its shards, read in BatchGetItems of a hundred keys)
    and its oldest agent (the oldest of its sub-queues' heads: one Query of each), so the
    cost depends on the number of combinations, not of agents."""
    combos = table.catalog.all_combinations()
    wanted = [keys.queue_meta(combo, shard) for combo in combos for shard in range(keys.QUEUE_META_SHARDS)]
    depth: Counter[str] = Counter()
    version: Counter[str] = Counter()
    for meta in batch.get_items(table.db, table.name, wanted, consistent=True):
        depth[meta["sk"]] += int(meta.get("depth", 0))
        version[meta["sk"]] += int(meta.get("version", 0))
    infos = []
    for combo in combos:
        name = keys.queue_name(combo)
        infos.append(QueueInfo(combination=combo, name=name, depth=depth[name], version=version[name]))
    queued = [info for info in infos if info.depth > 0]
    for info, head in zip(queued, queue_heads(table.db, table.name, [i.combination for i in queued], 1), strict=True):
        if head:
            info.oldest_queued_at = head[0]["sk"].rsplit("#", 1)[0]
    return infos
