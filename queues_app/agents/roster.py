"""Agents: the people who take calls, stored in the call-center table."""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from queues_app.agents import keys
from queues_app.agents.records import Agent, AgentStatus
from queues_app.agents.skills import SkillCatalog
from queues_app.ddb import batch, errors
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.paging import Page, decode_cursor, encode_cursor

AGENT_TYPE = "agent"
NAME_INDEX = "agents_by_name"  # name and skills only: the list reads the page's agents after
STATUS_INDEX = "agents_by_status"  # by status, then name: the agent's fields
FILTERED_READ = 200  # agents a filtered list evaluates per Query (about 60 KB, 8 read units)
COUNT_CAP = 1_000  # a total beyond this shows as "1,000+"
# Cursors of the name-ordered list: after the last agent shown, or before the first.
AFTER, BEFORE = "agents:by-name", "agents:by-name:before"


@dataclass
class NamePage(Page[Agent]):
    previous_cursor: str | None = None


def named(agent: Agent, search: str | None) -> bool:
    """A name search, matched on the agents read: `name_lower` is the name indexes' sort
    key, which DynamoDB does not let a FilterExpression name. It costs the same: DynamoDB
    charges for every item a Query evaluates, filtered or not."""
    return not search or search.lower() in agent.name.lower()


def name_key(agent: Agent, status: str | None = None) -> dict[str, Any]:
    """An agent's key in the index a list in name order reads (where a page starts or
    ends): `agents_by_status` for a status, `agents_by_name` otherwise."""
    partition = {"status": status} if status else {"type": AGENT_TYPE}
    return marshal({**partition, "name_lower": agent.name.lower(), **keys.agent(agent.agent_id)})


def new_agent_id() -> str:
    return uuid.uuid4().hex[:12]


def agent_to_item(agent: Agent) -> dict:
    return {
        **keys.agent(agent.agent_id),
        "type": AGENT_TYPE,
        "agent_id": agent.agent_id,
        "name": agent.name,
        "name_lower": agent.name.lower(),
        "skills": agent.skills,
        "status": agent.status,
        "version": agent.version,
        "created_at": agent.created_at,
        "updated_at": agent.updated_at,
        "queued_at": agent.queued_at,
        "queue_token": agent.queue_token,
        "call_id": agent.call_id,
    }


def agent_from_item(item: dict) -> Agent:
    return Agent(
        agent_id=item["agent_id"],
        name=item["name"],
        skills={k: list(v) for k, v in (item.get("skills") or {}).items()},
        status=item.get("status", AgentStatus.OFFLINE),
        version=int(item.get("version", 1)),
        created_at=item.get("created_at", ""),
        updated_at=item.get("updated_at", ""),
        queued_at=item.get("queued_at"),
        queue_token=item.get("queue_token"),
        call_id=item.get("call_id"),
    )


class Agents:
    """Create, read and list agents."""

    def __init__(self, db: Dynamo | None = None, catalog: SkillCatalog | None = None):
        self.db = db or default()
        self.catalog = catalog or SkillCatalog.from_settings()

    @property
    def table(self) -> str:
        return self.db.table("callcenter")

    def build(self, name: str, skills: dict[str, list[str]], agent_id: str | None = None) -> Agent:
        name = (name or "").strip()
        if not name:
            raise errors.InvalidRequest("An agent needs a name.")
        stamp = to_iso(now())
        return Agent(
            agent_id=agent_id or new_agent_id(),
            name=name,
            skills=self.catalog.validate_agent_skills(skills),
            created_at=stamp,
            updated_at=stamp,
        )

    def create(self, name: str, skills: dict[str, list[str]], agent_id: str | None = None) -> Agent:
        agent = self.build(name, skills, agent_id)
        try:
            self.db.call(
                "put_item",
                TableName=self.table,
                Item=marshal(agent_to_item(agent)),
                ConditionExpression="attribute_not_exists(pk)",
            )
        except errors.Conflict as exc:
            raise errors.Conflict(f"An agent with id {agent.agent_id!r} exists already.") from exc
        return agent

    def update(self, agent_id: str, *, name: str, skills: dict[str, list[str]], expected_version: int) -> Agent:
        """Rename or change skills. Refused while the agent is queued or attending, because
        their message items were written for the old skills."""
        name = (name or "").strip()
        if not name:
            raise errors.InvalidRequest("An agent needs a name.")
        clean = self.catalog.validate_agent_skills(skills)
        try:
            response = self.db.call(
                "update_item",
                TableName=self.table,
                Key=marshal(keys.agent(agent_id)),
                UpdateExpression="SET #name = :name, name_lower = :lower, skills = :skills, "
                "version = version + :one, updated_at = :now",
                ConditionExpression="attribute_exists(pk) AND version = :expected "
                "AND NOT #status IN (:queued, :attending)",
                ExpressionAttributeNames={"#name": "name", "#status": "status"},
                ExpressionAttributeValues=marshal(
                    {
                        ":name": name,
                        ":lower": name.lower(),
                        ":skills": clean,
                        ":one": 1,
                        ":now": to_iso(now()),
                        ":expected": expected_version,
                        ":queued": AgentStatus.QUEUED,
                        ":attending": AgentStatus.ATTENDING,
                    }
                ),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except errors.Conflict as exc:
            raise self._edit_conflict(agent_id, exc.current, expected_version) from exc
        return agent_from_item(unmarshal(response["Attributes"]))

    @staticmethod
    def _edit_conflict(agent_id: str, current: dict | None, expected_version: int) -> errors.DynamoError:
        if not current:
            return errors.NotFound(f"No agent with id {agent_id!r}.")
        if current.get("status") in (AgentStatus.QUEUED, AgentStatus.ATTENDING):
            label = AgentStatus.LABELS[current["status"]].lower()
            return errors.Conflict(
                f"{current['name']} is {label}; log them off before changing their skills.", current=current
            )
        return errors.Conflict(
            f"{current['name']} was changed by someone else (version {current.get('version')}, "
            f"you edited version {expected_version}); reload and try again.",
            current=current,
        )

    def create_many(self, agents: Iterable[Agent], on_batch=None) -> int:
        """Bulk insert for demo data and imports (no existence check)."""
        return batch.put_items(self.db, self.table, (agent_to_item(a) for a in agents), on_batch=on_batch)

    def get(self, agent_id: str) -> Agent:
        response = self.db.call(
            "get_item", TableName=self.table, Key=marshal(keys.agent(agent_id)), ConsistentRead=True
        )
        if "Item" not in response:
            raise errors.NotFound(f"No agent with id {agent_id!r}.")
        return agent_from_item(unmarshal(response["Item"]))

    def get_many(self, agent_ids: Iterable[str], *, consistent: bool = True) -> builtins.list[Agent]:
        """The agents that exist among `agent_ids` (BatchGetItem, 100 a request), any order."""
        wanted = [keys.agent(i) for i in dict.fromkeys(agent_ids)]
        return [agent_from_item(item) for item in batch.get_items(self.db, self.table, wanted, consistent=consistent)]

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
        (the previous one). With a status, from `agents_by_status` (that status's agents in
        name order); otherwise from `agents_by_name`, then the page's agents in one
        BatchGetItem (the index leaves out what changes with their status).

        Cost: without a name or skill filter, one Query of `limit + 1` items (the extra one
        says whether there is a next page). A name or skill filter is matched on what is
        read: each Query evaluates up to FILTERED_READ agents and reads go on (at most
        `max_reads`) until the page is full, so a sparse filter still shows a page while
        the cost stays bounded; the page then ends where the reading stopped."""
        params = self._name_query(status=status, search=search, skill=skill)
        filtered = "FilterExpression" in params or bool(search)
        backwards = bool(before)
        # A cursor serves the list it came from: this index and status (and `purpose`, a
        # list of something else read through the agents).
        after_purpose, before_purpose = f"{AFTER}:{status or ''}{purpose}", f"{BEFORE}:{status or ''}{purpose}"
        start = (
            decode_cursor(before, purpose=before_purpose) if backwards else decode_cursor(cursor, purpose=after_purpose)
        )
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
            found, further = found[:limit], name_key(found[limit - 1], status)
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
                next_cursor=encode_cursor(name_key(found[-1], status) if found else start, purpose=after_purpose),
                previous_cursor=encode_cursor(further, purpose=before_purpose),
            )
        return NamePage(
            items=found,
            next_cursor=encode_cursor(further, purpose=after_purpose),
            previous_cursor=(
                encode_cursor(name_key(found[0], status) if found else start, purpose=before_purpose) if start else None
            ),
        )

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
        """How many agents match, as (count, more): one COUNT Query that evaluates at most
        `cap` agents, so `more` means "at least": 1,000+ without a filter; with a name or
        skill filter, the matches among the first `cap` agents read."""
        if status and not search and not skill:
            return self.count_by_status(cap=cap, statuses=(status,))[status]
        params = self._name_query(status=status, search=search, skill=skill)
        params["Limit"] = cap
        if not search:
            response = self.db.call("query", **params, Select="COUNT")
            return response["Count"], bool(response.get("LastEvaluatedKey"))
        # The name is the index's sort key, which a FilterExpression may not name: the
        # names are read (only they: about 30 bytes an agent) and matched here.
        params["ProjectionExpression"] = "name_lower"
        response = self.db.call("query", **params)
        found = sum(search.lower() in unmarshal(i).get("name_lower", "") for i in response.get("Items", []))
        return found, bool(response.get("LastEvaluatedKey"))

    def _name_query(self, *, status: str | None, search: str | None, skill: tuple[str, str] | None) -> dict[str, Any]:
        """Query parameters for agents in name order: of one status (`agents_by_status`) or
        all (`agents_by_name`), with the skill filter as a FilterExpression (a name search
        is matched on what is read: see `named`)."""
        if status is not None and status not in AgentStatus.ALL:
            raise errors.InvalidRequest(f"Unknown agent status {status!r}.")
        if status:
            index, key_condition = STATUS_INDEX, "#status = :status"
            names: dict[str, str] = {"#status": "status"}
            values: dict[str, dict] = {":status": {"S": status}}
        else:
            index, key_condition = NAME_INDEX, "#type = :agent"
            names, values = {"#type": "type"}, {":agent": {"S": AGENT_TYPE}}
        filters = []
        if skill:
            dimension, value = skill
            if value not in self.catalog.values(dimension):
                raise errors.InvalidRequest(f"Unknown {dimension} {value!r}.")
            filters.append("contains(skills.#dim, :skill)")
            names["#dim"] = dimension
            values[":skill"] = {"S": value}
        params: dict[str, Any] = {
            "TableName": self.table,
            "IndexName": index,
            "KeyConditionExpression": key_condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
        }
        if filters:
            params["FilterExpression"] = " AND ".join(filters)
        return params

    def count_by_status(
        self, cap: int = 10_000, statuses: Iterable[str] = AgentStatus.ALL
    ) -> dict[str, tuple[int, bool]]:
        """Agents per status: one capped COUNT query per status on `agents_by_status`.
        Each value is (count, more): `more` means at least `cap`."""
        counts = {}
        for status in statuses:
            response = self._with_status(status, Select="COUNT", Limit=cap)
            counts[status] = (response["Count"], bool(response.get("LastEvaluatedKey")))
        return counts

    def logged_in(self, cap: int = 2_000) -> tuple[builtins.list[Agent], bool]:
        """Agents who are not offline (at most `cap` per status, read from the index).
        Returns (agents, more): `more` means some status had more than `cap`."""
        agents, more = [], False
        for status in AgentStatus.ALL:
            if status == AgentStatus.OFFLINE:
                continue
            response = self._with_status(status, Limit=cap)
            agents += [agent_from_item(unmarshal(i)) for i in response.get("Items", [])]
            more = more or bool(response.get("LastEvaluatedKey"))
        return agents, more

    def _with_status(self, status: str, **query) -> dict:
        """One Query of `agents_by_status` for the agents in `status`."""
        return self.db.call(
            "query",
            TableName=self.table,
            IndexName=STATUS_INDEX,
            KeyConditionExpression="#status = :status",
            ExpressionAttributeNames={"#status": "status"},
            ExpressionAttributeValues={":status": {"S": status}},
            **query,
        )

    def any_exist(self) -> bool:
        """Whether any agent exists: a Limit-1 COUNT of each roster partition until one
        answers yes (one query when there are agents, all of them when there are none)."""
        return any(
            self.db.query_partition(self.table, pk, Limit=1, Select="COUNT")["Count"] > 0
            for pk in keys.agent_partitions()
        )

    def move_to_shards(self) -> int:
        """Agents written before the roster was spread live in the single `AGENTS`
        partition: move each to its own partition (a put and a delete in one transaction,
        conditioned on the agent as read). Returns how many moved."""
        moved = 0
        for item in self.db.partition_items(self.table, keys.AGENTS_PK, ConsistentRead=True):
            if not item["sk"].startswith(keys.AGENT_PREFIX):
                continue
            moved_item = {**item, **keys.agent(keys.agent_id_from_sk(item["sk"]))}
            try:
                self.db.call(
                    "transact_write_items",
                    TransactItems=[
                        {
                            "Put": {
                                "TableName": self.table,
                                "Item": marshal(moved_item),
                                "ConditionExpression": "attribute_not_exists(pk)",
                            }
                        },
                        {
                            "Delete": {
                                "TableName": self.table,
                                "Key": marshal({"pk": item["pk"], "sk": item["sk"]}),
                                "ConditionExpression": "version = :version",
                                "ExpressionAttributeValues": marshal({":version": item.get("version", 0)}),
                            }
                        },
                    ],
                )
                moved += 1
            except errors.TransactionCancelled:
                continue  # changed meanwhile by a process of the earlier version: the next run moves it
        return moved
