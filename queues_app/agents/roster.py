"""Agents: the people who take calls, stored in the call-center table."""

from __future__ import annotations

import builtins
import uuid
from collections.abc import Iterable

from queues_app.agents import keys
from queues_app.agents.records import Agent, AgentStatus
from queues_app.agents.skills import SkillCatalog
from queues_app.ddb import batch, errors
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.paging import Page, decode_cursor, encode_cursor

AGENT_TYPE = "agent"


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

    def list(
        self,
        *,
        cursor: str | None = None,
        limit: int = 50,
        status: str | None = None,
        search: str | None = None,
        skill: tuple[str, str] | None = None,
        max_reads: int = 4,
    ) -> Page[Agent]:
        """A page of agents in id order. A status filter reads the `by_status` index, so
        it only touches agents in that status; name search and a skill filter apply
        within what is read. Reads go on (at most `max_reads` queries) until the page is
        full, so a sparse filter still shows a page while the cost stays bounded."""
        if status is not None and status not in AgentStatus.ALL:
            raise errors.InvalidRequest(f"Unknown agent status {status!r}.")
        names: dict[str, str] = {}
        values: dict[str, dict] = {":prefix": {"S": keys.AGENT_PREFIX}}
        params: dict = {"TableName": self.table}
        if status:
            params["IndexName"] = "by_status"
            params["KeyConditionExpression"] = "#status = :status AND begins_with(sk, :prefix)"
            names["#status"] = "status"
            values[":status"] = {"S": status}
        else:
            params["KeyConditionExpression"] = "pk = :pk AND begins_with(sk, :prefix)"
            values[":pk"] = {"S": keys.AGENTS_PK}
        filters = []
        if search:
            filters.append("contains(name_lower, :search)")
            values[":search"] = {"S": search.lower()}
        if skill:
            dimension, value = skill
            if value not in self.catalog.values(dimension):
                raise errors.InvalidRequest(f"Unknown {dimension} {value!r}.")
            filters.append("contains(skills.#dim, :skill)")
            names["#dim"] = dimension
            values[":skill"] = {"S": value}
        if filters:
            params["FilterExpression"] = " AND ".join(filters)
        if names:
            params["ExpressionAttributeNames"] = names
        params["ExpressionAttributeValues"] = values
        found: list[Agent] = []
        purpose = f"agents:{status or 'all'}"  # the table and the status index have other keys
        start = decode_cursor(cursor, purpose=purpose)
        for _ in range(max_reads):
            params["Limit"] = limit - len(found)
            if start:
                params["ExclusiveStartKey"] = start
            response = self.db.call("query", **params)
            found += [agent_from_item(unmarshal(i)) for i in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if not start or len(found) >= limit:
                break
        return Page(items=found, next_cursor=encode_cursor(start, purpose=purpose))

    def count_by_status(self, cap: int = 10_000) -> dict[str, tuple[int, bool]]:
        """Agents per status: one capped COUNT query per status on the `by_status`
        index. Each value is (count, more): `more` means at least `cap`."""
        counts = {}
        for status in AgentStatus.ALL:
            response = self.db.call(
                "query",
                TableName=self.table,
                IndexName="by_status",
                KeyConditionExpression="#status = :status AND begins_with(sk, :prefix)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":status": {"S": status}, ":prefix": {"S": keys.AGENT_PREFIX}},
                Select="COUNT",
                Limit=cap,
            )
            counts[status] = (response["Count"], bool(response.get("LastEvaluatedKey")))
        return counts

    def logged_in(self, cap: int = 2_000) -> tuple[builtins.list[Agent], bool]:
        """Agents who are not offline (at most `cap` per status, read from the index).
        Returns (agents, more): `more` means some status had more than `cap`."""
        agents, more = [], False
        for status in AgentStatus.ALL:
            if status == AgentStatus.OFFLINE:
                continue
            page = self.list(status=status, limit=cap, max_reads=1)
            agents += page.items
            more = more or page.next_cursor is not None
        return agents, more

    def any_exist(self) -> bool:
        response = self.db.call(
            "query",
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": keys.AGENTS_PK}},
            Limit=1,
            Select="COUNT",
        )
        return response["Count"] > 0
