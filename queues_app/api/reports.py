"""/api/reports: the centre's day in intervals (offered, answered, service level, ASA,
AHT, occupancy), and each agent's day (calls handled, talk and after-call work, time
per status, occupancy); with their outputs."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from queues_app.api.common import get_call_center
from queues_app.api.openapi import READS, answers
from queues_app.api.schemas import ItemId
from queues_app.figures.intervals import asked_report
from queues_app.monitoring.agent_report import asked_agents_report
from queues_app.serializers import interval_report_json

router = Router()


class IntervalOut(Schema):
    start: str = Field(description="When the interval starts: ISO 8601 with the centre's UTC offset.")
    combination: str = Field(description="`all` (the whole centre, or the line's callers) or a skill combination.")
    line: str | None = Field(description="The line of a line's report (`?line=`); null otherwise.")
    offered: int = Field(
        description="Callers who entered the line in the interval (as Amazon Connect and Genesys count a contact "
        "offered); for an interval an earlier version counted, those who left it."
    )
    answered: int
    answered_within: int = Field(description="Answered within `service_level_seconds`.")
    abandoned: int
    short_abandoned: int = Field(
        description="(A line's report) callers who hung up sooner than the line's `short_abandon_seconds`: neither "
        "for nor against the service level, and not in `abandoned`."
    )
    overflowed: int = Field(description="Callers ended unanswered past their line's limit (its overflow's `end`).")
    refused: int = Field(
        description="Callers their line turned away (closed, or full with nowhere to overflow): never offered."
    )
    callbacks_requested: int = Field(
        description="Queued callbacks asked for in the interval (a waiting caller's, or scheduled ones)."
    )
    callbacks_connected: int = Field(description="Queued callbacks whose caller was reached in the interval.")
    callbacks_failed: int = Field(
        description="Queued callbacks not reached in their line's attempts (also in `abandoned`)."
    )
    callback_connect_seconds: float | None = Field(
        description="From a callback's request to its connection, on average; null when none connected."
    )
    in_queue_at_end: int | None = Field(
        description="Callers still waiting at the interval's end: the day's arrivals so far less those who left the "
        "line (callers of the day before left out); null where an earlier version counted the day."
    )
    service_level: float | None = Field(
        description="answered_within / (answered + abandoned): of the callers who left the line in the interval; "
        "null when none did."
    )
    asa_seconds: float | None = Field(description="Average speed of answer; null when none was answered.")
    aht_seconds: float | None = Field(description="Average handle time of the calls that ended; null when none.")
    longest_wait_seconds: float | None
    occupancy: float | None = Field(
        description="Agents busy with a call (ringing, attending, wrap-up) over agents busy or idle in the queue, "
        "sampled (`all` only)."
    )


class IntervalsOut(Schema):
    date: str = Field(description="The centre's day, YYYY-MM-DD.")
    time_zone: str = Field(description="The centre's time zone (TIME_ZONE), an IANA name.")
    interval_minutes: int
    service_level_seconds: int | float = Field(
        description="The service level's threshold (SERVICE_LEVEL_SECONDS; a line's report: the line's, now)."
    )
    line: str | None = Field(description="The line reported on, or null.")
    intervals: list[IntervalOut]


@router.get(
    "reports/intervals",
    url_name="api-report-intervals",
    operation_id="intervalReport",
    summary="A day in intervals: offered, answered, service level, ASA, AHT",
    **answers(
        {200: (IntervalsOut, "The centre's day in intervals, overall and per combination.", ())}, 400, 404, *READS
    ),
)
def interval_report(
    request: HttpRequest,
    date: str | None = Query(None, description="The centre's day, YYYY-MM-DD; today when left out.", max_length=10),
    interval: int = Query(30, description="Minutes per interval: 15, 30 or 60."),
    combination: str | None = Query(
        None, description="Only this combination (`Spanish#F`, `any` for no preference) or `all`.", max_length=200
    ),
    line: str | None = Query(
        None, description="Only this line's callers, counted by the line's own promise.", max_length=40
    ),
):
    """For each interval of the centre's day (its TIME_ZONE): callers offered (answered
    or abandoned in it), answered, answered within the threshold, abandoned, the service
    level, the average speed of answer and handle time, the longest wait and occupancy;
    for the whole centre (`all`) and each skill combination, or (`line`) one line's callers
    by the line's own threshold. Kept REPORT_RETENTION_DAYS."""
    center = get_call_center()
    known = center.catalog.combination_names()
    lines = {each.line_id: each for each in center.lines.all()}
    report, chosen = asked_report(center.db, date, interval, combination, known=known, line=line, lines=list(lines))
    if line:
        return interval_report_json(report, line=line, threshold=lines[line].service_level_seconds)
    return interval_report_json(report, chosen)


class NotReadyOut(Schema):
    reason: str = Field(description="Why the agent was not ready (`AGENT_NOT_READY_REASONS`, or `missed`).")
    seconds: float = Field(description="Seconds not ready for this reason within the day.")
    times: int = Field(description="How many times the agent was made not ready for it that day.")


class AgentFiguresOut(Schema):
    calls_handled: int = Field(
        description="Calls whose conversation the agent ended that day (by a release, the end of the call or a "
        "transfer): Amazon Connect's contacts handled. A transferred call counts for each agent who talked on it."
    )
    answered: int = Field(description="Callers the agent picked up that day (a transferred call once, for the first).")
    answered_within: int = Field(
        description="Of `answered`, those who waited no longer than their line's service-level threshold "
        "(SERVICE_LEVEL_SECONDS for a call on no line)."
    )
    service_level: float | None = Field(
        description="answered_within / answered, 0 to 1; null when none was answered. (The interval report divides "
        "by abandoned callers too, which are no agent's.)"
    )
    talk_seconds: float = Field(description="Seconds attending a call (from the answer to the end of their part).")
    after_call_work_seconds: float = Field(description="Seconds in wrap-up after a call (after-contact work).")
    average_handle_seconds: float | None = Field(
        description="(talk_seconds + after_call_work_seconds) / calls_handled, as Amazon Connect counts average "
        "handle time; null when no call was handled."
    )
    ringing_seconds: float = Field(description="Seconds offered a call not picked up yet (ANSWER_TIMEOUT_SECONDS).")
    idle_seconds: float = Field(
        description="Seconds queued (and the moment of joining the queue): ready, waiting for a call."
    )
    not_ready_seconds: float = Field(description="Seconds not ready, whatever the reason.")
    not_ready: list[NotReadyOut] = Field(description="Not ready by reason, the longest first.")
    missed_offers: int = Field(description="Offers that rang out (or whose agent's client went away) unanswered.")
    logged_in_seconds: float = Field(description="Seconds in any status but offline.")
    occupancy: float | None = Field(
        description="Seconds busy with a call (ringing, attending, wrap-up) over those busy or idle, 0 to 1: "
        "not-ready time is in neither, as Amazon Connect counts occupancy; null when neither."
    )


class AgentRowOut(AgentFiguresOut):
    agent_id: str = Field(description="The agent's id, as `GET /api/agents/{agent_id}` takes it.")
    name: str | None = Field(description="The agent's name on the roster now; null for an agent removed since.")
    removed: bool = Field(description="True when the agent is no longer on the roster: shown by `agent_id`.")


class AgentsReportOut(Schema):
    date: str = Field(description="The centre's day, YYYY-MM-DD.")
    time_zone: str = Field(
        description="The centre's time zone (TIME_ZONE), an IANA name; the day runs midnight to midnight there."
    )
    agents: list[AgentRowOut] = Field(
        description="An agent who has figures that day or is logged in into it, in name order (removed agents last)."
    )
    totals: AgentFiguresOut = Field(description="The figures of every agent listed, added up (ratios of the sums).")


REPORT_AGENT = Query(None, description="Only this agent (one removed since too, by id): 404 when no agent has it.")


@router.get(
    "reports/agents",
    url_name="api-report-agents",
    operation_id="agentReport",
    summary="Each agent's day: calls handled, talk and after-call work, not ready, occupancy",
    **answers({200: (AgentsReportOut, "Each agent's figures for the day, and their totals.", ())}, 400, 404, *READS),
)
def agent_report(
    request: HttpRequest,
    date: str | None = Query(None, description="The centre's day, YYYY-MM-DD; today when left out.", max_length=10),
    agent_id: ItemId | None = REPORT_AGENT,
):
    """For each agent, the centre's day (its TIME_ZONE): calls handled and answered (within
    their line's threshold), talk time, after-call work and average handle time, time
    ringing, idle, not ready (by reason) and logged in, missed offers and occupancy; and
    the totals, whose answered and answered within add up to the interval report's. The
    stretch an agent is in now counts up to now. Kept REPORT_RETENTION_DAYS."""
    report = asked_agents_report(get_call_center().agents, date, agent_id)
    return {
        "date": report.day.isoformat(),
        "time_zone": report.zone,
        "agents": [agent.row() for agent in report.agents],
        "totals": report.totals.row(),
    }
