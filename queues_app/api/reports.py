"""/api/reports: the centre's day in intervals (offered, answered, service level, ASA,
AHT, occupancy); with its outputs."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router, Schema
from pydantic import Field

from queues_app.api.common import get_call_center
from queues_app.api.openapi import READS, answers
from queues_app.figures.intervals import asked_report
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
