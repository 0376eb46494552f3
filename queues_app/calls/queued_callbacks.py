"""Queued callbacks: a waiting caller hangs up and is called back at their turn.

`request` turns a waiting call into a callback: same call, same place in line (priority,
arrival, line), now with the number to dial. Its turn comes like any caller's: an agent
who fits is chosen and reserved (agent-first: the assignment is an offer, always, for
CALLBACK_DIAL_SECONDS; the phone system hears `call.callback_due` with the number and the
agent). The phone system reports how dialling went (`result`): `connected`, the call is in
progress with that agent (as an offer picked up); otherwise the agent is freed (back to the
queue, as after a call) and the call leaves the line until its line's
`callback_retry_seconds` have passed (a `CALLBACKRETRY#<n>` item sorted by when), then the
escalation loop puts it back at its original place (`enter_due_retries`); past the line's
`callback_max_attempts` it ends, `callback_failed`. A result that comes too late finds the
offer gone: the reservation ran out as an offer does (the agent not ready, `missed`; the
call back at its place). Every step is one transaction conditioned on what was read, and
a result sent again is answered as it was. Design: docs/queued-callbacks.md.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from datetime import timedelta

from django.conf import settings

from queues_app import event_names as named
from queues_app.agents.records import Agent
from queues_app.agents.roster import Agents
from queues_app.calls.endings import Endings, RangOut
from queues_app.calls.offers import Offers, offered_to
from queues_app.calls.records import Call, CallStatus, Outcome
from queues_app.calls.store import ENDED_CALL_RETENTION, Calls
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable, leg
from queues_app.ddb import errors
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.codec import marshal
from queues_app.figures import facts
from queues_app.lines.records import Line
from queues_app.lines.store import LineStore
from queues_app.routing.line import WaitingLine
from queues_app.routing.matching import Matcher

log = logging.getLogger(__name__)

# E.164: a plus, then up to 15 digits, the first not 0 (at least 8 in all: no short codes).
E164 = re.compile(r"^\+[1-9][0-9]{7,14}$")
E164_RULE = "an international number in E.164 form: '+' then 8 to 15 digits, e.g. +33612345678"
CONNECTED = "connected"
NOT_REACHED = ("no_answer", "busy", "failed")
RESULTS = (CONNECTED, *NOT_REACHED)


# Out of line until a time: not reached and to be tried again, or scheduled (scheduled_callbacks.py).
OUT_OF_LINE = (CallStatus.CALLBACK_RETRY, CallStatus.CALLBACK_SCHEDULED)


def checked_number(number: object) -> str:
    if not isinstance(number, str) or not E164.match(number):
        raise errors.InvalidRequest(f"number: {E164_RULE}.", field="number")
    return number


def callback_offered(call: Call, line: Line | None, estimated_wait_seconds: float | None) -> bool:
    """Whether the phone system should offer this caller a callback now: a waiting call
    (not one already) on a line that says when (`callback_offer_after_seconds` waited, or
    the estimated wait above `callback_offer_wait_seconds`)."""
    if line is None or call.status != CallStatus.WAITING or call.callback_number:
        return False
    waited = call.waited_seconds or 0.0
    if line.callback_offer_after_seconds is not None and waited >= line.callback_offer_after_seconds:
        return True
    bound = line.callback_offer_wait_seconds
    return bound is not None and estimated_wait_seconds is not None and estimated_wait_seconds > bound


class QueuedCallbacks:
    """Callers called back at their turn. Given the table, the roster, the calls, the
    waiting line (a callback keeps its place, and comes back to it), the matcher (a
    callback due again is offered at once), the lines (their callback settings), the
    offers (a callback reached is an offer picked up) and the endings (one not reached
    frees its agent as a call ending does)."""

    def __init__(
        self,
        table: CallCenterTable,
        agents: Agents,
        calls: Calls,
        line: WaitingLine,
        matcher: Matcher,
        lines: LineStore,
        offers: Offers,
        endings: Endings,
    ):
        self.table, self.agents, self.calls, self.line, self.matcher = table, agents, calls, line, matcher
        self.lines, self.offers, self.endings = lines, offers, endings
        self.db = table.db

    # --- asked for -------------------------------------------------------------------

    def request(self, call_id: str, number: str) -> Outcome:
        """The waiting caller is to be called back on `number` instead of holding: same
        place in line. Sent again with the same number, answered as it was (`replayed`)."""
        number = checked_number(number)
        call = self.calls.get(call_id)
        for _attempt in range(3):  # the call changed meanwhile (relaxed, say): read it again
            if call.callback_number:
                return self._requested_already(call, number)
            if call.status != CallStatus.WAITING:
                raise errors.Conflict(
                    f"Call {call_id} is {call.state.replace('_', ' ')}: only a waiting caller can be called back.",
                    now={"call": call},
                )
            stamp = to_iso(self.table.clock())
            asked = dataclasses.replace(
                call, callback_number=number, callback_requested_at=stamp, version=call.version + 1
            )
            try:
                self.table.transact(self._request_actions(call, asked))
            except errors.TransactionCancelled as exc:
                if exc.lost_race:
                    raise errors.Conflict(f"Call {call_id} was being changed at the same moment; try again.") from exc
                call = self.calls.get(call_id)
                continue
            return Outcome(call=asked)
        raise errors.Conflict(f"Call {call_id} was being changed at the same moment; try again.")

    def _request_actions(self, call: Call, asked: Call) -> list[dict]:
        place = keys.waiting_caller(self.table.wanted(call.preferences), call.wait_sk or "")
        return [
            self.table.update(
                keys.call(call.call_id),
                "SET callback_number = :number, callback_requested_at = :now, callback_results = :none, "
                "version = version + :one",
                {
                    ":number": asked.callback_number,
                    ":now": asked.callback_requested_at,
                    ":none": [],
                    ":one": 1,
                    ":waiting": CallStatus.WAITING,
                    ":v": call.version,
                },
                condition="#status = :waiting AND version = :v",
            ),
            # Its place, marked for the waiting list (its last digits).
            self.table.update(
                place,
                "SET callback_tail = :tail",
                {":tail": (asked.callback_number or "")[-4:]},
                condition="attribute_exists(pk)",
            ),
            *self.table.event_actions(named.CALLBACK_REQUESTED, asked),
            self.table.fact_action(facts.CALLBACK_REQUESTED, asked, asked.callback_requested_at or ""),
        ]

    def _requested_already(self, call: Call, number: str) -> Outcome:
        if call.callback_number == number:
            return Outcome(call=call, replayed=True)
        raise errors.Conflict(
            f"Call {call.call_id} is to be called back on another number already.", now={"call": call}
        )

    # --- dialled ---------------------------------------------------------------------

    def result(self, call_id: str, result: str, *, attempt: int | None = None, agent_id: str | None = None) -> Outcome:
        """How dialling the callback went, as the phone system reports it while the agent is
        reserved (`callback_due`). Sent again, answered as it was (`replayed`). With
        `attempt` (the dialling's number: the results recorded before it, plus one), a
        result sent again once the next attempt is under way is still answered as it was,
        never taken for the next attempt's."""
        if result not in RESULTS:
            raise errors.InvalidRequest(f"result: one of {', '.join(RESULTS)}.", field="result")
        call = self.calls.get(call_id)
        if not call.callback_number:
            raise errors.Conflict(f"Call {call_id} is no callback: no callback was asked for.", now={"call": call})
        if attempt is not None and attempt != len(call.callback_results) + 1:
            return self._attempt_reported(call, result, attempt)
        # Each read is checked: the reservation may run out and another agent be reserved between two.
        offered_to(call, agent_id)
        if result == CONNECTED:
            if call.state != CallStatus.CALLBACK_DUE:
                return self._reported_already(call, result)
            line = self.lines.current_line(call.line or "")
            from_request = line is not None and line.callback_wait_from == "request"
            return self.offers.answered(
                call_id, callback=True, wait_from_request=from_request, agent_id=agent_id, read=call
            )
        for _attempt in range(3):  # the agent changed on the same call (a next status set): again
            if call.state != CallStatus.CALLBACK_DUE:
                return self._reported_already(call, result)
            offered_to(call, agent_id)
            agent = self.agents.get(call.agent_id or "")
            ended = self.endings.end_ringing(agent, call_id, "queue", self._not_reached(result, call))
            if ended is not None:
                return Outcome(agent=ended.agent, call=self.calls.get(call_id))
            call = self.calls.get(call_id)
        raise errors.Conflict(f"Call {call_id} was being changed at the same moment; try again.")

    def _attempt_reported(self, call: Call, result: str, attempt: int) -> Outcome:
        """A result naming an attempt other than the one under way: an earlier one, sent
        again (answered as it was, or refused if it said otherwise), or one not made yet."""
        if 1 <= attempt <= len(call.callback_results):
            reported = call.callback_results[attempt - 1].get("result")
            if reported == result:
                return Outcome(call=call, replayed=True)
            raise errors.Conflict(
                f"Attempt {attempt} of call {call.call_id} was reported {str(reported).replace('_', ' ')} already.",
                now={"call": call},
            )
        raise errors.Conflict(
            f"Call {call.call_id} has had {len(call.callback_results)} attempt(s) reported: "
            f"attempt {attempt} is not under way.",
            now={"call": call},
        )

    def _reported_already(self, call: Call, result: str) -> Outcome:
        """A result for a callback whose agent is no longer reserved: this very result, sent
        again (answered as it was), or a refusal saying what became of the call."""
        last = call.callback_results[-1] if call.callback_results else {}
        if last.get("result") == result and call.state != CallStatus.CALLBACK_WAITING:
            return Outcome(call=call, replayed=True)
        if call.state == CallStatus.CALLBACK_WAITING and any(p.get("how") == "missed" for p in call.legs[-1:]):
            raise errors.Conflict(
                f"Call {call.call_id}'s agent was reserved too long with no result: the callback went back to its "
                "place in line.",
                now={"call": call},
            )
        raise errors.Conflict(
            f"Call {call.call_id} is {call.state.replace('_', ' ')}: no agent is reserved for it.", now={"call": call}
        )

    def _not_reached(self, result: str, call: Call) -> RangOut:
        """The callback's changes when the caller was not reached: tried again after its
        line's `callback_retry_seconds`, or ended past its `callback_max_attempts`. Made
        from the call as read while due: changed since (its reservation ran out), the
        transaction's conditions fail and the result is refused."""

        def changes(agent: Agent, then: str, stamp: str) -> list[dict]:
            wait, most = self._retry_settings(call)
            tried = [*call.callback_results, {"result": result, "agent_id": agent.agent_id, "at": stamp}]
            attempts = sum(1 for entry in tried if entry.get("result") in NOT_REACHED)
            part = leg(dataclasses.replace(agent, status_since=call.assigned_at), stamp, result)
            after = dataclasses.replace(
                call, agent_id=None, agent_name=None, offer_sk=None, callback_results=tried, legs=[*call.legs, part]
            )
            if attempts >= most:
                return self._failed(call, dataclasses.replace(after, status=CallStatus.CALLBACK_FAILED), stamp)
            retry_at = to_iso((from_iso(stamp) or self.table.clock()) + timedelta(seconds=wait))
            later = dataclasses.replace(after, status=CallStatus.CALLBACK_RETRY, callback_retry_at=retry_at)
            return self._retried(call, later, stamp)

        return changes

    def _retry_settings(self, call: Call) -> tuple[int, int]:
        """(seconds before another attempt, attempts at most): the call's line's, else the centre's."""
        line = self.lines.current_line(call.line) if call.line else None
        return (
            (line.callback_retry_seconds if line else None) or settings.CALLBACK_RETRY_SECONDS,
            (line.callback_max_attempts if line else None) or settings.CALLBACK_MAX_ATTEMPTS,
        )

    def _leaves_agent(self, call: Call, after: Call, stamp: str, expression: str, values: dict) -> list[dict]:
        """The call's update off its reserved agent (on condition that the reservation still
        stands) and the reservation's offer item deleted: what settles a result against the
        reservation's timeout."""
        return [
            self.table.update(
                keys.call(call.call_id),
                f"{expression}, callback_results = :tried, legs = :legs, version = version + :one "
                "REMOVE offer_sk, agent_id, agent_name, assigned_at",
                {
                    **values,
                    ":tried": after.callback_results,
                    ":legs": after.legs,
                    ":one": 1,
                    ":assigned": CallStatus.ASSIGNED,
                    ":agent": call.agent_id,
                    ":offer": call.offer_sk,
                },
                condition="#status = :assigned AND agent_id = :agent AND offer_sk = :offer",
            ),
            self.table.offer_gone(call),
        ]

    def _retried(self, call: Call, later: Call, stamp: str) -> list[dict]:
        due = keys.callback_retry(call.call_id, later.callback_retry_at or "")
        later.version = call.version + 1
        return [
            *self._leaves_agent(
                call,
                later,
                stamp,
                "SET #status = :retry, callback_retry_at = :retry_at",
                {":retry": CallStatus.CALLBACK_RETRY, ":retry_at": later.callback_retry_at},
            ),
            {"Put": {"TableName": self.table.name, "Item": marshal({**due, "call_id": call.call_id})}},
            *self.table.event_actions(named.CALLBACK_RETRY, later),
        ]

    def _failed(self, call: Call, failed: Call, stamp: str) -> list[dict]:
        failed.ended_at, failed.version = stamp, call.version + 1
        expires = int((self.table.clock() + ENDED_CALL_RETENTION).timestamp())
        return [
            *self._leaves_agent(
                call,
                failed,
                stamp,
                "SET #status = :failed, ended_at = :now, expires_at = :expires",
                {":failed": CallStatus.CALLBACK_FAILED, ":now": stamp, ":expires": expires},
            ),
            *self.table.event_actions(named.CALLBACK_FAILED, failed),
            # Never answered: counted as a caller who left unanswered (docs/queued-callbacks.md).
            self.table.fact_action(facts.ABANDONED, failed, stamp),
            self.table.fact_action(facts.CALLBACK_FAILED, failed, stamp),
        ]

    # --- tried again -----------------------------------------------------------------

    def enter_due_retries(self, limit: int = 100) -> list[Call]:
        """Every callback whose retry (or scheduled time) is due in line at its place (one Query per
        partition, sent together), then offered to an agent who fits at once. Run by the
        escalation loop; returns the calls as they are after."""
        entered = []
        for item in self.table.due(keys.CALLBACK_RETRIES.partitions(), limit):
            call = self._enter(item["call_id"], item["sk"])
            if call is not None:
                entered.append(call)
        return entered

    def _enter(self, call_id: str, due_sk: str) -> Call | None:
        call = self.calls.find(call_id)
        key = {"pk": keys.CALLBACK_RETRIES.of(call_id), "sk": due_sk}
        if call is None or call.status not in OUT_OF_LINE:  # cancelled, or entered already
            self.db.call("delete_item", TableName=self.table.name, Key=marshal(key))
            return None
        back = dataclasses.replace(
            call,
            status=CallStatus.WAITING,
            callback_retry_at=None,
            version=call.version + 1,
            why=[],
            wait_sk=keys.wait_position(call.priority, call.arrived_at, call.call_id),
        )
        scheduled = call.status == CallStatus.CALLBACK_SCHEDULED
        arriving = [self.table.fact_action(facts.OFFERED, back, back.arrived_at)] if scheduled else []
        try:
            self.table.transact(
                [
                    {
                        "Delete": {
                            "TableName": self.table.name,
                            "Key": marshal(key),
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                    self.table.update(
                        keys.call(call_id),
                        "SET #status = :waiting, wait_sk = :wait_sk, why = :why, version = version + :one "
                        "REMOVE callback_retry_at",
                        {
                            ":waiting": CallStatus.WAITING,
                            ":wait_sk": back.wait_sk,
                            ":why": [],
                            ":one": 1,
                            ":was": call.status,
                            ":v": call.version,
                        },
                        condition="#status = :was AND version = :v",
                    ),
                    {"Put": {"TableName": self.table.name, "Item": marshal(self.line.wait_item(back))}},
                    *self.table.count_updates(self.table.wanted(back.preferences), +1),
                    *self.table.line_count_update(back.line, +1),
                    # A scheduled callback enters the line now: offered from now, as a caller arriving.
                    *arriving,
                ]
            )
        except errors.TransactionCancelled:
            return None  # entered by another sweep at the same moment, or changed: the next sweep reads it again
        log.info("callback %s: back at its place in line for another attempt", call_id)
        return self.matcher.match(back, new_call=False) or back
