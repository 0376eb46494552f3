"""Lists and counts of agents, a page at a time: in name order (`agents_by_name`), or a
status's agents (its partitions of the status index merged), filtered by name or skill,
with capped counts that cost the same with ten agents as with ten thousand."""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from queues_app.agents.records import AGENT_TYPE, Agent, AgentStatus, agent_from_item
from queues_app.agents.skills import SkillCatalog
from queues_app.centre import keys
from queues_app.ddb import batch, errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.merge import SortedMerge, query_each
from queues_app.ddb.paging import INVALID, Page, decode_cursor, encode_cursor
from queues_app.ddb.tables import AGENTS_BY_NAME, AGENTS_BY_STATUS

FILTERED_READ = 200  # agents a filtered list evaluates per Query (about 60 KB, 8 read units)
COUNT_CAP = 1_000  # a total beyond this shows as "1,000+"

# Cursors of the name-ordered list: after the last agent shown, or before the first.
AFTER, BEFORE = "agents:by-name", "agents:by-name:before"


class Ask(NamedTuple):
    """What a page of the list asks for."""

    backwards: bool
    limit: int
    search: str | None
    skill: tuple[str, str] | None
    max_reads: int


@dataclass
class NamePage(Page[Agent]):
    previous_cursor: str | None = None


def named(agent: Agent, search: str | None) -> bool:
    """A name search, matched on the agents read: `name_lower` is the name indexes' sort
    key, which DynamoDB does not let a FilterExpression name. It costs the same: DynamoDB
    charges for every item a Query evaluates, filtered or not."""
    return not search or search.lower() in agent.name.lower()


def name_key(agent: Agent) -> dict[str, Any]:
    """An agent's key in `agents_by_name` (where a page of the list of all agents starts
    or ends)."""
    return marshal({"type": AGENT_TYPE, "name_lower": agent.name.lower(), **keys.agent(agent.agent_id)})


def status_position(agent: Agent) -> dict[str, Any]:
    """Where an agent stands in a status's list (name, then key): the status's partitions
    are merged in this order, and a page of it starts or ends there."""
    return marshal({"name_lower": agent.name.lower(), **keys.agent(agent.agent_id)})


def shard_cap(cap: int) -> int:
    """What one of a status's partitions counts or reads of a total capped at `cap`: its
    share twice over and a few more. The hash spreads agents evenly, so a partition
    reaching it means the status is near `cap` anyway; the sum is what is capped."""
    return min(cap, 2 * math.ceil(cap / keys.STATUS_SHARDS) + 8)


class AgentPages:
    """The roster's lists and counts (a part of `Agents`)."""

    def __init__(self, db: Dynamo, catalog: SkillCatalog):
        self.db, self.catalog = db, catalog

    @property
    def table_name(self) -> str:
        return self.db.table("callcenter")

    def get_many(self, agent_ids: Iterable[str], *, consistent: bool = True) -> builtins.list[Agent]:
        """The agents that exist among `agent_ids` (BatchGetItem, 100 a request), any order."""
        wanted = [keys.agent(i) for i in dict.fromkeys(agent_ids)]
        found = batch.get_items(self.db, self.table_name, wanted, consistent=consistent)
        return [agent_from_item(item) for item in found]

    def ids_where(self, status: str, keep: Callable[[Agent], bool], cap: int) -> builtins.list[str]:
        """The ids of up to `cap` agents in `status` that `keep` accepts as the status index
        projects them (its partitions read a hundred at a time, in name order)."""
        found: builtins.list[str] = []
        cursor = None
        while len(found) < cap:
            page = self.list(status=status, limit=100, cursor=cursor, max_reads=8)
            found += [agent.agent_id for agent in page.items if keep(agent)]
            cursor = page.next_cursor
            if not cursor or not page.items:
                break
        return found[:cap]

    def list(
        self,
        *,
        cursor: str | None = None,
        before: str | None = None,
        limit: int = 50,
        status: str | None = None,
        search: str | None = None,
        skill: tuple[str, str] | None = None,
        max_reads: int = 4,
        purpose: str = "",
    ) -> NamePage:
        """A page of agents in name order: after `cursor` (the next page) or before `before`
        (the previous one). With a status, from the status index (that status's partitions
        merged: see `_status_page`); otherwise from `agents_by_name`, then the page's agents
        in one BatchGetItem (the index leaves out what changes with their status).

        Cost without a status: without a name or skill filter, one Query of `limit + 1`
        items (the extra one says whether there is a next page). A name or skill filter is
        matched on what is read: each Query evaluates up to FILTERED_READ agents and reads
        go on (at most `max_reads`) until the page is full, so a sparse filter still shows
        a page while the cost stays bounded; the page then ends where the reading stopped.
        With a status, the same a round at a time, a round being one Query of each of the
        status's partitions that may hold the page's next agent, in parallel."""
        self._check_status(status)
        backwards = bool(before)
        # A cursor serves the list it came from: this index and status (and `purpose`, a
        # list of something else read through the agents).
        after_purpose, before_purpose = f"{AFTER}:{status or ''}{purpose}", f"{BEFORE}:{status or ''}{purpose}"
        start = (
            decode_cursor(before, purpose=before_purpose) if backwards else decode_cursor(cursor, purpose=after_purpose)
        )
        ask = Ask(backwards, limit, search, skill, max_reads)
        if status:
            found, further = self._status_page(status, start, ask)
            edge = status_position
        else:
            found, further = self._name_page(start, ask)
            edge = name_key
        if backwards:
            found.reverse()
            if not found and not further:  # nothing before: show the first page instead
                return self.list(
                    limit=limit, status=status, search=search, skill=skill, max_reads=max_reads, purpose=purpose
                )
        if not status:
            found = self._whole(found)
        if backwards:
            return NamePage(
                items=found,
                next_cursor=encode_cursor(edge(found[-1]) if found else start, purpose=after_purpose),
                previous_cursor=encode_cursor(further, purpose=before_purpose),
            )
        return NamePage(
            items=found,
            next_cursor=encode_cursor(further, purpose=after_purpose),
            previous_cursor=(
                encode_cursor(edge(found[0]) if found else start, purpose=before_purpose) if start else None
            ),
        )

    def _name_page(self, start: dict[str, Any] | None, ask: Ask) -> tuple[builtins.list[Agent], dict[str, Any] | None]:
        """A page of `agents_by_name` from `start` (its key), in reading order, and the key
        a further page starts from (None: nothing further)."""
        backwards, limit, search, skill, max_reads = ask
        params = self._name_query(search=search, skill=skill)
        filtered = "FilterExpression" in params or bool(search)
        params["ScanIndexForward"] = not backwards
        found: builtins.list[Agent] = []
        last_read = start
        for _ in range(max_reads):
            params["Limit"] = FILTERED_READ if filtered else limit + 1 - len(found)
            if last_read:
                params["ExclusiveStartKey"] = last_read
            response = self.db.call("query", **params)
            found += [a for a in map(agent_from_item, map(unmarshal, response.get("Items", []))) if named(a, search)]
            last_read = response.get("LastEvaluatedKey")
            if not last_read or len(found) > limit:
                break
        further: dict[str, Any] | None = last_read  # every agent up to there was read: go on from it
        if len(found) > limit:
            found, further = found[:limit], name_key(found[limit - 1])
        return found, further

    def _status_page(
        self, status: str, start: dict[str, Any] | None, ask: Ask
    ) -> tuple[builtins.list[Agent], dict[str, Any] | None]:
        """A page of the agents in `status` after `start` (a position: see `status_position`;
        before it, backwards), in reading order, and the position a further page starts
        from (None: nothing further).

        The status's partitions are merged in name order (`SortedMerge`; agents of one name
        by partition, then as DynamoDB orders them in it). Without a filter, each
        partition's Query asks for `limit + 1` (the page and one more, to see beyond it),
        so one round fills the page however the agents spread. A filter reads
        FILTERED_READ a Query, at most `max_reads` rounds; a page left short then ends
        where every partition is read up to."""
        backwards, limit, search, skill, max_reads = ask
        queries = self._status_queries(status, skill=skill, backwards=backwards, after=_position(start))
        merge = SortedMerge(self.db, queries, sort_key="name_lower", descending=backwards)
        filtered = skill is not None or bool(search)
        found: builtins.list[Agent] = []
        for _ in range(max_reads):
            due = merge.due(limit - len(found))
            if not due or len(found) >= limit:
                break
            merge.read(due, FILTERED_READ if filtered else limit + 1, lambda item: named(agent_from_item(item), search))
            found += map(agent_from_item, merge.take(limit - len(found)))
        if not merge.more:
            return found, None
        if len(found) >= limit:
            return found, status_position(found[-1])
        stop = merge.stop()  # short: every agent up to there was read
        if stop is None:
            return found, None
        return found, {name: stop[name] for name in ("name_lower", "pk", "sk")}

    def _whole(self, listed: builtins.list[Agent]) -> builtins.list[Agent]:
        """The agents of a page read from `agents_by_name`, whole (one BatchGetItem, read
        eventually consistently as the index is), in the page's order; one deleted since
        is left out."""
        whole = {a.agent_id: a for a in self.get_many((a.agent_id for a in listed), consistent=False)}
        return [whole[a.agent_id] for a in listed if a.agent_id in whole]

    def count(
        self,
        *,
        status: str | None = None,
        search: str | None = None,
        skill: tuple[str, str] | None = None,
        cap: int = COUNT_CAP,
    ) -> tuple[int, bool]:
        """How many agents match, as (count, more): capped COUNT queries, so `more` means
        "at least": 1,000+ without a filter; with a name or skill filter, the matches among
        the agents read (at most `cap`, or `shard_cap(cap)` of each of a status's
        partitions)."""
        self._check_status(status)
        if status and not search and not skill:
            return self.count_by_status(cap=cap, statuses=(status,))[status]
        if status:
            queries = self._status_queries(status, skill=skill, Limit=shard_cap(cap))
        else:
            queries = [{**self._name_query(search=search, skill=skill), "Limit": cap}]
        if not search:
            responses = query_each(self.db, [{**q, "Select": "COUNT"} for q in queries])
            found = sum(r["Count"] for r in responses)
        else:
            # The name is the indexes' sort key, which a FilterExpression may not name: the
            # names are read (only they: about 30 bytes an agent) and matched here.
            responses = query_each(self.db, [{**q, "ProjectionExpression": "name_lower"} for q in queries])
            needle = search.lower()
            found = sum(needle in unmarshal(i).get("name_lower", "") for r in responses for i in r.get("Items", []))
        more = any(r.get("LastEvaluatedKey") for r in responses)
        return min(found, cap), more or found >= cap

    @staticmethod
    def _check_status(status: str | None) -> None:
        if status is not None and status not in AgentStatus.ALL:
            raise errors.InvalidRequest(f"Unknown agent status {status!r}.")

    def _skill_filter(self, skill: tuple[str, str] | None) -> dict[str, Any]:
        """The skill filter as a FilterExpression and its names and values (none without)."""
        if not skill:
            return {}
        dimension, value = skill
        if value not in self.catalog.values(dimension):
            raise errors.InvalidRequest(f"Unknown {dimension} {value!r}.")
        return {
            "FilterExpression": "contains(skills.#dim, :skill)",
            "ExpressionAttributeNames": {"#dim": dimension},
            "ExpressionAttributeValues": {":skill": {"S": value}},
        }

    def _name_query(self, *, search: str | None, skill: tuple[str, str] | None) -> dict[str, Any]:
        """Query parameters for all agents in name order (`agents_by_name`), with the skill
        filter as a FilterExpression (a name search is matched on what is read: see `named`)."""
        filters = self._skill_filter(skill)
        return {
            "TableName": self.table_name,
            "IndexName": AGENTS_BY_NAME.name,
            "KeyConditionExpression": "#type = :agent",
            **filters,
            "ExpressionAttributeNames": {"#type": "type", **filters.get("ExpressionAttributeNames", {})},
            "ExpressionAttributeValues": {":agent": {"S": AGENT_TYPE}, **filters.get("ExpressionAttributeValues", {})},
        }

    def _status_queries(
        self,
        status: str,
        *,
        skill: tuple[str, str] | None = None,
        after: tuple[str, str, str] | None = None,
        backwards: bool = False,
        **query,
    ) -> builtins.list[dict[str, Any]]:
        return status_queries(
            self.table_name, status, filters=self._skill_filter(skill), after=after, backwards=backwards, **query
        )

    def count_by_status(
        self, cap: int = 10_000, statuses: Iterable[str] = AgentStatus.ALL
    ) -> dict[str, tuple[int, bool]]:
        """Agents per status: a capped COUNT query of each of the status's partitions (each
        counting at most `shard_cap(cap)`), summed, all in parallel. Each value is
        (count, more): `more` means at least `count` (at least `cap`, but for an uneven
        spread)."""
        statuses = builtins.list(statuses)
        queries = [q for s in statuses for q in self._status_queries(s, Select="COUNT", Limit=shard_cap(cap))]
        responses = iter(query_each(self.db, queries))
        counts = {}
        for status in statuses:
            shards = [next(responses) for _ in range(keys.STATUS_SHARDS)]
            total = sum(r["Count"] for r in shards)
            counts[status] = (min(total, cap), total >= cap or any(r.get("LastEvaluatedKey") for r in shards))
        return counts

    def logged_in(self, cap: int = 2_000) -> tuple[builtins.list[Agent], bool]:
        """Agents who are not offline, read from the status index (at most `shard_cap(cap)`
        of each of a status's partitions, all in parallel). Returns (agents, more): `more`
        means some partition had more."""
        statuses = [s for s in AgentStatus.ALL if s != AgentStatus.OFFLINE]
        queries = [q for s in statuses for q in self._status_queries(s, Limit=shard_cap(cap))]
        responses = query_each(self.db, queries)
        agents = [agent_from_item(unmarshal(i)) for r in responses for i in r.get("Items", [])]
        return agents, any(r.get("LastEvaluatedKey") for r in responses)

    def any_exist(self) -> bool:
        """Whether any agent exists: a Limit-1 COUNT of each roster partition until one
        answers yes (one query when there are agents, all of them when there are none)."""
        return any(
            self.db.query_partition(self.table_name, pk, Limit=1, Select="COUNT")["Count"] > 0
            for pk in keys.agent_partitions()
        )


def status_queries(
    table: str,
    status: str,
    *,
    filters: dict[str, Any] | None = None,
    after: tuple[str, str, str] | None = None,
    backwards: bool = False,
    **query,
) -> list[dict[str, Any]]:
    """One Query per partition of `status` on the status index: its agents in name order
    (after the position `after`, or before it backwards), with `filters` (a
    FilterExpression and its values). Agents of one name are in partition order, so past a
    position, the partition of its agent goes on from that agent, the partitions before it
    from the next name, the partitions after it from the same name (backwards, the other
    way round)."""
    filters = filters or {}
    partitions = keys.status_partitions(status)
    at = partitions.index(keys.status_partition(status, keys.agent_id_from_sk(after[2]))) if after else None
    queries = []
    for n, partition in enumerate(partitions):
        condition, values = (
            f"{AGENTS_BY_STATUS.partition_key} = :q",
            {":q": {"S": partition}, **filters.get("ExpressionAttributeValues", {})},
        )
        params: dict[str, Any] = {"TableName": table, "IndexName": AGENTS_BY_STATUS.name, **filters, **query}
        if after and n == at:
            name, pk, sk = after
            params["ExclusiveStartKey"] = marshal({"status_q": partition, "name_lower": name, "pk": pk, "sk": sk})
        elif after:
            same_name = (n > (at or 0)) != backwards  # its agents of the name come after the position
            condition += f" AND name_lower {'<' if backwards else '>'}{'=' if same_name else ''} :name"
            values[":name"] = {"S": after[0]}
        queries.append(
            {
                **params,
                "KeyConditionExpression": condition,
                "ExpressionAttributeValues": values,
                "ScanIndexForward": not backwards,
            }
        )
    return queries


def _position(start: dict[str, Any] | None) -> tuple[str, str, str] | None:
    """A status list's position from its cursor (see `status_position`)."""
    if not start:
        return None
    try:
        return start["name_lower"]["S"], start["pk"]["S"], start["sk"]["S"]
    except KeyError as exc:
        raise errors.InvalidRequest(INVALID) from exc
