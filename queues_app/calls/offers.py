"""An offered call: picked up in time or not (ring-no-answer).

With ANSWER_TIMEOUT_SECONDS set, an assignment is an offer: the call's transaction also
puts an offer item (`OFFER#<n>`, sorted by deadline; calls/store.py `answer_actions`).
The phone system confirms with `answered`, whose transaction deletes the offer item on
the condition that it is still there; a sweep (`miss_expired_offers`, run by the
escalation loop) takes the offers past their deadline and, in one transaction that
deletes the same item on the same condition, puts the call back at its place in line
(same priority and arrival), sets the agent not ready (`missed`) and tells the call's
listener (`call.missed`); then the next fitting agent is tried at once. Of an answer and
a timeout at the same moment, exactly one transaction finds the offer item: DynamoDB
settles the race, not the clocks of two processes.
"""

from __future__ import annotations

import dataclasses
import logging

from queues_app import event_names as named
from queues_app.agents.records import DISCONNECTED, MISSED, Agent, AgentStatus, StatusChange
from queues_app.agents.roster import Agents
from queues_app.calls.records import Call, CallStatus, Outcome
from queues_app.calls.store import Calls
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable, status_clause, unless_seen_since
from queues_app.ddb import errors, replay
from queues_app.ddb.clock import to_iso
from queues_app.ddb.codec import marshal
from queues_app.figures import facts
from queues_app.routing.line import WaitingLine
from queues_app.routing.matching import Matcher

log = logging.getLogger(__name__)
# An offered call's agent is ringing; an earlier version left them attending it.
ON_A_CALL = {":ringing": AgentStatus.RINGING, ":attending": AgentStatus.ATTENDING}


def offered_to(call: Call, agent_id: str | None) -> None:
    """Refuses a change meant for the offer to `agent_id` (when named) once the call is
    offered to another agent: that offer ran out and the call was offered again."""
    if agent_id is None or call.offer_sk is None or call.agent_id == agent_id:
        return
    if call.callback_number:
        said = f"has {call.agent_name} reserved now, not that agent: a reservation for them ran out or was never made"
    else:
        said = f"is offered to {call.agent_name} now, not to that agent: an offer to them ran out or was never made"
    raise errors.Conflict(f"Call {call.call_id} {said}.", now={"call": call})


class Offers:
    """Offered calls answered or missed. Given the table, the roster, the calls, the waiting
    line (a missed call goes back to its place) and the matcher (then to the next agent)."""

    def __init__(self, table: CallCenterTable, agents: Agents, calls: Calls, line: WaitingLine, matcher: Matcher):
        self.table, self.agents, self.calls, self.line, self.matcher = table, agents, calls, line, matcher
        self.db = table.db

    def answered(
        self,
        call_id: str,
        *,
        callback: bool = False,
        wait_from_request: bool = False,
        agent_id: str | None = None,
        read: Call | None = None,
    ) -> Outcome:
        """The agent picked up the offered call (`callback`: a queued callback's caller was
        reached, with its agent reserved). Sent again, answered as done (`replayed`); an
        offer that ran out (the call went back to the line) is a Conflict saying so.
        `wait_from_request`: the callback's line counts its wait from the request.
        `agent_id`: the agent the offer was for; another one's offer is refused. `read`: the
        call as the caller has just read it (the transaction is conditioned on it all the same)."""
        call = read if read is not None and read.call_id == call_id else self.calls.get(call_id)
        for _attempt in range(3):  # the agent changed on the same call (a next status set): again
            if call.offer_sk is None:
                break
            offered_to(call, agent_id)
            agent = self.agents.get(call.agent_id or "")
            moment = self.table.clock()
            stamp = to_iso(moment)
            answered = dataclasses.replace(call, answered_at=stamp, offer_sk=None, version=call.version + 1)
            reached = {"result": "connected", "agent_id": agent.agent_id, "at": stamp}
            if callback:
                answered.callback_results = [*call.callback_results, reached]
            try:
                self.table.transact(
                    [
                        self.table.offer_gone(call),
                        self._call_answered(call, stamp, reached if callback else None),
                        self._agent_answers(call, agent, stamp),
                        *self.table.event_actions(named.CALL_ANSWERED, answered),
                        self.table.fact_action(
                            facts.ANSWERED,
                            answered,
                            stamp,
                            since=answered.callback_requested_at if wait_from_request else None,
                        ),
                        *self._connected(answered, stamp, callback),
                        *self.table.status_actions(StatusChange.of(agent, AgentStatus.ATTENDING, stamp)),
                    ]
                )
            except errors.TransactionCancelled as exc:
                if exc.lost_race:
                    raise errors.Conflict(f"Call {call_id} was being changed at the same moment; try again.") from exc
                call = self.calls.get(call_id)
                continue
            return Outcome(call=answered)
        return self._answered_already(call)

    def _call_answered(self, call: Call, stamp: str, reached: dict | None) -> dict:
        """The call's update, on condition that it is still offered as read; a callback's
        result (`reached`) added to its results."""
        results = ", callback_results = list_append(if_not_exists(callback_results, :none), :reached)"
        return self.table.update(
            keys.call(call.call_id),
            f"SET answered_at = :now, version = version + :one{results if reached else ''} REMOVE offer_sk",
            {
                ":now": stamp,
                ":one": 1,
                ":assigned": CallStatus.ASSIGNED,
                ":offer": call.offer_sk,
                **({":none": [], ":reached": [reached]} if reached else {}),
            },
            condition="#status = :assigned AND offer_sk = :offer",
        )

    def _connected(self, call: Call, stamp: str, callback: bool) -> list[dict]:
        """A queued callback reached: its fact, with the time since it was asked for."""
        if not callback:
            return []
        return [self.table.fact_action(facts.CALLBACK_CONNECTED, call, stamp, since=call.callback_requested_at)]

    def _agent_answers(self, call: Call, agent: Agent, stamp: str) -> dict:
        """The agent the call rang for, as read, attending it from now (one who was
        attending an offered call already, as an earlier version left them, too)."""
        attending, values = status_clause(
            agent.agent_id, AgentStatus.ATTENDING, replay.change_id("answered", call.call_id)
        )
        return self.table.update(
            keys.agent(agent.agent_id),
            f"SET {attending}, version = version + :one, updated_at = :now",
            {**values, ":now": stamp, ":one": 1, ":call": call.call_id, ":v": agent.version, **ON_A_CALL},
            condition="call_id = :call AND #status IN (:ringing, :attending) AND version = :v",
        )

    def _answered_already(self, call: Call) -> Outcome:
        if call.status == CallStatus.ASSIGNED and call.offer_sk is None:
            return Outcome(call=call, replayed=True)  # picked up already, or never offered
        missed = [part for part in call.legs if part.get("how") == "missed"]
        if call.status == CallStatus.WAITING and missed:
            raise errors.Conflict(
                f"Call {call.call_id} was not answered in time: it went back to its place in line.",
                now={"call": call},
            )
        if call.status == CallStatus.ASSIGNED and missed:
            raise errors.Conflict(
                f"Call {call.call_id} was not answered in time and went to {call.agent_name}.", now={"call": call}
            )
        raise errors.Conflict(f"Call {call.call_id} is {call.status}: no offer to answer.", now={"call": call})

    def miss_expired_offers(self, limit: int = 100) -> list[Call]:
        """Every offer past its deadline (one Query per offer partition, sent together):
        the call back to its place in line, the agent not ready (`missed`), and the call
        offered to the next fitting agent. Returns the calls, as they are after."""
        missed = []
        for offer in self.table.due(keys.offer_partitions(), limit):
            call = self.miss_offer(offer["call_id"], offer["sk"])
            if call is not None:
                missed.append(call)
        return missed

    def miss_offer(
        self, call_id: str, offer_sk: str, *, reason: str = MISSED, absent_since: str | None = None
    ) -> Call | None:
        """One offer past its deadline (the sweep's step): None when it was answered or
        the call ended meanwhile. With `absent_since`, the agent's client has sent no
        heartbeat since then: the agent goes not ready `reason` (disconnected) unless one
        comes meanwhile."""
        call = self.calls.find(call_id)
        if call is None or call.status != CallStatus.ASSIGNED or call.offer_sk != offer_sk:
            # Answered, or the call ended before its agent picked up: an offer left behind.
            self.db.call(
                "delete_item", TableName=self.table.name, Key=marshal({"pk": keys.OFFERS.of(call_id), "sk": offer_sk})
            )
            return None
        agent = self.agents.get(call.agent_id or "")
        stamp = to_iso(self.table.clock())
        back = self.line.back_in_line(call, stamp, "missed", agent)
        change = replay.change_id(reason, call_id)
        away, values = status_clause(agent.agent_id, AgentStatus.NOT_READY, change, reason)
        agent_update = self.table.update(
            keys.agent(agent.agent_id),
            f"SET {away}, version = version + :one, updated_at = :now REMOVE call_id",
            {**values, ":now": stamp, ":one": 1, ":call": call_id, ":v": agent.version, **ON_A_CALL},
            condition="#status IN (:ringing, :attending) AND call_id = :call AND version = :v",
        )
        if absent_since is not None:
            unless_seen_since(agent_update, absent_since)
        changed = StatusChange.of(agent, AgentStatus.NOT_READY, stamp, reason)
        also = (named.AGENT_DISCONNECTED,) if reason == DISCONNECTED else ()
        try:
            self.table.transact(
                [
                    self.table.offer_gone(call),
                    *self.line.return_actions(call, back, condition_offer=True),
                    agent_update,
                    *self.table.event_actions(named.CALL_MISSED, back),
                    *self.table.status_actions(changed, *also),
                ]
            )
        except errors.TransactionCancelled:
            return None  # answered (or ended) at the same moment: the other change stands
        log.info("call %s: %s did not pick up in time (%s); back in line", call_id, agent.name, reason)
        return self.matcher.match(back, new_call=False) or back
