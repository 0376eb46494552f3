"""The line of callers waiting for an agent, in order of priority then arrival.

Callers wait in one partition per preference set (`WAIT#French#*`), each with a small
count item (`WAITCOUNT#French#*`, in `keys.WAIT_COUNT_COPIES` copies). An agent coming back reads the counts of the
partitions they fit in one BatchGetItem and the head of each non-empty one with a
Limit-1 Query, so the cost does not grow with the line's length. The whole line, in
order, is the non-empty partitions merged; by arrival, and the callers due for relaxing,
come from sparse indexes spread over `keys.LINE_SHARDS` partitions, merged.
Design: docs/architecture.md, "The waiting line".
"""

from __future__ import annotations

import dataclasses
import itertools
import random
from collections.abc import Callable, Iterator
from datetime import datetime

from queues_app import steps
from queues_app.agents.records import Agent
from queues_app.agents.skills import ANY
from queues_app.calls.records import Call, CallStatus
from queues_app.calls.store import CallExists, call_to_item
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable, leg
from queues_app.ddb import batch, errors
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.merge import SortedMerge
from queues_app.ddb.tables import WAITING_BY_ARRIVAL, WAITING_BY_STEP, WAITING_TO_RELAX, Index
from queues_app.figures import facts
from queues_app.lines.profiles import ProfileStore
from queues_app.lines.records import Line
from queues_app.text import counted


def with_line_requires(preferences: dict, line: Line) -> dict:
    """The caller's preferences with what their line requires: a dimension the caller left
    open takes the line's value; one they set otherwise is refused, naming it."""
    merged = dict(preferences)
    for dimension, value in line.requires.items():
        asked = merged.get(dimension, ANY)
        if asked is not ANY and asked != value:
            raise errors.InvalidRequest(
                f"line {line.line_id!r} takes {dimension} {value} only; this caller asked for {asked}.",
                field=f"preferences.{dimension}",
            )
        merged[dimension] = value
    return merged


def without_line_requires(preferences: dict, line: Line) -> dict:
    """The preferences with what `line` required opened up again (leaving the line)."""
    return {name: (ANY if name in line.requires else value) for name, value in preferences.items()}


# Waiting callers read per page past those an agent coming back does not meet the step of.
STEP_PAGE = 100


class LineFull(Exception):
    """The caller's line has `max_waiting` callers waiting already."""

    def __init__(self, line_id: str, max_waiting: int):
        super().__init__(f"Line {line_id!r} is full: at most {counted(max_waiting, 'caller')} may wait on it.")
        self.line_id, self.max_waiting = line_id, max_waiting


class WaitingLine:
    """Callers nobody could take yet, one item each in the partition of their preferences."""

    def __init__(self, table: CallCenterTable):
        self.table = table
        self.db = table.db
        self.catalog = table.catalog
        self.profiles = ProfileStore(self.db)

    # --- joining and leaving ----------------------------------------------------------

    def start_waiting(self, call: Call, *, max_waiting: int | None = None) -> Call:
        """The caller waits: their record, their place, their partition's and their line's
        counts, in one transaction. With `max_waiting`, only while their line has fewer
        callers waiting (`LineFull` otherwise)."""
        call.wait_sk = keys.wait_position(call.priority, call.arrived_at, call.call_id)
        actions = [
            {
                "Put": {
                    "TableName": self.table.name,
                    "Item": marshal(call_to_item(call)),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }
            },
            {"Put": {"TableName": self.table.name, "Item": marshal(self.wait_item(call))}},
            *self.table.count_updates(self.table.wanted(call.preferences), +1),
            self.table.fact_action(facts.OFFERED, call, call.arrived_at),  # it entered the line
            *self.preferred_note(call),
        ]
        line_count = len(actions)
        actions += self.table.line_count_update(call.line, +1, below=max_waiting)
        try:
            self.table.transact(actions)
        except errors.TransactionCancelled as exc:
            failed = exc.failed_indexes("ConditionalCheckFailed")
            if failed == [0]:
                raise CallExists() from exc
            if failed == [line_count]:
                raise LineFull(call.line or "", max_waiting or 0) from exc
            raise
        return call

    def wait_item(self, call: Call, *, relax_from: str | None = None) -> dict:
        """A waiting caller's place in line. `relax_from` (arrival by default) is when their
        next relaxation is counted from; a caller with nothing left to relax has none."""
        position = call.wait_sk or keys.wait_position(call.priority, call.arrived_at, call.call_id)
        shard = keys.line_shard(call.call_id)
        item = {
            **keys.waiting_caller(self.table.wanted(call.preferences), position),
            "type": "waiting",
            "call_id": call.call_id,
            "priority": call.priority,
            "arrived_at": call.arrived_at,
            "preferences": {k: v for k, v in call.preferences.items() if v is not ANY},
            "wait_q": shard,
            "wait_since": keys.wait_since(call.arrived_at, call.call_id, call.line),
        }
        if any(v is not ANY for v in call.preferences.values()):
            item.update(relax_q=shard, relax_at=relax_from or call.arrived_at)
        if call.steps:  # who may take them as they wait (queues_app/steps.py)
            item["steps"] = call.steps
        if call.preferred_agent_id:
            item.update(pref=call.preferred_agent_id, pref_until=call.preferred_until)
        if call.callback_number:  # the waiting list marks a queued callback with its last digits
            item["callback_tail"] = call.callback_number[-4:]
        delays = self.profiles.delays(call.line)
        due = steps.next_widening(call.steps, call.arrived_at, call.preferred_until, self.table.clock(), delays)
        if due is not None:  # when that widens: escalation offers them again then
            item.update(step_q=shard, step_due=to_iso(due))
        return item

    def preferred_note(self, call: Call) -> list[dict]:
        """The Put of the note that the caller waits for their preferred agent (read when
        that agent comes back; it expires with the preference), if they have one."""
        until = from_iso(call.preferred_until)
        if not call.preferred_agent_id or until is None:
            return []
        item = {
            **keys.preferred(call.preferred_agent_id, call.call_id),
            "preferred_until": call.preferred_until,
            "expires_at": int(until.timestamp()) + 3600,
        }
        return [{"Put": {"TableName": self.table.name, "Item": marshal(item)}}]

    def preferring(self, agent_id: str, moment: datetime) -> list[str]:
        """The callers kept for this agent at `moment` (some may no longer wait)."""
        response = self.db.query_partition(self.table.name, f"PREFER#{agent_id}", ConsistentRead=True)
        notes = [unmarshal(item) for item in response.get("Items", [])]
        return [note["sk"] for note in notes if note.get("preferred_until", "") > to_iso(moment)]

    # --- back in line: a missed offer, a transfer ------------------------------------

    def back_in_line(self, call: Call, stamp: str, how: str, agent: Agent, *, preferences: dict | None = None) -> Call:
        """The call as it waits again: its original place (priority, arrival), the agent's
        part recorded, and, for a transfer, its new preferences (the first ones kept)."""
        part = leg(dataclasses.replace(agent, status_since=call.assigned_at), stamp, how)
        back = dataclasses.replace(
            call,
            status=CallStatus.WAITING,
            agent_id=None,
            agent_name=None,
            assigned_at=None,
            offer_sk=None,
            version=call.version + 1,
            legs=[*call.legs, part],
            why=[],  # nobody is chosen while it waits again: the next assignment says why
        )
        if how == "transferred":  # answered already: a call assigned before answers were kept
            back.answered_at = call.answered_at or call.assigned_at  # was answered at its assignment
        if preferences is not None:
            back.first_asked = call.first_asked or call.asked_for
            back.preferences = preferences
            back.relaxed = []
        back.wait_sk = keys.wait_position(back.priority, back.arrived_at, back.call_id)
        return back

    def return_actions(self, call: Call, back: Call, *, condition_offer: bool) -> list[dict]:
        """The call's change back to waiting (`back`, from `back_in_line`), conditioned on
        its agent still having it (and, for a missed offer, the offer still standing), its
        place in line and its partition's count."""
        condition = "#status = :assigned AND agent_id = :agent"
        values = {
            ":waiting": CallStatus.WAITING,
            ":wait_sk": back.wait_sk,
            ":legs": back.legs,
            ":prefs": {k: v for k, v in back.preferences.items() if v is not ANY},
            ":first": back.first_asked,
            ":answered": back.answered_at,
            ":relaxed": back.relaxed,
            ":why": back.why,
            ":one": 1,
            ":assigned": CallStatus.ASSIGNED,
            ":agent": call.agent_id,
        }
        if condition_offer:
            condition += " AND offer_sk = :offer"
            values[":offer"] = call.offer_sk
        first = ", first_asked = :first" if back.first_asked is not None else ""
        first += ", answered_at = :answered" if back.answered_at is not None else ""
        return [
            self.table.update(
                keys.call(call.call_id),
                "SET #status = :waiting, wait_sk = :wait_sk, legs = :legs, preferences = :prefs, "
                f"relaxed = :relaxed, why = :why, version = version + :one{first} "
                "REMOVE agent_id, agent_name, assigned_at, offer_sk",
                values,
                condition=condition,
            ),
            {"Put": {"TableName": self.table.name, "Item": marshal(self.wait_item(back))}},
            *self.table.count_updates(self.table.wanted(back.preferences), +1),
            *self.table.line_count_update(back.line, +1),
        ]

    def load(self, calls: list[Call], *, at_once: int = 1) -> int:
        """Callers who start waiting together, for demo data and tests: their items in
        batches (`at_once` runs of them at the same time), then one ADD per partition to
        its count. Returns how many were loaded."""
        items: list[dict] = []
        counts: dict[tuple[str, ...], int] = {}
        on_lines: dict[str, int] = {}
        for call in calls:
            if call.line is not None:
                on_lines[call.line] = on_lines.get(call.line, 0) + 1
            call.status = CallStatus.WAITING
            call.wait_sk = keys.wait_position(call.priority, call.arrived_at, call.call_id)
            items += [call_to_item(call), self.wait_item(call)]
            wanted = self.table.wanted(call.preferences)
            counts[wanted] = counts.get(wanted, 0) + 1
        batch.load_items(self.db, self.table.name, items, at_once=at_once)
        offered = [self.table.fact_action(facts.OFFERED, call, call.arrived_at)["Put"] for call in calls]
        if offered:  # each entered the line, as a caller placed one at a time does
            facts_table = offered[0]["TableName"]
            batch.load_items(self.db, facts_table, [unmarshal(put["Item"]) for put in offered], at_once=at_once)
        for wanted, n in counts.items():
            self.table.transact(self.table.count_updates(wanted, n))
        for line_id, n in on_lines.items():
            self.table.transact(self.table.line_count_update(line_id, n))
        return len(calls)

    def on_line(self, line_ids: list[str]) -> dict[str, int]:
        """How many callers wait on each line (one BatchGetItem of their counts)."""
        found = batch.get_items(self.db, self.table.name, [keys.line_waiting(i) for i in line_ids], consistent=True)
        counted = {item["line_id"]: max(0, int(item.get("waiting", 0))) for item in found if "line_id" in item}
        return {line_id: counted.get(line_id, 0) for line_id in line_ids}

    # --- an agent coming back ---------------------------------------------------------

    def partitions_for(self, skills: dict[str, list[str]]) -> list[tuple[str, ...]]:
        """The preference sets an agent with these skills satisfies, `*` (any) included."""
        choices = [(*skills.get(name, ()), keys.ANY_VALUE) for name in self.catalog.names]
        return list(itertools.product(*choices))

    def counts(self, partitions: list[tuple[str, ...]] | None = None, *, consistent: bool = True) -> dict:
        """How many callers wait in each partition (all of them by default; empty ones are
        left out), read with one BatchGetItem per hundred partitions, from one copy of the
        counts picked at random (every copy holds the same counts)."""
        if partitions is None:
            partitions = self.partitions_for({name: list(values) for name, values in self.catalog.dimensions})
        copy = random.randrange(keys.WAIT_COUNT_COPIES)
        wanted = [keys.waiting_count(p, copy) for p in partitions]
        found = batch.get_items(self.db, self.table.name, wanted, consistent=consistent)
        return {tuple(item["wanted"]): int(item["waiting"]) for item in found if int(item.get("waiting", 0)) > 0}

    def heads_for(
        self,
        skills: dict[str, list[str]],
        *,
        consistent: bool = True,
        takes: Callable[[dict], bool] | None = None,
        counts: dict | None = None,
    ) -> list[dict]:
        """The first caller of every partition the agent fits, in line order: the first
        of them is the longest-waiting caller (priority, then arrival) they fit. Read
        eventually consistently when `consistent` is false, as the counts are (half the
        read units): a head already taken is skipped when its call is read strongly; a
        caller who joined in the last moments may be missed, as by the counts, and is
        found by the look after queueing, which reads strongly. With `takes` (whether the
        agent meets a caller's routing step), a partition is read on past the callers it
        refuses, a page at a time, to the first it takes. `counts`: the partitions' counts as
        just read (`counts`), for a second look at the same parts of the line."""
        heads = []
        for wanted in counts if counts is not None else self.counts(self.partitions_for(skills), consistent=consistent):
            pk = keys.waiting_caller(wanted, "")["pk"]
            start: dict | None = None
            limit = 1
            while True:
                more = {"ExclusiveStartKey": start} if start else {}
                response = self.db.query_partition(self.table.name, pk, ConsistentRead=consistent, Limit=limit, **more)
                items = [unmarshal(i) for i in response.get("Items", [])]
                found = [item for item in items if takes is None or takes(item)][:1]
                start = response.get("LastEvaluatedKey")
                if found or not start:
                    heads += found
                    break
                limit = STEP_PAGE
        return sorted(heads, key=lambda item: item["sk"])

    # --- the whole line -----------------------------------------------------------------

    def _in_order(self, *, after: str | None = None, page_size: int = 100) -> Iterator[dict]:
        """Every waiting caller in line order (priority, then arrival), after the position
        `after`: the non-empty partitions (their counts, one BatchGetItem) read a page at a
        time and merged. Costs one Query per non-empty partition per page, whatever the length."""
        queries = []
        for wanted in self.counts(consistent=False):
            condition, values = "pk = :pk", {":pk": {"S": keys.waiting_caller(wanted, "")["pk"]}}
            if after is not None:
                condition += " AND sk > :after"
                values[":after"] = {"S": after}
            queries.append(
                {"TableName": self.table.name, "KeyConditionExpression": condition, "ExpressionAttributeValues": values}
            )
        return SortedMerge(self.db, queries, sort_key="sk").each(page_size)

    def _across_shards(self, index: Index, *, below: str | None = None, page_size: int = 100) -> Iterator[dict]:
        """Every item of a sparse waiting-line index in its sort key's order (below `below`,
        when given): its `keys.LINE_SHARDS` partitions read a page at a time and merged."""
        sort_key = index.sort_key or ""
        condition = f"{index.partition_key} = :q" + (f" AND {sort_key} < :below" if below is not None else "")
        queries = [
            {
                "TableName": self.table.name,
                "IndexName": index.name,
                "KeyConditionExpression": condition,
                "ExpressionAttributeValues": {
                    ":q": {"S": shard},
                    **({":below": {"S": below}} if below is not None else {}),
                },
            }
            for shard in keys.line_shards()
        ]
        return SortedMerge(self.db, queries, sort_key=sort_key).each(page_size)

    def _by_arrival(self, page_size: int = 100) -> Iterator[dict]:
        """Every waiting caller by arrival (`waiting_by_arrival`)."""
        return self._across_shards(WAITING_BY_ARRIVAL, page_size=page_size)

    def everyone(self, page_size: int = 100) -> Iterator[dict]:
        """The whole waiting line in order, read a page at a time as it is consumed."""
        return self._in_order(page_size=page_size)

    def waiting_calls(self, *, limit: int = 50, cursor: dict | None = None) -> tuple[list[dict], dict | None]:
        """The waiting line in order (priority, then arrival), a page at a time. The cursor
        is the last caller's position, in the shape of a DynamoDB key."""
        after = cursor["sk"]["S"] if cursor and isinstance(cursor.get("sk"), dict) else None
        found = list(itertools.islice(self._in_order(after=after, page_size=limit + 1), limit + 1))
        page = found[:limit]
        more = len(found) > limit
        return page, ({"sk": {"S": page[-1]["sk"]}} if more else None)

    def count_waiting(self, cap: int = 1000) -> tuple[int, bool]:
        """How many callers wait (from the partitions' counts; one BatchGetItem). Returns
        (count, more): at most `cap`, and `more` is True when there are at least `cap`."""
        total = sum(self.counts().values())
        return min(total, cap), total >= cap

    def longest_waiting_since(self) -> str | None:
        """When the caller who has waited longest arrived (one Limit-1 Query per index
        partition of `waiting_by_arrival`), or None when nobody waits."""
        oldest = next(self._by_arrival(page_size=1), None)
        return keys.parse_wait_since(oldest["wait_since"])[0] if oldest else None

    def oldest_by_partition(self, partitions: set[tuple[str, ...]], *, cap: int = 1000) -> dict:
        """When the longest-waiting caller of each partition arrived: the line by arrival,
        read until every partition asked for has shown up (or `cap` callers were read)."""
        oldest: dict[tuple[str, ...], str] = {}
        if not partitions:
            return oldest
        by_arrival = self._by_arrival(page_size=min(cap, 100))
        for item in itertools.islice(by_arrival, cap):
            wanted = tuple(item["pk"].removeprefix(keys.WAIT_PREFIX).split("#"))
            if wanted in partitions and wanted not in oldest:
                oldest[wanted] = keys.parse_wait_since(item["wait_since"])[0]
                if len(oldest) == len(partitions):
                    break
        return oldest

    def oldest_by_line(self, line_ids: set[str], *, cap: int = 1000) -> dict[str, str]:
        """When the longest-waiting caller of each line arrived: the line by arrival, read
        until every line asked for has shown up (or `cap` callers were read)."""
        oldest: dict[str, str] = {}
        if not line_ids:
            return oldest
        for item in itertools.islice(self._by_arrival(page_size=min(cap, 100)), cap):
            arrived, line_id = keys.parse_wait_since(item["wait_since"])
            if line_id in line_ids and line_id not in oldest:
                oldest[line_id] = arrived
                if len(oldest) == len(line_ids):
                    break
        return oldest

    def waited_past(self, before: datetime, page_size: int = 100) -> Iterator[tuple[str, str, str | None]]:
        """Callers who arrived before `before`, oldest first: (arrival, call id, line)."""
        cutoff = to_iso(before)
        for item in self._by_arrival(page_size=page_size):
            arrived, line_id = keys.parse_wait_since(item["wait_since"])
            if arrived >= cutoff:
                return
            yield arrived, keys.parse_wait_position(item["sk"])[2], line_id

    def step_expired(self, before: datetime, page_size: int = 100) -> Iterator[dict]:
        """Callers whose routing step in force expired before `before`, oldest first."""
        return self._across_shards(WAITING_BY_STEP, below=to_iso(before), page_size=page_size)

    def due_for_relaxing(self, before: datetime, page_size: int = 100) -> Iterator[dict]:
        """Callers with preferences left to relax whose last change (or arrival) came
        before `before`, oldest first: escalation reads only these."""
        return self._across_shards(WAITING_TO_RELAX, below=to_iso(before), page_size=page_size)

    # --- callers written by an earlier version ----------------------------------------------
