"""The agents' report of a centre's day (figures/agent_days.py): each agent's day as the
tally counted it, the stretch each logged-in agent is in now added from the roster, and
their names as the roster has them now (an agent removed since is shown by id). What the
page, its CSV and `GET /api/reports/agents` read."""

from __future__ import annotations

from datetime import datetime

from queues_app.agents.records import Agent, AgentStatus
from queues_app.agents.roster import Agents
from queues_app.ddb.clock import now
from queues_app.ddb.errors import NotFound
from queues_app.figures.agent_days import AgentDayReader, AgentsDay, OpenStretch, agents_day
from queues_app.figures.intervals import asked_day

# The logged-in agents read for the stretches they are in now, from the status index (each
# partition capped: AgentPages.logged_in); past it, a stretch shows once it ends.
LOGGED_IN_CAP = 10_000


def stretch_of(agent: Agent) -> OpenStretch:
    return OpenStretch(agent.agent_id, agent.status, agent.status_since, agent.reason)


def asked_agents_report(
    agents: Agents, day: str | None, agent_id: str | None = None, *, moment: datetime | None = None
) -> AgentsDay:
    """The report a page, the API or a CSV asks for: `day` as YYYY-MM-DD (today, in the
    centre's zone, when left out; InvalidRequest for words that are not a day, a day to
    come or one no longer kept), every agent or one (`agent_id`: NotFound when no agent has
    that id and none of that id has figures that day)."""
    moment = moment or now()
    wanted = asked_day(day, moment)
    chosen = agent_id or None  # an id as the callers checked it (inputs.is_item_id)
    figures = AgentDayReader(agents.db).figures(wanted, chosen)
    if chosen is not None:
        try:
            found = [agents.get(chosen)]
        except NotFound:
            if chosen not in figures:
                raise NotFound(f"There is no agent {chosen!r}, and none of that id worked on {wanted}.") from None
            found = []
        report = agents_day(wanted, figures, _open(found), _names(found), moment)
        if not report.agents:  # on the roster, but nothing that day: a row of zeros says so
            report = agents_day(wanted, {chosen: {}}, [], _names(found), moment)
        return report
    logged_in, _more = agents.logged_in(cap=LOGGED_IN_CAP)
    names = _names(logged_in)
    others = [agent_id for agent_id in figures if agent_id not in names]
    names |= _names(agents.get_many(others, consistent=False)) if others else {}
    return agents_day(wanted, figures, _open(logged_in), names, moment)


def _open(agents: list[Agent]) -> list[OpenStretch]:
    return [stretch_of(agent) for agent in agents if agent.status != AgentStatus.OFFLINE]


def _names(agents: list[Agent]) -> dict[str, str]:
    return {agent.agent_id: agent.name for agent in agents}
