"""The API's lists of agents and calls, a page at a time with signed cursors.

- agents: the roster's own list (`Agents.list`: the status index for a status,
  `agents_by_name` otherwise; a skill filter applies within what is read);
- waiting calls: the waiting line in order (`WaitingLine.waiting_calls`), then the page's
  call records in one BatchGetItem; a caller assigned between the two reads is left out;
- assigned calls: through their attending agents (`Calls.in_progress`: the status index
  in name order, then the page's calls in one BatchGetItem), whatever the number of calls
  or agents. Newest assignment first within a page; the pages follow the agents' names.

A cursor serves only the list it came from (each is signed for its purpose), so a
cursor of another list, or one tampered with, is a 400 naming `cursor`.
"""

from __future__ import annotations

from queues_app.agents.records import AgentStatus
from queues_app.calls.records import Call, CallStatus
from queues_app.calls.store import call_from_item
from queues_app.centre import keys
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import batch, errors
from queues_app.ddb.paging import INVALID, Page, decode_state, encode_state
from queues_app.http.errors import invalid

CALL_LISTS = (CallStatus.WAITING, CallStatus.OFFERED, CallStatus.ASSIGNED)
WAITING_PURPOSE = "api:calls:waiting"


def parse_skill(center: CallCenter, skill: str | None) -> tuple[str, str] | None:
    """`language:French` as ("language", "French"); a 400 naming `skill`, with the
    dimensions or values allowed, when it is not one the catalog knows."""
    if skill is None:
        return None
    dimension, colon, value = skill.partition(":")
    dimensions = center.catalog.names
    if not colon or dimension not in dimensions:
        raise invalid({"skill": f"must be dimension:value, with a dimension among {', '.join(dimensions)}"})
    allowed = center.catalog.values(dimension)
    if value not in allowed:
        raise invalid({"skill": f"unknown {dimension} {value!r}; allowed: {', '.join(allowed)}"})
    return dimension, value


def agents_page(
    center: CallCenter, *, status: str | None, skill: tuple[str, str] | None, cursor: str | None, limit: int
):
    if status is not None and status not in AgentStatus.ALL:  # the schema says so too; the roster would refuse it
        raise invalid({"status": f"must be one of {', '.join(AgentStatus.ALL)}"})
    try:
        return center.agents.list(cursor=cursor, limit=limit, status=status, skill=skill)
    except errors.InvalidRequest as exc:  # status and skill are checked above: the cursor is what is left
        raise invalid({"cursor": exc.message}) from exc


def calls_page(center: CallCenter, status: str, *, cursor: str | None, limit: int) -> Page[Call]:
    if status == CallStatus.WAITING:
        return _waiting_page(center, cursor=cursor, limit=limit)
    try:
        if status == CallStatus.OFFERED:
            return center.calls.ringing(cursor=cursor, limit=limit)
        return center.calls.in_progress(cursor=cursor, limit=limit)
    except errors.InvalidRequest as exc:
        raise invalid({"cursor": exc.message}) from exc


def _waiting_page(center: CallCenter, *, cursor: str | None, limit: int) -> Page[Call]:
    after = None
    if cursor:
        try:
            after = decode_state(cursor, purpose=WAITING_PURPOSE)["after"]
        except (errors.InvalidRequest, KeyError) as exc:
            raise invalid({"cursor": INVALID}) from exc
    entries, last_key = center.line.waiting_calls(limit=limit, cursor=after)
    call_ids = [entry["call_id"] for entry in entries]
    found = batch.get_items(center.db, center.table.name, [keys.call(call_id) for call_id in call_ids])
    by_id = {call.call_id: call for call in map(call_from_item, found)}
    calls = [by_id[call_id] for call_id in call_ids if call_id in by_id]
    waiting = [call for call in calls if call.status == CallStatus.WAITING]
    return Page(waiting, encode_state({"after": last_key}, purpose=WAITING_PURPOSE) if last_key else None)
