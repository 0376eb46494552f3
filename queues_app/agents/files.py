"""A roster as a CSV file (`manage.py import_agents`): one agent a row, `agent_id`,
`name`, then a column per skill dimension whose values are separated by spaces or `;`,
each with its level after a colon (`French:5 English:2`; no level means 1), and, when the
file has the column, `profile`: the named routing profile the agent serves lines by (empty:
every line; without the column, the lines served stay as they are).

Read whole and checked before anything is applied: a row at fault is named by its line
number and nothing changes. The plan compares each row with the agent as stored."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass

from queues_app.agents.records import Agent
from queues_app.agents.roster import checked_name
from queues_app.agents.skills import SkillCatalog, SkillError
from queues_app.ddb import errors
from queues_app.text import SHORT_NAME_PATTERN, SHORT_NAME_PROBLEM

MAX_ROWS = 10_000
_ID = re.compile(SHORT_NAME_PATTERN)


class RosterError(ValueError):
    """A file the import refuses, saying where."""


@dataclass(frozen=True)
class RosterRow:
    line: int  # in the file, for messages
    agent_id: str
    name: str
    skills: dict[str, dict[str, int]]  # every value with its level
    profile: str | None = None  # "" every line; None: the file has no profile column

    def keeps_serving(self, agent: Agent) -> bool:
        """Whether the agent serves the lines the row says already."""
        return self.profile is None or (self.profile or None, {}) == (
            agent.profile,
            agent.lines if self.profile else {},
        )

    @property
    def serving(self) -> dict[str, object]:
        """The lines served, as an edit takes them (nothing: they stay)."""
        return {} if self.profile is None else {"profile": self.profile or None, "lines": None}

    @property
    def described(self) -> str:
        return "; ".join(
            f"{dimension} " + " ".join(f"{v}:{n}" if n > 1 else v for v, n in values.items())
            for dimension, values in self.skills.items()
        )


@dataclass(frozen=True)
class Change:
    action: str  # create, update, same
    row: RosterRow
    current: Agent | None

    @property
    def detail(self) -> str:
        if self.action == "create":
            return f"{self.row.name} ({self.row.described})"
        if self.action == "same":
            return "unchanged"
        assert self.current is not None
        was = []
        if self.current.name != self.row.name:
            was.append(f"name {self.current.name!r} -> {self.row.name!r}")
        if self.current.skills_with_levels != self.row.skills:
            was.append(f"skills -> {self.row.described}")
        if not self.row.keeps_serving(self.current):
            was.append(f"profile -> {self.row.profile or '(every line)'}")
        return ", ".join(was)


def _values(cell: str, dimension: str, line: int) -> dict[str, int]:
    levels: dict[str, int] = {}
    for part in re.split(r"[;\s]+", cell.strip()):
        if not part:
            continue
        value, _, level = part.partition(":")
        if level and not (level.isdigit() and 1 <= int(level) <= 5):
            raise RosterError(f"line {line}: {dimension} {value!r}: the level must be a whole number 1 to 5")
        levels[value] = int(level or 1)
    return levels


def read_csv(text: str, catalog: SkillCatalog, profiles: set[str] | None = None) -> list[RosterRow]:
    """Every row, checked against the catalog (and the named routing `profiles`);
    RosterError naming the first at fault."""
    reader = csv.DictReader(io.StringIO(text))
    wanted = {"agent_id", "name", *catalog.names}
    missing = sorted(wanted - set(reader.fieldnames or []))
    if missing:
        raise RosterError(f"the header needs the columns {', '.join(sorted(wanted))}; missing: {', '.join(missing)}")
    with_profile = "profile" in (reader.fieldnames or [])
    extra = sorted(set(reader.fieldnames or []) - wanted - {"profile"})
    if extra:
        raise RosterError(f"unknown column {extra[0]!r}; the columns are {', '.join(sorted(wanted))}")
    rows: list[RosterRow] = []
    seen: dict[str, int] = {}
    for record in reader:
        line = reader.line_num
        if len(rows) >= MAX_ROWS:
            raise RosterError(f"more than {MAX_ROWS:,} agents; split the file")
        if None in record:
            raise RosterError(f"line {line}: more cells than columns")
        agent_id = (record["agent_id"] or "").strip()
        if not _ID.fullmatch(agent_id):
            raise RosterError(f"line {line}: agent_id {agent_id!r}: {SHORT_NAME_PROBLEM}")
        if agent_id in seen:
            raise RosterError(f"line {line}: agent {agent_id!r} is on line {seen[agent_id]} already")
        seen[agent_id] = line
        given = {name: _values(record[name] or "", name, line) for name in catalog.names}
        try:
            name = checked_name(record["name"] or "")
            skills = catalog.validate_agent_skills(given)
            levels = catalog.validate_levels(given)
        except (SkillError, errors.InvalidRequest) as exc:
            raise RosterError(f"line {line}: {getattr(exc, 'message', exc)}") from exc
        full = {d: {v: levels.get(d, {}).get(v, 1) for v in values} for d, values in skills.items()}
        profile = (record["profile"] or "").strip() if with_profile else None
        if profile and profile not in (profiles or set()):
            shown = ", ".join(sorted(profiles or ())) or "none yet"
            raise RosterError(f"line {line}: no routing profile {profile[:50]!r} (the profiles: {shown})")
        rows.append(RosterRow(line, agent_id, name, full, profile))
    return rows


def plan(rows: list[RosterRow], current: dict[str, Agent]) -> list[Change]:
    """What applying the rows does to each agent: created, updated, or left as it is."""
    changes = []
    for row in rows:
        agent = current.get(row.agent_id)
        if agent is None:
            changes.append(Change("create", row, None))
        elif (agent.name, agent.skills_with_levels) == (row.name, row.skills) and row.keeps_serving(agent):
            changes.append(Change("same", row, agent))
        else:
            changes.append(Change("update", row, agent))
    return changes
