"""The transaction actions every change of the callcenter table is built from."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.utils.module_loading import import_string

from queues_app.agents.records import Agent, AgentStatus, StatusChange
from queues_app.agents.skills import SkillCatalog
from queues_app.calls.records import Call
from queues_app.centre import keys
from queues_app.ddb import errors, parallel
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.figures import facts

# What a change of a call also writes, in the same transaction, for whoever listens to
# the call (the event's type, the call as it is after the change, the time): the actions
# of an outbox item. Set by SWITCHBOARD_CALL_EVENTS (a dotted path), so the call center
# does not depend on where the outbox lives.
CallEvents = Callable[[str, Call, datetime], list[dict]]
# The same for a change of an agent's status: the outbox items of whoever listens to
# agents (`agent.status_changed`, and the other kinds named), by SWITCHBOARD_AGENT_EVENTS.
AgentEvents = Callable[[StatusChange, tuple[str, ...]], list[dict]]


def events_from_settings(db: Dynamo) -> CallEvents | None:
    path = getattr(settings, "SWITCHBOARD_CALL_EVENTS", None)
    return import_string(path)(db) if path else None


def agent_events_from_settings(db: Dynamo) -> AgentEvents | None:
    path = getattr(settings, "SWITCHBOARD_AGENT_EVENTS", None)
    return import_string(path)(db) if path else None


class CallCenterTable:
    """The callcenter table as the call center's services share it: the client, the
    skill catalog, the clock, builders of conditional transaction actions, and the
    outbox of call events."""

    def __init__(
        self,
        db: Dynamo,
        catalog: SkillCatalog,
        clock: Callable[[], datetime],
        events: CallEvents | None = None,
        agent_events: AgentEvents | None = None,
    ):
        self.db, self.catalog, self.clock = db, catalog, clock
        self.events, self.agent_events = events, agent_events

    def event_actions(self, kind: str, call: Call) -> list[dict]:
        """The outbox item telling the call's listener about this change (`call` as it is
        after it), to write in the change's own transaction; none when nobody listens."""
        if not call.callback or self.events is None:
            return []
        return self.events(kind, call, self.clock())

    def status_actions(self, change: StatusChange, *also: str) -> list[dict]:
        """What every change of an agent's status writes in its own transaction besides
        the agent: its fact (the agents' report counts it) and the events of whoever
        listens to agents (`agent.status_changed`, and `also` the kinds named)."""
        actions = [facts.put_action(self.db, facts.status_item(change))]
        if self.agent_events is not None:
            actions += self.agent_events(change, also)
        return actions

    def fact_action(self, kind: str, call: Call, at: str, *, since: str | None = None) -> dict:
        """The call fact (answered or abandoned, with the wait) this change adds to the
        service level, to write in its own transaction (figures/facts.py). `since`: its
        seconds are counted from then rather than from the caller's arrival."""
        arrived, left = from_iso(since or call.arrived_at), from_iso(at)
        wait = (left - arrived).total_seconds() if arrived and left else 0.0
        fact = facts.item(kind, call.call_id, at, call.asked_for, wait, call.line, call.agent_id)
        return facts.put_action(self.db, fact)

    @staticmethod
    def answer_timeout() -> float | None:
        """ANSWER_TIMEOUT_SECONDS: how long an agent has to pick up a call given to them,
        or None (the default) when an assignment is an answer."""
        seconds = getattr(settings, "ANSWER_TIMEOUT_SECONDS", None)
        return float(seconds) if seconds else None

    def offer_deadline(self, assigned_at: str, *, callback: bool = False) -> str | None:
        """When an offer made at `assigned_at` runs out, or None with offers off. A queued
        callback's agent is always reserved: for CALLBACK_DIAL_SECONDS, while the phone
        system dials the caller."""
        timeout = float(getattr(settings, "CALLBACK_DIAL_SECONDS", 90)) if callback else self.answer_timeout()
        made = from_iso(assigned_at)
        return to_iso(made + timedelta(seconds=timeout)) if timeout and made else None

    def ended_fact_action(self, call_id: str, at: str) -> dict:
        """The fact that a call ended (its handle time is read from its record when counted)."""
        return facts.put_action(self.db, facts.item(facts.ENDED, call_id, at))

    @property
    def name(self) -> str:
        return self.db.table("callcenter")

    def transact(self, actions: list[dict]) -> None:
        self.db.call("transact_write_items", TransactItems=actions)

    def update(
        self,
        key: dict,
        update: str,
        values: dict | None = None,
        *,
        condition: str | None = None,
        names: dict | None = None,
        old_on_fail: bool = False,
    ) -> dict:
        """One Update action of a transaction on the call-center table. `#status` stands
        for the status attribute wherever an expression uses it; `values` the expressions
        do not use are left out (DynamoDB refuses them), so callers may give a superset."""
        action: dict = {"TableName": self.name, "Key": marshal(key), "UpdateExpression": update}
        if condition:
            action["ConditionExpression"] = condition
        text = update + " " + (condition or "")
        used = {k: v for k, v in {"#status": "status", **(names or {})}.items() if k in text}
        if used:
            action["ExpressionAttributeNames"] = used
        placeholders = set(re.findall(r":\w+", text))
        values = {k: v for k, v in (values or {}).items() if k in placeholders}
        if values:
            action["ExpressionAttributeValues"] = marshal(values)
        if old_on_fail:
            action["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return {"Update": action}

    def agent_update(self, agent: Agent, update: str, values: dict) -> dict:
        """Update conditioned on the agent being exactly as read (version and status)."""
        return self.update(
            keys.agent(agent.agent_id),
            update,
            {**values, ":one": 1, ":expected": agent.version, ":was": agent.status},
            condition="version = :expected AND #status = :was",
            old_on_fail=True,
        )

    def meta_update(self, combo: tuple[str, ...], delta: int) -> dict:
        # No condition: the agent's own condition already makes the change safe, and a
        # version condition here would make matchers of unrelated agents collide. Any
        # shard will do: only the sum means anything.
        return self.update(
            keys.queue_meta(combo, random.randrange(keys.QUEUE_META_SHARDS)),
            "ADD #depth :delta, version :one SET combination = :combo",
            {":delta": delta, ":one": 1, ":combo": list(combo)},
            names={"#depth": "depth"},
        )

    def dequeue_actions(self, skills: dict, token: str) -> list[dict]:
        actions = []
        for combo in self.catalog.combinations(skills):
            actions.append({"Delete": {"TableName": self.name, "Key": marshal(keys.queue_message(combo, token))}})
            actions.append(self.meta_update(combo, -1))
        return actions

    def wanted(self, preferences: dict) -> tuple[str, ...]:
        return keys.wanted(self.catalog.names, preferences)

    def count_updates(self, wanted: tuple[str, ...], delta: int) -> list[dict]:
        """Every copy of a waiting partition's count, changed by `delta`. No condition, like
        the queue metadata: the waiting item's own condition makes it safe."""
        return [
            self.update(
                keys.waiting_count(wanted, copy),
                "ADD waiting :delta SET wanted = :wanted",
                {":delta": delta, ":wanted": list(wanted)},
            )
            for copy in range(keys.WAIT_COUNT_COPIES)
        ]

    def line_count_update(self, line_id: str | None, delta: int, *, below: int | None = None) -> list[dict]:
        """The change of a line's count of waiting callers (none for a call placed before
        lines); with `below`, conditioned on the line having fewer callers than that: its
        `max_waiting`, which no two arrivals can pass together."""
        if line_id is None:
            return []
        condition = "attribute_not_exists(waiting) OR waiting < :max" if below is not None else None
        return [
            self.update(
                keys.line_waiting(line_id),
                "ADD waiting :delta SET line_id = :line",
                {":delta": delta, ":line": line_id, ":max": below},
                condition=condition,
            )
        ]

    def offer_gone(self, call: Call) -> dict:
        """The call's offer item deleted on condition that it is there: what settles an
        answer (or a callback's result, or the call ending) against the offer's timeout."""
        return {
            "Delete": {
                "TableName": self.name,
                "Key": marshal({"pk": keys.OFFERS.of(call.call_id), "sk": call.offer_sk}),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }

    def due(self, partitions: list[str], limit: int = 100) -> list[dict]:
        """The items sorted by a moment whose moment has passed (`timed`)."""
        return self.timed(partitions, limit, before=to_iso(self.clock()))

    def timed(self, partitions: list[str], limit: int = 100, *, before: str | None = None) -> list[dict]:
        """The first `limit` items of each partition sorted by a moment (offers by deadline,
        callbacks by when they are due), or only those before `before`: one Query per
        partition, sent together."""

        def first(partition: str) -> list[dict]:
            condition, values = "pk = :pk", {":pk": partition}
            if before is not None:
                condition, values = condition + " AND sk < :before", {**values, ":before": before}
            response = self.db.call(
                "query",
                TableName=self.name,
                KeyConditionExpression=condition,
                ExpressionAttributeValues=marshal(values),
                Limit=limit,
            )
            return [unmarshal(item) for item in response.get("Items", [])]

        return [item for page in parallel.each(first, partitions) for item in page]

    def leave_line_actions(self, call: Call, *, line_too: bool = True) -> list[dict]:
        """Take a waiting caller out of line: their waiting item (which must still be
        there), their partition's count and (unless `line_too` is false: they stay on their
        line, only their place moves) their line's count."""
        wanted = self.wanted(call.preferences)
        return [
            {
                "Delete": {
                    "TableName": self.name,
                    "Key": marshal(keys.waiting_caller(wanted, call.wait_sk or "")),
                    "ConditionExpression": "attribute_exists(pk)",
                }
            },
            *self.count_updates(wanted, -1),
            *(self.line_count_update(call.line, -1) if line_too else []),
        ]


def status_clause(
    agent_id: str, status: str, change: str, reason: str | None = None, *, wrap_up_until: str | None = None
) -> tuple[str, dict]:
    """The SET clause of a change of an agent's status, and its values: the status and,
    with it, the agent's partition of the status index (`status_q`), which must always
    say the same status, the request that made the change (`change`, ddb/replay.py),
    which every change of status overwrites, since when (`:now`, which the caller's
    values give) and why, for a status that has a reason (not ready). Every change writes
    when a wrap-up ends by itself (`wrap_up_until`: empty but in a wrap-up that has a
    limit), and a change that leaves the call spends the agent's next status."""
    clause = (
        "#status = :status, status_q = :status_q, change = :change, status_since = :now, reason = :reason, "
        "wrap_up_until = :wrap_up_until"
    )
    values = {
        ":status": status,
        ":status_q": keys.status_partition(status, agent_id),
        ":change": change,
        ":reason": reason or "",  # not REMOVE: the clause is one SET (an empty reason reads as none)
        ":wrap_up_until": wrap_up_until or "",
    }
    if status not in AgentStatus.ON_A_CALL:  # a next status lasts until the call ends, then is spent
        clause += ", next_status = :no_next, next_reason = :no_next"
        values[":no_next"] = ""
    return clause, values


def unless_seen_since(action: dict, cutoff: str) -> dict:
    """The agent's Update, also conditioned on no heartbeat since `cutoff` (`seen_at`,
    AGENT_PRESENCE_SECONDS): a heartbeat that lands first wins, and the change is refused."""
    update = action["Update"]
    update["ConditionExpression"] = (
        f"({update['ConditionExpression']}) AND (attribute_not_exists(seen_at) OR seen_at <= :absent_since)"
    )
    update.setdefault("ExpressionAttributeValues", {})[":absent_since"] = {"S": cutoff}
    return action


def leg(agent: Agent, until: str, how: str) -> dict:
    """An agent's part in a call, for the call's record: from when they were given it
    (their status since, attending) until now, and how it ended: ended, transferred,
    missed (an offer not picked up in time) or rang (the caller hung up while it rang)."""
    return {"agent_id": agent.agent_id, "agent_name": agent.name, "from": agent.status_since, "to": until, "how": how}


def agent_changed(agent: Agent, exc: errors.TransactionCancelled) -> errors.DynamoError:
    if exc.lost_race:
        return errors.Conflict(f"{agent.name} was being changed at the same moment; try again.")
    current = exc.reasons[0].item if exc.reasons and exc.reasons[0].failed else None
    if current:
        status = str(AgentStatus.LABELS.get(current.get("status", ""), current.get("status")))
        return errors.Conflict(
            f"{agent.name} changed meanwhile (now {status.lower()}); reload and try again.", current=current
        )
    return errors.Conflict(f"Could not change {agent.name}: {exc.message}")


def stale(agent: Agent, seen_version: int) -> errors.Conflict:
    """The refusal of a request decided on an earlier version of the agent: what they are
    doing now, and the agent as they are (`now`)."""
    return errors.Conflict(
        f"{agent.name} changed since you looked (version {seen_version}, now {agent.version}): "
        f"{agent.name} is {agent.doing} now.",
        now={"agent": agent},
    )
