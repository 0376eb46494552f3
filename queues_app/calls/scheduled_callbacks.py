"""Scheduled callbacks: a caller to be called back at a time they chose.

`schedule` keeps a call (`callback_scheduled`) out of line until its time; then the
escalation loop puts it in line (`QueuedCallbacks.enter_due_retries`, which takes due
retries and scheduled callbacks alike), arriving at that moment with its line's
`callback_priority`, and from there it is a queued callback like any other. A number has
one scheduled callback at a time on a line, and for `CALLBACK_DUPLICATE_SECONDS` after
its time: a marker item per line and number, put on condition that none stands, refuses
the second one naming the first (the same request sent again is answered as it was).
A supervisor moves or cancels one before its time. Design: docs/queued-callbacks.md.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime, timedelta

from django.conf import settings

from queues_app.agents.skills import validate_preferences
from queues_app.calls.queued_callbacks import checked_number
from queues_app.calls.records import Call, CallStatus, Outcome
from queues_app.calls.store import Calls, call_from_item, call_to_item
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import batch, errors
from queues_app.ddb.clock import on_the_clock, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.figures import facts
from queues_app.lines.store import LineStore
from queues_app.routing.line import with_line_requires

MAX_AHEAD = timedelta(days=366)  # a callback is scheduled at most this far ahead


def duplicates_until(at: datetime) -> str:
    """Until when a callback at `at` refuses another for its number on its line."""
    return to_iso(at + timedelta(seconds=settings.CALLBACK_DUPLICATE_SECONDS))


class ScheduledCallbacks:
    """Callbacks at a chosen time. Given the table, the calls and the lines (the line
    must exist; its requirements and `callback_priority` apply)."""

    def __init__(self, table: CallCenterTable, calls: Calls, lines: LineStore):
        self.table, self.calls, self.lines = table, calls, lines
        self.db = table.db

    def schedule(self, line_id: str, preferences: dict, number: str, at: datetime, *, callback: str | None = None):
        """A callback on `line_id` at `at` (aware). Returns (call, created): sent again
        with the same line, number, time and preferences, the first one (created False);
        another for the same number on the line within the window is a Conflict naming it."""
        number = checked_number(number)
        moment = self._checked_time(at)
        line = self.lines.current_line(line_id)
        if line is None:
            raise errors.NotFound(f"No line {line_id!r}.")
        wanted = with_line_requires(validate_preferences(self.table.catalog, preferences), line)
        when = to_iso(at)
        call = Call(
            call_id=uuid.uuid4().hex[:16],
            status=CallStatus.CALLBACK_SCHEDULED,
            preferences=wanted,
            priority=line.callback_priority or 0,
            arrived_at=when,
            callback=callback,
            line=line.line_id,
            steps=list(line.steps),
            callback_number=number,
            callback_requested_at=to_iso(moment),
            callback_retry_at=when,
        )
        marker = keys.callback_number(line.line_id, number)
        try:
            self.table.transact(
                [
                    {
                        "Put": {
                            "TableName": self.table.name,
                            "Item": marshal({**marker, "call_id": call.call_id, "until": duplicates_until(at)}),
                            "ConditionExpression": "attribute_not_exists(pk) OR #until < :now",
                            "ExpressionAttributeNames": {"#until": "until"},
                            "ExpressionAttributeValues": marshal({":now": to_iso(moment)}),
                        }
                    },
                    {"Put": {"TableName": self.table.name, "Item": marshal(call_to_item(call))}},
                    self._due_item(call, when),
                    self.table.fact_action(facts.CALLBACK_REQUESTED, call, call.callback_requested_at or ""),
                ]
            )
        except errors.TransactionCancelled as exc:
            if exc.lost_race:
                raise errors.Conflict("Another callback for this number was being scheduled; try again.") from exc
            return self._scheduled_already(call, marker), False
        return call, True

    def _checked_time(self, at: datetime) -> datetime:
        """`at` is aware and to come within MAX_AHEAD; returns the moment it was checked at."""
        moment = self.table.clock()
        if at.tzinfo is None:
            raise errors.InvalidRequest(
                "at: give the time with its offset, e.g. 2026-11-28T10:00:00-05:00.", field="at"
            )
        if not moment < at <= moment + MAX_AHEAD:
            raise errors.InvalidRequest(f"at: a time to come, within {MAX_AHEAD.days} days.", field="at")
        return moment

    def _scheduled_already(self, asked: Call, marker: dict) -> Call:
        found = self.db.call("get_item", TableName=self.table.name, Key=marshal(marker), ConsistentRead=True)
        existing = self.calls.find(unmarshal(found["Item"])["call_id"]) if found.get("Item") else None
        if existing is None:
            raise errors.Conflict("Another callback for this number was being changed; try again.")
        same = (existing.arrived_at, existing.preferences, existing.line) == (
            asked.arrived_at,
            asked.preferences,
            asked.line,
        )
        if same and existing.status == CallStatus.CALLBACK_SCHEDULED:
            return existing
        raise errors.Conflict(
            f"This number has a callback on line {asked.line} already: call {existing.call_id}, "
            f"{existing.state.replace('_', ' ')}, for {on_the_clock(existing.arrived_at)}.",
            now={"call": existing},
        )

    def _due_item(self, call: Call, when: str) -> dict:
        return {
            "Put": {
                "TableName": self.table.name,
                "Item": marshal({**keys.callback_retry(call.call_id, when), "call_id": call.call_id}),
            }
        }

    def move(self, call_id: str, version: int, at: datetime) -> Outcome:
        """A scheduled callback at another time, on condition that it is as read."""
        call = self._as_read(call_id, version)
        self._checked_time(at)
        when = to_iso(at)
        moved = dataclasses.replace(call, arrived_at=when, callback_retry_at=when, version=call.version + 1)
        marker = keys.callback_number(call.line or "", call.callback_number or "")
        self.table.transact(
            [
                self._unchanged(call, "SET arrived_at = :at, callback_retry_at = :at", {":at": when}),
                self._due_gone(call),
                self._due_item(moved, when),
                self.table.update(
                    marker, "SET #until = :until", {":until": duplicates_until(at)}, names={"#until": "until"}
                ),
            ]
        )
        return Outcome(call=moved)

    def cancel(self, call_id: str, version: int) -> Outcome:
        """A scheduled callback withdrawn before its time: it never entered the line, so it
        leaves nothing to count (the audit trail keeps it)."""
        call = self._as_read(call_id, version)
        self.table.transact(
            [
                {
                    "Delete": {
                        "TableName": self.table.name,
                        "Key": marshal(keys.call(call_id)),
                        "ConditionExpression": "#status = :scheduled AND version = :v",
                        "ExpressionAttributeNames": {"#status": "status"},
                        "ExpressionAttributeValues": marshal(
                            {":scheduled": CallStatus.CALLBACK_SCHEDULED, ":v": call.version}
                        ),
                    }
                },
                self._due_gone(call),
                {
                    "Delete": {
                        "TableName": self.table.name,
                        "Key": marshal(keys.callback_number(call.line or "", call.callback_number or "")),
                    }
                },
            ]
        )
        return Outcome(call=call)

    def _as_read(self, call_id: str, version: int) -> Call:
        call = self.calls.get(call_id)
        if call.status != CallStatus.CALLBACK_SCHEDULED:
            raise errors.Conflict(
                f"Call {call_id} is {call.state.replace('_', ' ')}: only a callback still to come can be changed.",
                now={"call": call},
            )
        if call.version != version:
            raise errors.Conflict(f"Callback {call_id} changed since you read it.", now={"call": call})
        return call

    def _unchanged(self, call: Call, expression: str, values: dict) -> dict:
        return self.table.update(
            keys.call(call.call_id),
            f"{expression}, version = version + :one",
            {**values, ":one": 1, ":scheduled": CallStatus.CALLBACK_SCHEDULED, ":v": call.version},
            condition="#status = :scheduled AND version = :v",
        )

    def _due_gone(self, call: Call) -> dict:
        return {
            "Delete": {
                "TableName": self.table.name,
                "Key": marshal(keys.callback_retry(call.call_id, call.callback_retry_at or "")),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }

    def upcoming(self, limit: int = 100) -> list[Call]:
        """The callbacks out of line until a time (scheduled, and not reached to be tried
        again), soonest first: one Query per partition, sent together, then their calls."""

        due = sorted(self.table.timed(keys.CALLBACK_RETRIES.partitions(), limit), key=lambda item: item["sk"])[:limit]
        read = batch.get_items(self.db, self.table.name, [keys.call(item["call_id"]) for item in due])
        found = {call.call_id: call for call in map(call_from_item, read)}
        return [found[item["call_id"]] for item in due if item["call_id"] in found]
