"""CSV downloads of the lists a supervisor reads: agents, the calls waiting and in
progress, and the audit trail, each with the filters its page had. Rows stream as the
pages are read (one bounded read at a time), so a long list never sits in memory; the
first page is read before the answer starts, so an unreachable DynamoDB is still a clear
error rather than a cut-off file. Times are ISO 8601 in the centre's time zone, which the
header row names."""

from __future__ import annotations

import csv
import itertools
import logging
from collections.abc import Callable, Iterable, Iterator

from django.http import StreamingHttpResponse
from django.views.decorators.http import require_GET

from queues_app.agents.roster import Agents
from queues_app.agents.skills import SkillCatalog
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import centre_date, centre_zone, from_iso, now
from queues_app.ddb.errors import DynamoError, InvalidRequest
from queues_app.forms import AgentFilterForm, errors_in
from queues_app.views.audit import TrailSearchForm, search

log = logging.getLogger(__name__)
PAGE = 100  # items per read while streaming
# The trail reads each of a day's 17 partitions for its share of a page: a larger page reads
# a busy day in fewer rounds (bench.exports).
AUDIT_PAGE = 1000
CHUNK_ROWS = 500  # rows sent in one write


class _Echo:
    """A file that hands back what is written: csv.writer's rows, one string each."""

    def write(self, value: str) -> str:
        return value


def local_time(text: str | None) -> str:
    moment = from_iso(text)
    return moment.astimezone(centre_zone()).isoformat(timespec="seconds") if moment else ""


def _zone() -> str:
    return str(centre_zone())


def _streamed(first, read_next: Callable, rows_of: Callable) -> Iterator[list]:
    """Rows of the first page, then of each next one, until the list ends. A read that
    fails mid-stream ends the file (it is logged); the rows sent stay whole."""
    page = first
    while True:
        yield from rows_of(page)
        if not page.next_cursor:
            return
        try:
            page = read_next(page.next_cursor)
        except DynamoError:
            log.exception("a CSV export stopped: the next page could not be read")
            return


def csv_answer(name: str, header: list[str], rows: Iterable[list], *, dated: bool = True) -> StreamingHttpResponse:
    """A CSV download, streamed; its file name says the centre's day it was taken on unless
    `name` says which day it is about already (`dated` false)."""
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        # A few hundred rows a write: one write a row would cost the server more than the rows.
        chunk = [writer.writerow(header)]
        for row in rows:
            chunk.append(writer.writerow(row))
            if len(chunk) >= CHUNK_ROWS:
                yield "".join(chunk)
                chunk = []
        if chunk:
            yield "".join(chunk)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    filename = f"{name}-{centre_date(now())}" if dated else name
    response["Content-Disposition"] = f'attachment; filename="{filename}.csv"'
    return response


@require_GET
def agents_csv(request):
    catalog = SkillCatalog.from_settings()
    form = AgentFilterForm(request.GET or None, catalog=catalog)
    if request.GET and not form.is_valid():
        raise InvalidRequest(errors_in(form, "Check the filters: "))
    data = form.cleaned_data if request.GET else {}
    agents = Agents(catalog=catalog)

    def read(cursor):
        return agents.list(
            cursor=cursor,
            limit=PAGE,
            status=data.get("status") or None,
            search=data.get("q") or None,
            skill=form.skill_filter if request.GET else None,
        )

    def rows(page):
        for agent in page.items:
            skills = " · ".join(v for values in agent.skills.values() for v in values)
            yield [
                agent.name,
                agent.agent_id,
                agent.status_label,
                skills,
                local_time(agent.status_since or agent.updated_at),
                agent.call_id or "",
            ]

    header = ["Name", "Agent id", "Status", "Skills", f"Since ({_zone()})", "Call"]
    return csv_answer("agents", header, _streamed(read(None), read, rows))


@require_GET
def calls_csv(request):
    """The waiting line in order (`?list=waiting`, the default) or the calls in progress."""
    which = request.GET.get("list", "waiting")
    center = CallCenter()
    names = center.catalog.names
    zone = _zone()
    if which == "waiting":

        class Line:  # the waiting line's pages, in the shape _streamed reads
            def __init__(self, cursor):
                self.items, self.next_cursor = center.line.waiting_calls(limit=PAGE, cursor=cursor)

        def waiting_rows(page):
            for item in page.items:
                preferences = item.get("preferences") or {}
                yield [
                    item["call_id"],
                    *(preferences.get(d) or "any" for d in names),
                    int(item.get("priority", 0)),
                    local_time(item.get("arrived_at")),
                ]

        header = ["Call", *(d.capitalize() for d in names), "Priority", f"Arrived ({zone})"]
        return csv_answer("calls-waiting", header, _streamed(Line(None), Line, waiting_rows))
    if which != "in_progress":
        raise InvalidRequest("A calls list is `waiting` or `in_progress`.")

    def read(cursor):
        return center.calls.in_progress(cursor=cursor, limit=PAGE)

    def progress_rows(page):
        for call in page.items:
            yield [
                call.call_id,
                call.state,
                *(call.preferences.get(d) or "any" for d in names),
                call.agent_name or "",
                call.agent_id or "",
                local_time(call.arrived_at),
                local_time(call.answered_at),  # none while it rings
                local_time(call.answer_by),  # while it rings: back to the line then if not picked up
            ]

    header = ["Call", "Status", *(d.capitalize() for d in names), "Agent", "Agent id", f"Arrived ({zone})"]
    header += [f"Answered ({zone})", f"Answer by ({zone})"]
    # The calls ringing (the first page of them: an offer lasts seconds), then those answered.
    rows = itertools.chain(progress_rows(center.calls.ringing(limit=PAGE)), _streamed(read(None), read, progress_rows))
    return csv_answer("calls-in-progress", header, rows)


@require_GET
def audit_csv(request):
    form = TrailSearchForm(request.GET)
    if not form.is_valid():
        raise InvalidRequest(
            "Check the item and the filters: " + " ".join(str(e) for errors in form.errors.values() for e in errors)
        )

    def read(cursor):
        return search(form, cursor, limit=AUDIT_PAGE).page

    def rows(page):
        for entry in page.entries:
            yield [
                local_time(entry.at),
                entry.summary,
                entry.actor,
                entry.source_label,
                entry.action_label,
                entry.kind,
                entry.target_id,
                entry.trace_id or "",
            ]

    header = [f"When ({_zone()})", "What happened", "Who", "Where", "Action", "Item kind", "Item id", "Trace"]
    return csv_answer("audit", header, _streamed(read(None), read, rows))
