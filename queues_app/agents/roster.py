"""Agents: the people who take calls, stored in the call-center table."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from queues_app.agents.listing import (  # noqa: F401 (the roster's names, read from here too)
    COUNT_CAP,
    FILTERED_READ,
    AgentPages,
    NamePage,
    name_key,
    named,
    shard_cap,
    status_position,
    status_queries,
)
from queues_app.agents.records import Agent, AgentStatus, agent_from_item, agent_to_item
from queues_app.agents.skills import SkillCatalog, SkillError
from queues_app.calls.records import Outcome
from queues_app.centre import keys
from queues_app.ddb import batch, errors, replay
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.facades import Verb
from queues_app.text import NAME_MAX, hidden_problem

# An agent's skills: each dimension's values (`{"language": ["French", "English"], ...}`),
# or, given with their levels, values and levels (`{"language": {"French": 5}}`).
Skills = dict[str, list[str]] | dict


def checked_name(name: str) -> str:
    """An agent's name without the spaces around it; refused when empty, or holding a
    control, invisible or direction-changing character (queues_app/text.py)."""
    name = (name or "").strip()
    if not name:
        raise errors.InvalidRequest("An agent needs a name.", field="name")
    if len(name) > NAME_MAX:
        raise errors.InvalidRequest(f"An agent's name is at most {NAME_MAX} characters.", field="name")
    problem = hidden_problem(name)
    if problem:
        raise SkillError("name", f"The name {problem}.")
    return name


def new_agent_id() -> str:
    return uuid.uuid4().hex[:12]


class Agents:
    """Create, read and list agents (their lists and counts: the part `pages`)."""

    get_many = Verb("pages", AgentPages.get_many)
    list = Verb("pages", AgentPages.list)
    count = Verb("pages", AgentPages.count)
    count_by_status = Verb("pages", AgentPages.count_by_status)
    logged_in = Verb("pages", AgentPages.logged_in)
    any_exist = Verb("pages", AgentPages.any_exist)

    def __init__(self, db: Dynamo | None = None, catalog: SkillCatalog | None = None):
        self.db = db or default()
        self.catalog = catalog or SkillCatalog.from_settings()
        self.pages = AgentPages(self.db, self.catalog)

    @property
    def table_name(self) -> str:
        return self.db.table("callcenter")

    def build(self, name: str, skills: Skills, agent_id: str | None = None) -> Agent:
        name = checked_name(name)
        stamp = to_iso(now())
        return Agent(
            agent_id=agent_id or new_agent_id(),
            name=name,
            skills=self.catalog.validate_agent_skills(skills),
            levels=self.catalog.validate_levels(skills),
            created_at=stamp,
            updated_at=stamp,
            status_since=stamp,
        )

    def create(self, name: str, skills: Skills, agent_id: str | None = None) -> Agent:
        agent = self.build(name, skills, agent_id)
        exists = f"An agent with id {agent.agent_id!r} exists already."
        self.db.put_new(self.table_name, agent_to_item(agent), key="pk", exists=exists)
        return agent

    def update(self, agent_id: str, *, name: str, skills: Skills, expected_version: int) -> Agent:
        return self.edit(agent_id, name=name, skills=skills, expected_version=expected_version).agent  # type: ignore[return-value]

    def edit(self, agent_id: str, *, name: str, skills: Skills, expected_version: int) -> Outcome:
        """Rename or change skills, from the version the editor saw. Refused while the agent
        is queued or attending, because their message items were written for the old
        skills. The same edit sent again once it took effect is answered as done."""
        name = checked_name(name)
        clean, levels = self.catalog.validate_agent_skills(skills), self.catalog.validate_levels(skills)
        digest = {"name": name, "skills": clean, **({"levels": levels} if levels else {})}
        change = replay.change_id("edit", expected_version, replay.digest(digest))
        try:
            response = self.db.call(
                "update_item",
                TableName=self.table_name,
                Key=marshal(keys.agent(agent_id)),
                UpdateExpression="SET #name = :name, name_lower = :lower, skills = :skills, levels = :levels, "
                "version = version + :one, updated_at = :now, change = :change",
                ConditionExpression="attribute_exists(pk) AND version = :expected "
                "AND NOT #status IN (:queued, :attending)",
                ExpressionAttributeNames={"#name": "name", "#status": "status"},
                ExpressionAttributeValues=marshal(
                    {
                        ":name": name,
                        ":lower": name.lower(),
                        ":skills": clean,
                        ":levels": levels,
                        ":one": 1,
                        ":now": to_iso(now()),
                        ":expected": expected_version,
                        ":queued": AgentStatus.QUEUED,
                        ":attending": AgentStatus.ATTENDING,
                        ":change": change,
                    }
                ),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except errors.Conflict as exc:
            if replay.made_by(exc.current, change):
                return Outcome(agent_from_item(exc.current or {}), replayed=True)
            raise self._edit_conflict(agent_id, exc.current, expected_version) from exc
        return Outcome(agent_from_item(unmarshal(response["Attributes"])))

    @staticmethod
    def _edit_conflict(
        agent_id: str,
        current: dict | None,
        expected_version: int,
        *,
        busy: tuple[str, ...] = (AgentStatus.QUEUED, AgentStatus.ATTENDING),
        doing: str = "changing their skills",
        seen: str = "edited",
    ) -> errors.DynamoError:
        """Why a change of the agent from `expected_version` was refused: gone, `busy`
        (log them off before `doing`), or changed since."""
        if not current:
            return errors.NotFound(f"No agent with id {agent_id!r}.")
        agent = agent_from_item(current)
        if current.get("status") in busy:
            label = AgentStatus.LABELS[current["status"]].lower()
            return errors.Conflict(
                f"{current['name']} is {label}; log them off before {doing}.",
                current=current,
                now={"agent": agent},
            )
        return errors.Conflict(
            f"{current['name']} was changed by someone else (version {current.get('version')}, "
            f"you {seen} version {expected_version}); reload and try again.",
            current=current,
            now={"agent": agent},
        )

    def remove(self, agent_id: str, *, expected_version: int) -> Agent:
        """Remove an agent from the roster, from the version read, while they are logged
        off or not ready (no call, no place in a queue). Returns the agent as they were."""
        try:
            response = self.db.call(
                "delete_item",
                TableName=self.table_name,
                Key=marshal(keys.agent(agent_id)),
                ConditionExpression="attribute_exists(pk) AND version = :expected "
                "AND #status IN (:offline, :not_ready)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues=marshal(
                    {
                        ":expected": expected_version,
                        ":offline": AgentStatus.OFFLINE,
                        ":not_ready": AgentStatus.NOT_READY,
                    }
                ),
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except errors.Conflict as exc:
            busy = tuple(set(AgentStatus.ALL) - {AgentStatus.OFFLINE, AgentStatus.NOT_READY})
            raise self._edit_conflict(
                agent_id, exc.current, expected_version, busy=busy, doing="removing them", seen="read"
            ) from exc
        return agent_from_item(unmarshal(response["Attributes"]))

    def create_many(self, agents: Iterable[Agent], on_batch=None) -> int:
        """Bulk insert for demo data and imports (no existence check)."""
        return batch.put_items(self.db, self.table_name, (agent_to_item(a) for a in agents), on_batch=on_batch)

    def get(self, agent_id: str) -> Agent:
        response = self.db.call(
            "get_item", TableName=self.table_name, Key=marshal(keys.agent(agent_id)), ConsistentRead=True
        )
        if "Item" not in response:
            raise errors.NotFound(f"No agent with id {agent_id!r}.")
        return agent_from_item(unmarshal(response["Item"]))
