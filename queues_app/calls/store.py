"""Calls: their items, idempotency keys, and reading them back."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from queues_app import event_names as named
from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents, status_queries
from queues_app.agents.skills import ANY
from queues_app.calls.records import Call, CallStatus
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import batch, errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal, record_from_item, unmarshal
from queues_app.ddb.merge import query_each
from queues_app.ddb.paging import Page
from queues_app.ddb.tables import WAITING_BY_ARRIVAL
from queues_app.figures import facts

ENDED_CALL_RETENTION = timedelta(days=30)

# The events a call's listener hears of (see CallCenterTable.event_actions).
ASSIGNED, ABANDONED, RELAXED = named.CALL_ASSIGNED, named.CALL_ABANDONED, named.CALL_RELAXED


class CallExists(Exception):
    """The call item exists already (an idempotent retry won the race)."""


def call_id_for_idempotency_key(key: str) -> str:
    """The same idempotency key always names the same call, so a retried request finds it."""
    return "k" + hashlib.sha256(key.encode()).hexdigest()[:23]


def call_to_item(call: Call) -> dict:
    return {
        **keys.call(call.call_id),
        "type": "call",
        "call_id": call.call_id,
        "status": call.status,
        "preferences": {k: v for k, v in call.preferences.items() if v is not ANY},
        "dimensions": list(call.preferences),
        "priority": call.priority,
        "order": call.order,
        "arrived_at": call.arrived_at,
        "version": call.version,
        "agent_id": call.agent_id,
        "agent_name": call.agent_name,
        "assigned_at": call.assigned_at,
        "ended_at": call.ended_at,
        "wait_sk": call.wait_sk,
        "relaxed": call.relaxed,
        "why": call.why,
        "callback": call.callback,
        "end_then": call.end_then,
        "next_call_id": call.next_call_id,
        "request_digest": call.request_digest,
        "answered_at": call.answered_at,
        "offer_sk": call.offer_sk,
        "first_asked": call.first_asked,
        "legs": call.legs,
        "line": call.line,
        "overflowed": call.overflowed,
        "end_reason": call.end_reason,
        "aged_from": call.aged_from,
        **({"steps": call.steps} if call.steps else {}),
        **(
            {"preferred_agent_id": call.preferred_agent_id, "preferred_until": call.preferred_until}
            if call.preferred_agent_id
            else {}
        ),
        **(
            {
                "callback_number": call.callback_number,
                "callback_requested_at": call.callback_requested_at,
                "callback_results": call.callback_results,
                "callback_retry_at": call.callback_retry_at,
            }
            if call.callback_number
            else {}
        ),
    }


def assigned_event(assigned: Call) -> str:
    """A queued callback's assignment is its agent reserved: dial the caller now."""
    return named.CALLBACK_DUE if assigned.callback_number and assigned.offer_sk else ASSIGNED


def call_from_item(item: dict) -> Call:
    given = item.get("preferences") or {}
    preferences = {name: given.get(name, ANY) for name in item.get("dimensions") or list(given)}
    steps = [
        {"min_level": {k: int(v) for k, v in step["min_level"].items()}, "seconds": int(step["seconds"])}
        for step in item.get("steps") or []
    ]
    return record_from_item(Call, item, preferences=preferences, steps=steps)


def first_answers(db: Dynamo, call_ids: list[str]) -> dict[str, tuple[Mapping | None, str | None, str | None]]:
    """Each call's preferences as first asked, when it was first answered (its
    assignment, for a call assigned before answers were kept) and the line it was
    answered on, from the records (one BatchGetItem): what the tally reads to count an
    ended call's handle time, for its combination and its line."""
    items = batch.get_items(db, db.table("callcenter"), [keys.call(i) for i in call_ids], consistent=True)
    calls = (call_from_item(item) for item in items)
    return {call.call_id: (call.asked_for, call.answered_at or call.assigned_at, call.line) for call in calls}


PREFIX_MATCHES = 20  # calls listed for a prefix that several ids start with
PREFIX_READ = 1_000  # calls a prefix search evaluates per status
IN_PROGRESS = "calls:in-progress"  # the cursor's purpose: a place among the attending agents
RINGING = "calls:ringing"  # ... among the ringing agents


@dataclass
class PrefixSearch:
    """The calls found for an id prefix, and what was searched: per status, how many calls
    were read and whether there were more than were read."""

    prefix: str
    calls: list[Call]
    searched: dict[str, tuple[int, bool]]
    more: bool = False


class Calls:
    """Reads of call items, and the actions that record an assignment."""

    def __init__(self, table: CallCenterTable):
        self.table = table
        self.db = table.db

    def get(self, call_id: str) -> Call:
        call = self.find(call_id)
        if not call:
            raise errors.NotFound(f"No call with id {call_id!r}.")
        return call

    def find(self, call_id: str) -> Call | None:
        response = self.db.call(
            "get_item", TableName=self.table.name, Key=marshal(keys.call(call_id)), ConsistentRead=True
        )
        return call_from_item(unmarshal(response["Item"])) if "Item" in response else None

    def in_progress(self, *, cursor: str | None = None, limit: int = 25) -> Page[Call]:
        """Calls in progress (answered), a page at a time, through their agents: every
        assigned call's agent holds it (`check_invariants` checks it), so a page is a Query
        of the attending agents in name order (their partitions of the status index,
        merged) and one BatchGetItem of their calls, whatever the number of calls. Calls are
        not indexed by status: that would cost every assignment an index write. Newest
        assignment first within a page."""
        return self._held(AgentStatus.ATTENDING, IN_PROGRESS, cursor, limit)

    def ringing(self, *, cursor: str | None = None, limit: int = 25) -> Page[Call]:
        """Calls offered to an agent and not picked up yet (ANSWER_TIMEOUT_SECONDS), through
        their ringing agents, as `in_progress`."""
        return self._held(AgentStatus.RINGING, RINGING, cursor, limit)

    def _held(self, status: str, purpose: str, cursor: str | None, limit: int) -> Page[Call]:
        agents = Agents(self.db, self.table.catalog).list(status=status, cursor=cursor, limit=limit, purpose=purpose)
        wanted = [keys.call(agent.call_id) for agent in agents.items if agent.call_id]
        calls = [call_from_item(item) for item in batch.get_items(self.db, self.table.name, wanted)]
        calls = [call for call in calls if call.status == CallStatus.ASSIGNED]
        calls.sort(key=lambda c: c.assigned_at or c.arrived_at or "", reverse=True)
        return Page(calls, agents.next_cursor)

    def find_by_prefix(self, prefix: str, *, limit: int = PREFIX_MATCHES, read_cap: int = PREFIX_READ) -> PrefixSearch:
        """Calls whose id starts with `prefix`: a whole id is one GetItem and finds any
        call; otherwise the waiting calls (the waiting line's `waiting_by_arrival` index,
        whose entries carry the caller's place, which ends with the call id) and the calls
        in progress (their attending agents on the status index, which carry the call
        id) are searched with the prefix as a FilterExpression, evaluating at most
        `read_cap` of each (shared by their partitions, all queried in parallel), so the
        cost is bounded however many calls there are. Ended calls are found by their whole
        id only."""
        exact = self.find(prefix)
        if exact:
            return PrefixSearch(prefix, [exact], {})
        searched: dict[str, tuple[int, bool]] = {}
        ids: list[str] = []
        waiting = [
            {
                "IndexName": WAITING_BY_ARRIVAL.name,
                "KeyConditionExpression": "wait_q = :q",
                "FilterExpression": "contains(sk, :needle)",
                "ExpressionAttributeValues": {":q": {"S": shard}, ":needle": {"S": "#" + prefix}},
            }
            for shard in keys.line_shards()
        ]
        held = {
            "FilterExpression": "begins_with(call_id, :prefix)",
            "ExpressionAttributeValues": {":prefix": {"S": prefix}},
        }
        in_progress = [
            *status_queries(self.table.name, AgentStatus.ATTENDING, filters=held),
            *status_queries(self.table.name, AgentStatus.RINGING, filters=held),
        ]
        searches = ((CallStatus.WAITING, waiting), (CallStatus.ASSIGNED, in_progress))
        responses = iter(
            query_each(
                self.db,
                [
                    {"TableName": self.table.name, "Limit": max(1, read_cap // len(queries)), **query}
                    for _, queries in searches
                    for query in queries
                ],
            )
        )
        for status, queries in searches:
            scanned, more = 0, False
            for _query in queries:
                response = next(responses)
                scanned += response["ScannedCount"]
                more = more or bool(response.get("LastEvaluatedKey"))
                for raw in response.get("Items", []):
                    item = unmarshal(raw)
                    call_id = item["sk"].rsplit("#", 1)[-1] if status == CallStatus.WAITING else item["call_id"]
                    if call_id.startswith(prefix):  # "#<prefix>" may also match inside the arrival time
                        ids.append(call_id)
            searched[status] = (scanned, more)
        wanted = [keys.call(i) for i in sorted(ids)[:limit]]
        calls = [call_from_item(item) for item in batch.get_items(self.db, self.table.name, wanted)]
        calls.sort(key=lambda c: c.call_id)
        return PrefixSearch(prefix, calls, searched, more=len(ids) > limit)

    def next_call_action(self, ended_call_id: str, next_call_id: str) -> dict:
        """The ended call records the call its agent took next (for an assignment's
        transaction), so that the ending, sent again, is answered as it first was."""
        return self.table.update(
            keys.call(ended_call_id), "SET next_call_id = :next_call", {":next_call": next_call_id}
        )

    def answer_actions(self, assigned: Call) -> list[dict]:
        """What a call's first assignment adds: with offers off, it is answered (its
        `answered_at` and its fact for the service level); with ANSWER_TIMEOUT_SECONDS, an
        offer the agent must pick up in time (calls/offers.py). A call answered before
        (a transfer) adds neither: its answer was counted once already."""
        if assigned.answered_at is not None:
            return []
        deadline = self.table.offer_deadline(assigned.assigned_at or "", callback=bool(assigned.callback_number))
        if deadline is None:
            assigned.answered_at = assigned.assigned_at
            return [self.table.fact_action(facts.ANSWERED, assigned, assigned.answered_at or "")]
        offer = keys.offer(assigned.call_id, deadline)
        assigned.offer_sk = offer["sk"]
        item = {**offer, "call_id": assigned.call_id, "agent_id": assigned.agent_id, "deadline": deadline}
        return [{"Put": {"TableName": self.table.name, "Item": marshal(item)}}]

    def assignment_actions(self, call: Call, assigned: Call, *, new_call: bool) -> list[dict]:
        answering = self.answer_actions(assigned)
        if new_call:
            return [
                {
                    "Put": {
                        "TableName": self.table.name,
                        "Item": marshal(call_to_item(assigned)),
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                *self.table.event_actions(assigned_event(assigned), assigned),
                *answering,
                self.table.fact_action(facts.OFFERED, call, call.arrived_at),
            ]
        assigned.version = call.version + 1
        # Answered now, or offered (a transfer's assignment is neither: answered before).
        answer = ", answered_at = :answered" if assigned.answered_at != call.answered_at else ""
        answer += ", offer_sk = :offer" if assigned.offer_sk else ""
        return [
            self.table.update(
                keys.call(call.call_id),
                "SET #status = :assigned, agent_id = :agent, agent_name = :name, assigned_at = :now, "
                f"why = :why, version = :next{answer} REMOVE wait_sk",
                {
                    ":assigned": CallStatus.ASSIGNED,
                    ":agent": assigned.agent_id,
                    ":name": assigned.agent_name,
                    ":now": assigned.assigned_at,
                    ":why": assigned.why,
                    ":next": assigned.version,
                    ":answered": assigned.answered_at,
                    ":offer": assigned.offer_sk,
                    ":waiting": CallStatus.WAITING,
                    ":version": call.version,
                },
                condition="#status = :waiting AND version = :version",
            ),
            *self.table.leave_line_actions(call),
            *self.table.event_actions(assigned_event(assigned), assigned),
            *answering,
        ]
