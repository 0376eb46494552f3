"""Agents: the people who take calls, stored in the call-center table."""

from __future__ import annotations

import builtins
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
from queues_app.agents.records import AGENT_TYPE, Agent, AgentStatus, agent_from_item, agent_to_item
from queues_app.agents.skills import SkillCatalog, SkillError
from queues_app.calls.records import Outcome
from queues_app.centre import keys
from queues_app.ddb import batch, errors, replay
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.tables import AGENTS_BY_NAME
from queues_app.facades import Verb
from queues_app.lines import profiles
from queues_app.lines.store import promises
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


KEEP = object()  # an edit that leaves the lines an agent serves as they are


def known_lines(db: Dynamo) -> set[str]:
    """The lines an agent may serve: those configured, or `main` when none is."""
    return set(promises(db)) or {"main"}


def checked_serving(db: Dynamo, profile: object, lines: object) -> tuple[str | None, dict[str, profiles.Terms]]:
    """The lines an agent serves, as given (a named profile, or their own lines, or neither
    for every line), each checked: refused with the field at fault."""
    if profile is not None and lines is not None:
        raise errors.InvalidRequest("Give a routing profile or the lines served, not both.", field="lines")
    if profile is not None:
        store = profiles.ProfileStore(db)
        named_ = store.current().profiles
        if isinstance(profile, str) and profile not in named_:
            named_ = store.read().profiles  # made a moment ago, maybe by another process
        if not isinstance(profile, str) or profile not in named_:
            shown = ", ".join(sorted(named_)) or "none yet"
            raise errors.InvalidRequest(
                f"No routing profile {str(profile)[:50]!r} (the profiles: {shown}).", field="profile"
            )
        return profile, {}
    if lines is None:
        return None, {}
    return None, profiles.parse_lines(lines, known=known_lines(db))


def new_agent_id() -> str:
    return uuid.uuid4().hex[:12]


class Agents:
    """Create, read and list agents (their lists and counts: the part `pages`)."""

    get_many = Verb("pages", AgentPages.get_many)
    ids_where = Verb("pages", AgentPages.ids_where)
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

    def build(
        self, name: str, skills: Skills, agent_id: str | None = None, *, profile: object = None, lines: object = None
    ) -> Agent:
        name = checked_name(name)
        profile_id, own = checked_serving(self.db, profile, lines)
        stamp = to_iso(now())
        return Agent(
            profile=profile_id,
            lines=own,
            agent_id=agent_id or new_agent_id(),
            name=name,
            skills=self.catalog.validate_agent_skills(skills),
            levels=self.catalog.validate_levels(skills),
            created_at=stamp,
            updated_at=stamp,
            status_since=stamp,
        )

    def create(
        self, name: str, skills: Skills, agent_id: str | None = None, *, profile: object = None, lines: object = None
    ) -> Agent:
        agent = self.build(name, skills, agent_id, profile=profile, lines=lines)
        profiles.ProfileStore(self.db).note_inline(agent.lines)
        exists = f"An agent with id {agent.agent_id!r} exists already."
        self.db.put_new(self.table_name, agent_to_item(agent), key="pk", exists=exists)
        return agent

    def update(self, agent_id: str, *, name: str, skills: Skills, expected_version: int) -> Agent:
        return self.edit(agent_id, name=name, skills=skills, expected_version=expected_version).agent  # type: ignore[return-value]

    def edit(
        self,
        agent_id: str,
        *,
        name: str,
        skills: Skills,
        expected_version: int,
        profile: object = KEEP,
        lines: object = KEEP,
    ) -> Outcome:
        """Rename or change skills (and, when given, the lines served), from the version the
        editor saw. Refused while the agent is queued or attending, because their message
        items were written for the old skills. The same edit sent again once it took effect
        is answered as done."""
        name = checked_name(name)
        clean, levels = self.catalog.validate_agent_skills(skills), self.catalog.validate_levels(skills)
        digest: dict = {"name": name, "skills": clean, **({"levels": levels} if levels else {})}
        serving, routing_values = self._serving_change(profile, lines, digest)
        change = replay.change_id("edit", expected_version, replay.digest(digest))
        try:
            response = self.db.call(
                "update_item",
                TableName=self.table_name,
                Key=marshal(keys.agent(agent_id)),
                UpdateExpression="SET #name = :name, name_lower = :lower, skills = :skills, levels = :levels, "
                f"version = version + :one, updated_at = :now, change = :change{serving}",
                ConditionExpression="attribute_exists(pk) AND version = :expected "
                "AND NOT #status IN (:queued, :attending)",
                ExpressionAttributeNames={
                    "#name": "name",
                    "#status": "status",
                    **({"#profile": "profile", "#lines": "lines"} if serving else {}),
                },
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
                        **routing_values,
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

    def _serving_change(self, profile: object, lines: object, digest: dict) -> tuple[str, dict[str, object]]:
        """The part of an edit that sets the lines served (nothing when both are KEEP): its
        update expression's tail and values; the digest of the edit notes it."""
        if profile is KEEP and lines is KEEP:
            return "", {}
        profile_id, own = checked_serving(
            self.db, None if profile is KEEP else profile, None if lines is KEEP else lines
        )
        profiles.ProfileStore(self.db).note_inline(own)
        digest.update(profile=profile_id, lines=profiles.lines_as_dict(own))
        if profile_id:
            return ", #profile = :profile REMOVE #lines", {":profile": profile_id}
        if own:
            return ", #lines = :lines REMOVE #profile", {":lines": profiles.lines_as_dict(own)}
        return " REMOVE #profile, #lines", {}

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

    def with_profile(self, profile_id: str) -> builtins.list[Agent]:
        """Every agent who names the routing profile: the whole roster read (its name index,
        then the agents a hundred at a time), for the rare removal of a profile."""
        ids = [
            item["agent_id"]
            for item in self.db.items(
                "query",
                TableName=self.table_name,
                IndexName=AGENTS_BY_NAME.name,
                KeyConditionExpression="#type = :agent",
                ExpressionAttributeNames={"#type": "type"},
                ExpressionAttributeValues={":agent": {"S": AGENT_TYPE}},
            )
        ]
        return [agent for agent in self.get_many(ids) if agent.profile == profile_id]

    def get(self, agent_id: str) -> Agent:
        response = self.db.call(
            "get_item", TableName=self.table_name, Key=marshal(keys.agent(agent_id)), ConsistentRead=True
        )
        if "Item" not in response:
            raise errors.NotFound(f"No agent with id {agent_id!r}.")
        return agent_from_item(unmarshal(response["Item"]))

    def get_unless_read(self, agent_id: str, read: Agent | None) -> Agent:
        """The agent as the caller has just read them (`read`, when it is this agent), else
        read now."""
        return read if read is not None and read.agent_id == agent_id else self.get(agent_id)
