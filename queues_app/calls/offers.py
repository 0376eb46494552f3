"""A call after its assignment: picked up in time or not (ring-no-answer), and transferred.

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

A transfer ends the agent's part (`then` as for ending a call) and puts the call back in
line with new preferences at its original place, or gives it to a named queued agent.
The call's record keeps each agent's part (`legs`).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from queues_app import event_names as named
from queues_app.agents.records import AFTER_CALL, MISSED, Agent, AgentStatus
from queues_app.agents.skills import ANY, validate_preferences
from queues_app.calls.records import Call, CallStatus, Outcome
from queues_app.centre import keys
from queues_app.centre.parts import Parts
from queues_app.centre.table import agent_changed, leg, status_clause
from queues_app.ddb import errors, parallel, replay
from queues_app.ddb.clock import to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.figures import facts

log = logging.getLogger(__name__)


class Handling(Parts):
    if TYPE_CHECKING:  # Availability's, beside it in CallCenter

        def _make_available(self, agent: Agent, change: str, after_call: str | None = None) -> Outcome: ...

    # --- offers: answered in time, or missed ----------------------------------------------

    def answered(self, call_id: str) -> Outcome:
        """The agent picked up the offered call. Sent again, answered as done (`replayed`);
        an offer that ran out (the call went back to the line) is a Conflict saying so."""
        call = self.calls.get(call_id)
        if call.offer_sk is None:
            return self._answered_already(call)
        moment = self.clock()
        stamp = to_iso(moment)
        answered = dataclasses.replace(call, answered_at=stamp, offer_sk=None, version=call.version + 1)
        try:
            self.writes.transact(
                [
                    self._offer_gone(call),
                    self.writes.update(
                        keys.call(call_id),
                        "SET answered_at = :now, version = version + :one REMOVE offer_sk",
                        {":now": stamp, ":one": 1, ":assigned": CallStatus.ASSIGNED, ":offer": call.offer_sk},
                        condition="#status = :assigned AND offer_sk = :offer",
                    ),
                    *self.writes.event_actions(named.CALL_ANSWERED, answered),
                    self.writes.fact_action(facts.ANSWERED, answered, stamp),
                ]
            )
        except errors.TransactionCancelled as exc:
            if exc.lost_race:
                raise errors.Conflict(f"Call {call_id} was being changed at the same moment; try again.") from exc
            return self._answered_already(self.calls.get(call_id))
        return Outcome(call=answered)

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

    def _offer_gone(self, call: Call) -> dict:
        """The offer's item, deleted on condition that it is there: what settles an answer
        against a timeout."""
        return {
            "Delete": {
                "TableName": self.table_name,
                "Key": marshal({"pk": keys.OFFERS.of(call.call_id), "sk": call.offer_sk}),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }

    def miss_expired_offers(self, limit: int = 100) -> list[Call]:
        """Every offer past its deadline (one Query per offer partition, sent together):
        the call back to its place in line, the agent not ready (`missed`), and the call
        offered to the next fitting agent. Returns the calls, as they are after."""
        now_sk = to_iso(self.clock())

        def due(partition: str) -> list[dict]:
            response = self.db.call(
                "query",
                TableName=self.table_name,
                KeyConditionExpression="pk = :pk AND sk < :now",
                ExpressionAttributeValues=marshal({":pk": partition, ":now": now_sk}),
                Limit=limit,
            )
            return response.get("Items", [])

        missed = []
        for offer in (unmarshal(item) for page in parallel.each(due, keys.offer_partitions()) for item in page):
            call = self.miss_offer(offer["call_id"], offer["sk"])
            if call is not None:
                missed.append(call)
        return missed

    def miss_offer(self, call_id: str, offer_sk: str) -> Call | None:
        """One offer past its deadline (the sweep's step): None when it was answered or
        the call ended meanwhile."""
        call = self.calls.find(call_id)
        if call is None or call.status != CallStatus.ASSIGNED or call.offer_sk != offer_sk:
            # Answered, or the call ended before its agent picked up: an offer left behind.
            self.db.call(
                "delete_item", TableName=self.table_name, Key=marshal({"pk": keys.OFFERS.of(call_id), "sk": offer_sk})
            )
            return None
        agent = self.agents.get(call.agent_id or "")
        stamp = to_iso(self.clock())
        back = self._back_in_line(call, stamp, "missed", agent)
        change = replay.change_id("missed", call_id)
        away, values = status_clause(agent.agent_id, AgentStatus.NOT_READY, change, MISSED)
        try:
            self.writes.transact(
                [
                    self._offer_gone(call),
                    *self._call_back_actions(call, back, condition_offer=True),
                    self.writes.update(
                        keys.agent(agent.agent_id),
                        f"SET {away}, version = version + :one, updated_at = :now REMOVE call_id",
                        {
                            **values,
                            ":now": stamp,
                            ":one": 1,
                            ":attending": AgentStatus.ATTENDING,
                            ":call": call_id,
                        },
                        condition="#status = :attending AND call_id = :call",
                    ),
                    *self.writes.event_actions(named.CALL_MISSED, back),
                ]
            )
        except errors.TransactionCancelled:
            return None  # answered (or ended) at the same moment: the other change stands
        log.info("call %s: %s did not pick up in time; back in line", call_id, agent.name)
        return self.matcher.match(back, new_call=False) or back

    # --- transfers ------------------------------------------------------------------------

    def transfer(
        self,
        call_id: str,
        *,
        preferences: dict | None = None,
        agent_id: str | None = None,
        then: str = "queue",
        from_agent_id: str | None = None,
    ) -> Outcome:
        """End the agent's part in the call (then `then`, as ending a call) and give the
        call, at its original place (priority and arrival), to an agent who fits
        `preferences`, or to the queued agent `agent_id`; with nobody free it waits.
        Returns the agent who handed it on and the call as it is after.

        With `from_agent_id` (the agent the person or the phone system saw on the call),
        only that agent's part is handed on: the same request sent again once it took
        effect is answered as done (`replayed`), and a call that has moved on otherwise is
        refused saying where it is, so a retry never transfers the call a second time."""
        if then not in AFTER_CALL:
            raise errors.InvalidRequest("After a call an agent goes to 'queue', 'wrap_up' or 'offline'.")
        if (preferences is None) == (agent_id is None):
            raise errors.InvalidRequest("Transfer to new preferences or to a named agent, not both.")
        call = self.calls.get(call_id)
        wanted = validate_preferences(self.catalog, preferences) if preferences is not None else None
        if from_agent_id is not None and call.agent_id != from_agent_id:
            return self._transferred_or_stale(call, from_agent_id, wanted, agent_id)
        if call.status != CallStatus.ASSIGNED or not call.agent_id:
            raise errors.Conflict(f"Call {call_id} is {call.status}: only a call in progress is transferred.")
        if call.offer_sk is not None:
            raise errors.Conflict(f"Call {call_id} has not been picked up yet: it cannot be transferred.")
        agent = self.agents.get(call.agent_id)
        target = None
        if agent_id is not None:
            target = self.agents.get(agent_id)
            if target.agent_id == agent.agent_id:
                raise errors.InvalidRequest(f"{agent.name} is the agent on the call already.")
            if target.status != AgentStatus.QUEUED or not target.queue_token:
                raise errors.Conflict(f"{target.name} is {target.doing}: a call is transferred to a queued agent.")
        stamp = to_iso(self.clock())
        back = self._back_in_line(call, stamp, "transferred", agent, preferences=wanted)
        change = replay.change_id("transfer", call_id)
        next_status = AgentStatus.OFFLINE if then == AgentStatus.OFFLINE else AgentStatus.WRAP_UP
        after, values = status_clause(agent.agent_id, next_status, change)
        try:
            self.writes.transact(
                [
                    self.writes.agent_update(
                        agent,
                        f"SET {after}, version = version + :one, updated_at = :now REMOVE call_id",
                        {**values, ":now": stamp},
                    ),
                    *self._call_back_actions(call, back, condition_offer=False),
                    *self.writes.event_actions(named.CALL_TRANSFERRED, back),
                ]
            )
        except errors.TransactionCancelled as exc:
            raise agent_changed(agent, exc) from exc
        freed = dataclasses.replace(
            agent, status=next_status, call_id=None, version=agent.version + 1, change=change, status_since=stamp
        )
        taken = self.matcher.assign_to_queued(back, target) if target else self.matcher.match(back, new_call=False)
        if then == "queue":
            freed = self._make_available(freed, change).agent or freed
        return Outcome(freed, taken or self.calls.get(call_id))

    def _transferred_or_stale(
        self, call: Call, from_agent_id: str, preferences: dict | None, agent_id: str | None
    ) -> Outcome:
        """A transfer naming an agent no longer on the call: handed on by that agent, to
        where this request asks (this very request, sent again: answered as done), or
        refused saying where the call is."""
        last = call.legs[-1] if call.legs else {}
        handed_on = last.get("agent_id") == from_agent_id and last.get("how") == "transferred"
        same = call.agent_id == agent_id if agent_id is not None else call.preferences == preferences
        if handed_on and same:
            return Outcome(self.agents.get(from_agent_id), call, replayed=True)
        where = f"with {call.agent_name}" if call.agent_id else call.status
        raise errors.Conflict(
            f"Call {call.call_id} is no longer with the agent named: it is {where} now.", now={"call": call}
        )

    # --- shared ---------------------------------------------------------------------------

    def _back_in_line(self, call: Call, stamp: str, how: str, agent: Agent, *, preferences: dict | None = None) -> Call:
        """The call as it waits again: its original place (priority, arrival), the agent's
        part recorded, and, for a transfer, its new preferences (the first ones kept)."""
        part = leg(dataclasses.replace(agent, status_since=call.assigned_at), stamp, how)
        back = dataclasses.replace(
            call,
            status=CallStatus.WAITING,
            agent_id=None,
            agent_name=None,
            assigned_at=None,
            offer_sk=None,
            version=call.version + 1,
            legs=[*call.legs, part],
        )
        if how == "transferred":  # answered already: a call assigned before answers were kept
            back.answered_at = call.answered_at or call.assigned_at  # was answered at its assignment
        if preferences is not None:
            back.first_asked = call.first_asked or call.asked_for
            back.preferences = preferences
            back.relaxed = []
        back.wait_sk = keys.wait_position(back.priority, back.arrived_at, back.call_id)
        return back

    def _call_back_actions(self, call: Call, back: Call, *, condition_offer: bool) -> list[dict]:
        condition = "#status = :assigned AND agent_id = :agent"
        values = {
            ":waiting": CallStatus.WAITING,
            ":wait_sk": back.wait_sk,
            ":legs": back.legs,
            ":prefs": {k: v for k, v in back.preferences.items() if v is not ANY},
            ":first": back.first_asked,
            ":answered": back.answered_at,
            ":relaxed": back.relaxed,
            ":one": 1,
            ":assigned": CallStatus.ASSIGNED,
            ":agent": call.agent_id,
        }
        if condition_offer:
            condition += " AND offer_sk = :offer"
            values[":offer"] = call.offer_sk
        first = ", first_asked = :first" if back.first_asked is not None else ""
        first += ", answered_at = :answered" if back.answered_at is not None else ""
        return [
            self.writes.update(
                keys.call(call.call_id),
                "SET #status = :waiting, wait_sk = :wait_sk, legs = :legs, preferences = :prefs, "
                f"relaxed = :relaxed, version = version + :one{first} "
                "REMOVE agent_id, agent_name, assigned_at, offer_sk",
                values,
                condition=condition,
            ),
            {"Put": {"TableName": self.table_name, "Item": marshal(self.line.wait_item(back))}},
            *self.writes.count_updates(self.writes.wanted(back.preferences), +1),
        ]
