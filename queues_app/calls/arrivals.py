"""Callers arriving: assigned at once or waiting, an idempotent retry of one, and a waiting
caller hanging up."""

from __future__ import annotations

import dataclasses
import uuid
from datetime import datetime, timedelta

from queues_app.agents.skills import ANY, validate_preferences
from queues_app.calls.records import Call, CallStatus, Outcome, QueueOrder
from queues_app.calls.store import ABANDONED, ENDED_CALL_RETENTION, CallExists, Calls, call_id_for_idempotency_key
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import errors, replay
from queues_app.ddb.clock import centre_zone, to_iso
from queues_app.event_names import CALL_REFUSED
from queues_app.figures import counters, facts
from queues_app.lines import entry
from queues_app.lines.records import Line
from queues_app.lines.store import LineStore
from queues_app.routing.line import LineFull, WaitingLine, with_line_requires, without_line_requires
from queues_app.routing.matching import Matcher
from queues_app.steps import validate_steps


class Arrivals:
    """Callers arriving and hanging up while they wait. Given the table, the calls, the
    waiting line, the matcher, and the agents' order a call takes by default (FIFO or LIFO)."""

    def __init__(
        self,
        table: CallCenterTable,
        calls: Calls,
        line: WaitingLine,
        matcher: Matcher,
        default_order: str,
        lines: LineStore,
    ):
        self.table, self.calls, self.line, self.matcher = table, calls, line, matcher
        self.db, self.catalog = table.db, table.catalog
        self.default_order = default_order
        self.lines = lines

    def create_call(
        self,
        preferences: dict,
        *,
        priority: int = 0,
        order: str | None = None,
        call_id: str | None = None,
        idempotency_key: str | None = None,
        callback: str | None = None,
        line: str | None = None,
        steps: list | None = None,
        preferred: tuple[str, int] | None = None,
    ) -> tuple[Call, bool]:
        """Assign the caller at once (to an agent meeting their routing `steps`, if any) or
        make them wait on their line (`main` by default), which must exist and be open
        (Refused `closed`; full: `_start_waiting`). Returns (call, created). With an
        idempotency key, a retry returns the first request's call (created False), another
        request with it is refused (`KeyReused`). `callback`: an API token's id; `preferred`:
        the agent to keep the caller for, and for how many seconds."""
        lines = self.lines.current()
        on = entry.line_for(lines, line)
        asked = self._checked(preferences, priority, order)
        preferences = with_line_requires(asked, on)
        given, kept = validate_steps(steps, self.catalog.names), checked_preferred(preferred)
        request_digest = call_request_digest(asked, priority, order, line, given, kept)
        order = order or self.default_order
        if idempotency_key:
            call_id = call_id_for_idempotency_key(idempotency_key)
            existing = self.find_keyed_call(idempotency_key, request_digest)
            if existing:
                return existing, False
        call = Call(
            call_id=call_id or uuid.uuid4().hex[:16],
            status=CallStatus.WAITING,
            preferences=preferences,
            priority=priority,
            order=order,
            arrived_at=to_iso(self.table.clock()),
            callback=callback,
            request_digest=request_digest if idempotency_key else None,
            line=on.line_id,
            steps=given or list(on.steps),  # the line's own unless the caller brings some
            **kept_for(kept, self.table.clock()),
        )
        try:
            entry.refuse_if_closed(on, self.table.clock(), centre_zone())
        except errors.Refused as refusal:
            raise self._refused(call, refusal) from None
        try:
            return self._place(call, on, lines), True
        except CallExists:
            # A copy of this request with the same key got there first.
            existing = self.find_keyed_call(idempotency_key or "", request_digest) if idempotency_key else None
            return existing or self.calls.get(call.call_id), False

    def _place(self, call: Call, on: Line, lines: list[Line]) -> Call:
        """The new caller assigned, or waiting on `on` (and looked for once more)."""
        counters.note(self.db, counters.CALLS, "enqueued")
        assigned = self.matcher.match(call, new_call=True)
        if assigned:
            counters.note(self.db, counters.CALLS, "completed")
            return assigned
        waiting = self._start_waiting(call, on, lines)
        # Look once more: an agent may have been queued while we started waiting.
        assigned = self.matcher.match(waiting, new_call=False)
        if assigned:
            counters.note(self.db, counters.CALLS, "completed")
        return assigned or waiting

    def _checked(self, preferences: dict, priority: int, order: str | None) -> dict:
        """The caller's preferences, checked with their priority and order."""
        asked = validate_preferences(self.catalog, preferences)
        if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= keys.MAX_PRIORITY:
            raise errors.InvalidRequest(f"priority must be a whole number from 0 to {keys.MAX_PRIORITY}.")
        if order is not None and order not in QueueOrder.ALL:
            raise errors.InvalidRequest("order must be 'fifo' or 'lifo'.")
        return asked

    def _start_waiting(self, call: Call, on: Line, lines: list[Line]) -> Call:
        """The caller waits on their line or, while it is full, on the line its overflow
        leads to (keeping their arrival), or is refused (`full`); a refusal is counted and
        told to the token's callback (`call.refused`)."""
        first = on
        for _hop in range(entry.MAX_HOPS):
            try:
                return self.line.start_waiting(call, max_waiting=on.max_waiting)
            except LineFull:
                target = entry.overflow_target(on, lines, self.table.clock(), centre_zone())
                if target is None:
                    raise self._refused(call, entry.refuse_full(first)) from None
                moved = with_line_requires(without_line_requires(call.preferences, on), target)
                call.overflowed = [*call.overflowed, {"from": on.line_id, "to": target.line_id, "at": call.arrived_at}]
                call.preferences, call.line, call.wait_sk, on = moved, target.line_id, None, target
        raise self._refused(call, entry.refuse_full(first))

    def _refused(self, call: Call, refusal: errors.Refused) -> errors.Refused:
        """Count the refusal and tell the token's callback (one event, in a transaction of
        its own: there is no change of a call to write it with)."""
        counters.note(self.db, counters.CALLS, "refused")
        told = dataclasses.replace(call, status=CallStatus.REFUSED, end_reason=refusal.reason, wait_sk=None)
        told.ended_at = told.arrived_at
        counted = told.arrived_at or to_iso(self.table.clock())
        line = dataclasses.replace(told, line=refusal.line_id or told.line)  # the line that turned them away
        self.table.transact(
            [*self.table.event_actions(CALL_REFUSED, told), self.table.fact_action(facts.REFUSED, line, counted)]
        )
        return refusal

    def find_retry(
        self,
        preferences: dict,
        *,
        priority: int = 0,
        order: str | None = None,
        idempotency_key: str,
        line: str | None = None,
        steps: list | None = None,
        preferred: tuple[str, int] | None = None,
    ) -> Call | None:
        """The call an earlier request with this idempotency key made, if any (`KeyReused`
        when that request asked for something else)."""
        asked = validate_preferences(self.catalog, preferences)
        routing = validate_steps(steps, self.catalog.names)
        digest = call_request_digest(asked, priority, order, line, routing, checked_preferred(preferred))
        return self.find_keyed_call(idempotency_key, digest)

    def find_keyed_call(self, idempotency_key: str, request_digest: str | None) -> Call | None:
        """The call an idempotency key made, if any; `KeyReused` when that call was made by
        another request (`request_digest` differs): the first request's call is never the
        answer to a different one."""
        existing = self.calls.find(call_id_for_idempotency_key(idempotency_key))
        if existing and request_digest and existing.request_digest and existing.request_digest != request_digest:
            raise errors.KeyReused(
                "This idempotency key was first sent with a different request "
                "(other preferences, priority, order or line)."
            )
        return existing

    def abandon(self, call_id: str) -> Outcome:
        """The caller hung up while waiting: out of line at once (their waiting item and
        the count in the same transaction as the call), recorded as abandoned with their
        wait. A call abandoned already is answered as done (`replayed`: the hang-up sent
        again); one that is no longer waiting otherwise gets a Conflict saying what
        happened; a race with an assignment ends with exactly one of the two."""
        for _attempt in range(3):
            call = self.calls.get(call_id)
            if call.status == CallStatus.ABANDONED:
                return Outcome(call=call, replayed=True)
            if call.status != CallStatus.WAITING:
                raise errors.Conflict(
                    _not_waiting(call), current={"status": call.status, "agent_id": call.agent_id}, now={"call": call}
                )
            moment = self.table.clock()
            stamp = to_iso(moment)
            after = dataclasses.replace(
                call, status=CallStatus.ABANDONED, ended_at=stamp, version=call.version + 1, wait_sk=None
            )
            try:
                self.table.transact(
                    [
                        self.table.update(
                            keys.call(call_id),
                            "SET #status = :abandoned, ended_at = :now, expires_at = :expires, "
                            "version = version + :one REMOVE wait_sk",
                            {
                                ":abandoned": CallStatus.ABANDONED,
                                ":now": stamp,
                                ":expires": int((moment + ENDED_CALL_RETENTION).timestamp()),
                                ":one": 1,
                                ":waiting": CallStatus.WAITING,
                                ":version": call.version,
                            },
                            condition="#status = :waiting AND version = :version",
                        ),
                        *self.table.leave_line_actions(call),
                        *self.table.event_actions(ABANDONED, after),
                        self.table.fact_action(facts.ABANDONED, after, stamp),
                    ]
                )
            except errors.TransactionCancelled:
                continue  # assigned, relaxed or abandoned meanwhile: look again
            counters.note(self.db, counters.CALLS, "abandoned")
            return Outcome(call=after)
        raise errors.Conflict(f"Call {call_id} was being changed at the same moment; try again.")


def call_request_digest(
    preferences: dict,
    priority: int,
    order: str | None,
    line: str | None = None,
    steps: list | None = None,
    preferred: tuple[str, int] | None = None,
) -> str:
    """What a new caller's request asked for, as an idempotency key's record of it (the
    line, steps and preferred agent only when given, so that keys recorded before them
    still match)."""
    asked: dict = {
        "preferences": {k: (None if v is ANY else v) for k, v in preferences.items()},
        "priority": priority,
        "order": order,
    }
    asked |= {"line": line} if line else {}
    asked |= {"steps": steps} if steps else {}
    return replay.digest(asked | ({"preferred": list(preferred)} if preferred else {}))


MAX_PREFERRED_SECONDS = 3600


def checked_preferred(preferred: tuple[str, int] | None) -> tuple[str, int] | None:
    """The preferred agent and seconds, checked: the time is 1 to 3600 whole seconds."""
    if preferred is None:
        return None
    agent_id, seconds = preferred
    if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= MAX_PREFERRED_SECONDS:
        raise errors.InvalidRequest(
            f"preferred_for_seconds must be a whole number from 1 to {MAX_PREFERRED_SECONDS}.",
            field="preferred_for_seconds",
        )
    return agent_id, seconds


def kept_for(preferred: tuple[str, int] | None, moment: datetime) -> dict:
    """A new call's fields for its preferred agent (none without one)."""
    if preferred is None:
        return {}
    return {"preferred_agent_id": preferred[0], "preferred_until": to_iso(moment + timedelta(seconds=preferred[1]))}


def _not_waiting(call: Call) -> str:
    if call.status == CallStatus.ASSIGNED:
        return f"Call {call.call_id} is no longer waiting: it was assigned to {call.agent_name or call.agent_id}."
    return f"Call {call.call_id} is no longer waiting: it is {call.status}."
