"""The agent queue with filtering, and the callers waiting for agents.

Matching differs from the article's algorithm in where it puts the lock. The article
snapshots every queue's metadata with TransactGetItems and conditions its write on the
version of every queue the chosen agent is in, so two matchers collide whenever they
touch any common queue, even when they want different agents, and the loser starts
over. Here the write is conditioned on the chosen agent's own item (status `queued`
with the queue token of the message items being removed): two matchers collide only
when they want the same agent, and the loser moves to the next candidate it already
read. One strongly consistent Query and one TransactWriteItems per assignment, with no
snapshot read.

Callers who cannot be matched wait in the WAITING partition, ordered by priority then
arrival. Both sides publish first and then look at the other side once more, so a
caller and an agent arriving at the same moment cannot miss each other (the lost
wake-up race).
"""

from __future__ import annotations

import hashlib
import logging
import random
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from queues_app.ddb import batch, errors
from queues_app.agents import keys
from queues_app.monitoring import counters
from queues_app.agents.roster import Agents
from queues_app.ddb.client import Dynamo, default
from queues_app.agents.claims import Claims
from queues_app.ddb.contention import ContentionGauge
from queues_app.ddb.paging import Page, decode_cursor, encode_cursor
from queues_app.agents.records import Agent, AgentStatus, Call, CallStatus, QueueInfo, QueueOrder
from queues_app.ddb.clock import from_iso, now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.agents.skills import ANY, SkillCatalog, matching_combinations, validate_preferences

log = logging.getLogger(__name__)

MAX_TRANSACTION_ACTIONS = 100  # DynamoDB's limit per TransactWriteItems
# An assignment writes the agent, one delete and one metadata update per combination,
# the call and the waiting-caller item.
ASSIGNMENT_OVERHEAD = 3
ENDED_CALL_RETENTION = timedelta(days=30)
WHY_LIMIT = 8
# How long a matcher waits for another thread's try of the only candidates it has left.
CLAIM_WAIT = 0.5
# How old another matcher's read of the same queue may be for a caller's first try to use it.
SHARED_READ_AGE = 0.2
# Why each candidate was chosen or passed over; calls store the short code.
WHY_OUTCOMES = {
    "chosen": "chosen: the earliest-queued agent who fits and was still free",
    "returned": "chosen: became available while this caller was the longest-waiting caller they fit",
    "taken": "passed over: taken by another caller a moment earlier",
    "busy": "passed over: kept busy by concurrent transactions",
    "later": "passed over: queued later than the chosen agent",
}


class AgentTooBroad(errors.InvalidRequest):
    """The agent fits more queue combinations than one transaction can hold."""


@dataclass(frozen=True)
class Candidate:
    """A queued agent seen at the head of a queue."""

    token: str
    agent_id: str
    name: str
    skills: dict
    queue: str

    @property
    def queued_at(self) -> str:
        return self.token.rsplit("#", 1)[0]


@dataclass(frozen=True)
class EscalationPolicy:
    """After `after_seconds` of waiting, relax the next dimension in `order`, and so on."""

    after_seconds: float = 60.0
    order: tuple[str, ...] = ("gender", "language")

    @classmethod
    def from_settings(cls) -> EscalationPolicy:
        from django.conf import settings

        config = getattr(settings, "SWITCHBOARD_ESCALATION", {}) or {}
        return cls(
            after_seconds=float(config.get("after_seconds", 60)),
            order=tuple(config.get("order", ("gender", "language"))),
        )


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
    }


def call_from_item(item: dict) -> Call:
    given = item.get("preferences") or {}
    preferences = {name: given.get(name, ANY) for name in item.get("dimensions") or list(given)}
    return Call(
        call_id=item["call_id"],
        status=item["status"],
        preferences=preferences,
        priority=int(item.get("priority", 0)),
        order=item.get("order", QueueOrder.FIFO),
        arrived_at=item.get("arrived_at", ""),
        version=int(item.get("version", 1)),
        agent_id=item.get("agent_id"),
        agent_name=item.get("agent_name"),
        assigned_at=item.get("assigned_at"),
        ended_at=item.get("ended_at"),
        wait_sk=item.get("wait_sk"),
        relaxed=list(item.get("relaxed") or []),
        why=list(item.get("why") or []),
    )


class Router:
    """Queues agents, matches callers to them, and keeps callers waiting in order."""

    def __init__(
        self,
        db: Dynamo | None = None,
        catalog: SkillCatalog | None = None,
        *,
        default_order: str | None = None,
        candidate_limit: int = 16,
        spread: int = 16,
        max_rounds: int = 6,
        escalation: EscalationPolicy | None = None,
        clock: Callable[[], datetime] = now,
    ):
        self.db = db or default()
        self.catalog = catalog or SkillCatalog.from_settings()
        self.agents = Agents(self.db, self.catalog)
        if default_order is None:
            from django.conf import settings

            default_order = getattr(settings, "SWITCHBOARD_AGENT_ORDER", QueueOrder.FIFO)
        self.default_order = default_order
        self.candidate_limit = candidate_limit
        self.spread = spread
        self.max_rounds = max_rounds
        self._rng = random.Random()
        self._escalation = escalation
        self.clock = clock

    @property
    def table(self) -> str:
        return self.db.table("callcenter")

    @property
    def escalation(self) -> EscalationPolicy:
        if self._escalation is None:
            self._escalation = EscalationPolicy.from_settings()
        return self._escalation

    # --- agents -------------------------------------------------------------------

    def check_fits_in_a_transaction(self, skills: dict[str, list[str]]) -> int:
        combos = len(self.catalog.combinations(skills))
        actions = 2 * combos + ASSIGNMENT_OVERHEAD
        if actions > MAX_TRANSACTION_ACTIONS:
            raise AgentTooBroad(
                f"This agent fits {combos} skill combinations; assigning them would take {actions} "
                f"actions in one DynamoDB transaction, over its limit of {MAX_TRANSACTION_ACTIONS}. "
                "Give the agent fewer skills, or split a skill dimension."
            )
        return combos

    def make_available(self, agent_id: str) -> tuple[Agent, Call | None]:
        """Give the agent the longest-waiting caller they fit, or queue them.

        Returns the agent as it is now and the call they took, if any. An agent who is
        queued or attending already gets a Conflict, never a second set of messages.
        """
        agent = self.agents.get(agent_id)
        self._check_can_queue(agent)
        self.check_fits_in_a_transaction(agent.skills)

        call = self._offer_waiting_callers(agent, from_queue=False)
        if call:
            counters.note(self.db, counters.CALLS, "completed")
            return self.agents.get(agent_id), call

        agent = self._enqueue(agent)
        # Look once more: a caller may have started waiting while we queued.
        call = self._offer_waiting_callers(agent, from_queue=True)
        if call:
            counters.note(self.db, counters.CALLS, "completed")
            return self.agents.get(agent_id), call
        return agent, None

    @staticmethod
    def _check_can_queue(agent: Agent) -> None:
        if agent.status == AgentStatus.QUEUED:
            raise errors.Conflict(f"{agent.name} is already queued.")
        if agent.status == AgentStatus.ATTENDING:
            raise errors.Conflict(f"{agent.name} is attending call {agent.call_id}; release the call first.")

    def _enqueue(self, agent: Agent) -> Agent:
        stamp = to_iso(self.clock())
        token = keys.queue_token(stamp, agent.agent_id)
        combos = self.catalog.combinations(agent.skills)
        actions = [
            self._agent_update(
                agent,
                "SET #status = :queued, queued_at = :now, queue_token = :token, "
                "version = version + :one, updated_at = :now REMOVE call_id",
                {":queued": AgentStatus.QUEUED, ":now": stamp, ":token": token},
            )
        ]
        message = {"type": "message", "agent_id": agent.agent_id, "name": agent.name, "skills": agent.skills}
        for combo in combos:
            actions.append({"Put": {
                "TableName": self.table,
                "Item": marshal({**keys.queue_message(combo, token), **message}),
                "ConditionExpression": "attribute_not_exists(pk)",
            }})
            actions.append(self._meta_update(combo, +1))
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled as exc:
            raise self._agent_changed(agent, exc) from exc
        agent.status, agent.queued_at, agent.queue_token = AgentStatus.QUEUED, stamp, token
        agent.version += 1
        agent.call_id = None
        return agent

    def _update(self, key: dict, update: str, values: dict | None = None, *, condition: str | None = None,
                names: dict | None = None, old_on_fail: bool = False) -> dict:
        """One Update action of a transaction on the call-center table. `#status` stands
        for the status attribute wherever an expression uses it."""
        action: dict = {"TableName": self.table, "Key": marshal(key), "UpdateExpression": update}
        if condition:
            action["ConditionExpression"] = condition
        text = update + " " + (condition or "")
        used = {k: v for k, v in {"#status": "status", **(names or {})}.items() if k in text}
        if used:
            action["ExpressionAttributeNames"] = used
        if values:
            action["ExpressionAttributeValues"] = marshal(values)
        if old_on_fail:
            action["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
        return {"Update": action}

    def _agent_update(self, agent: Agent, update: str, values: dict) -> dict:
        """Update conditioned on the agent being exactly as read (version and status)."""
        return self._update(
            keys.agent(agent.agent_id), update,
            {**values, ":one": 1, ":expected": agent.version, ":was": agent.status},
            condition="version = :expected AND #status = :was", old_on_fail=True,
        )

    def _meta_update(self, combo: tuple[str, ...], delta: int) -> dict:
        # No condition: the agent's own condition already makes the change safe, and a
        # version condition here would make matchers of unrelated agents collide.
        return self._update(
            keys.queue_meta(combo), "ADD #depth :delta, version :one SET combination = :combo",
            {":delta": delta, ":one": 1, ":combo": list(combo)}, names={"#depth": "depth"},
        )

    def _agent_changed(self, agent: Agent, exc: errors.TransactionCancelled) -> errors.DynamoError:
        if exc.lost_race:
            return errors.Conflict(f"{agent.name} was being changed at the same moment; try again.")
        current = exc.reasons[0].item if exc.reasons and exc.reasons[0].failed else None
        if current:
            status = AgentStatus.LABELS.get(current.get("status"), current.get("status"))
            return errors.Conflict(f"{agent.name} changed meanwhile (now {status.lower()}); reload and try again.",
                                   current=current)
        return errors.Conflict(f"Could not change {agent.name}: {exc.message}")

    def release(self, agent_id: str, then: str = "queue") -> tuple[Agent, Call | None]:
        """End the agent's call; then queue them again (at the back), or wrap-up, or offline."""
        if then not in ("queue", AgentStatus.WRAP_UP, AgentStatus.OFFLINE):
            raise errors.InvalidRequest("After a call an agent goes to 'queue', 'wrap_up' or 'offline'.")
        agent = self.agents.get(agent_id)
        if agent.status != AgentStatus.ATTENDING:
            raise errors.Conflict(f"{agent.name} is not attending a call.")
        stamp = to_iso(self.clock())
        next_status = AgentStatus.OFFLINE if then == AgentStatus.OFFLINE else AgentStatus.WRAP_UP
        actions = [self._agent_update(
            agent, "SET #status = :next, version = version + :one, updated_at = :now REMOVE call_id",
            {":next": next_status, ":now": stamp},
        )]
        if agent.call_id:
            actions.append(self._update(
                keys.call(agent.call_id),
                "SET #status = :ended, ended_at = :now, expires_at = :expires, version = version + :one",
                {":ended": CallStatus.ENDED, ":now": stamp, ":one": 1, ":assigned": CallStatus.ASSIGNED,
                 ":agent": agent.agent_id, ":expires": int((self.clock() + ENDED_CALL_RETENTION).timestamp())},
                condition="#status = :assigned AND agent_id = :agent",
            ))
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled as exc:
            raise self._agent_changed(agent, exc) from exc
        if then == "queue":
            return self.make_available(agent_id)
        return self.agents.get(agent_id), None

    def log_off(self, agent_id: str) -> Agent:
        """Take the agent out of every queue at once and mark them offline."""
        agent = self.agents.get(agent_id)
        if agent.status == AgentStatus.OFFLINE:
            return agent
        if agent.status == AgentStatus.ATTENDING:
            raise errors.Conflict(f"{agent.name} is attending call {agent.call_id}; release the call first.")
        stamp = to_iso(self.clock())
        actions = [self._agent_update(
            agent,
            "SET #status = :offline, version = version + :one, updated_at = :now REMOVE queue_token, call_id",
            {":offline": AgentStatus.OFFLINE, ":now": stamp},
        )]
        if agent.status == AgentStatus.QUEUED:
            actions += self._dequeue_actions(agent.skills, agent.queue_token)
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled as exc:
            raise self._agent_changed(agent, exc) from exc
        return self.agents.get(agent_id)

    def set_wrap_up_done(self, agent_id: str) -> tuple[Agent, Call | None]:
        """An agent in wrap-up is ready again: same as making them available."""
        return self.make_available(agent_id)

    def _dequeue_actions(self, skills: dict, token: str) -> list[dict]:
        actions = []
        for combo in self.catalog.combinations(skills):
            actions.append({"Delete": {"TableName": self.table, "Key": marshal(keys.queue_message(combo, token))}})
            actions.append(self._meta_update(combo, -1))
        return actions

    # --- calls --------------------------------------------------------------------

    def create_call(
        self,
        preferences: dict,
        *,
        priority: int = 0,
        order: str | None = None,
        call_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> tuple[Call, bool]:
        """Assign the caller at once or make them wait. Returns (call, created).

        With an idempotency key, a retried request returns the first request's call
        (created False) instead of making a second one.
        """
        preferences = validate_preferences(self.catalog, preferences)
        if not isinstance(priority, int) or isinstance(priority, bool) or not 0 <= priority <= keys.MAX_PRIORITY:
            raise errors.InvalidRequest(f"priority must be a whole number from 0 to {keys.MAX_PRIORITY}.")
        order = order or self.default_order
        if order not in QueueOrder.ALL:
            raise errors.InvalidRequest("order must be 'fifo' or 'lifo'.")
        if idempotency_key:
            call_id = call_id_for_idempotency_key(idempotency_key)
            existing = self.find_call(call_id)
            if existing:
                return existing, False
        call = Call(
            call_id=call_id or uuid.uuid4().hex[:16],
            status=CallStatus.WAITING,
            preferences=preferences,
            priority=priority,
            order=order,
            arrived_at=to_iso(self.clock()),
        )
        try:
            counters.note(self.db, counters.CALLS, "enqueued")
            assigned = self._match(call, new_call=True)
            if assigned:
                counters.note(self.db, counters.CALLS, "completed")
                return assigned, True
            waiting = self._start_waiting(call)
            # Look once more: an agent may have been queued while we started waiting.
            assigned = self._match(waiting, new_call=False)
            if assigned:
                counters.note(self.db, counters.CALLS, "completed")
            return (assigned or waiting), True
        except _CallExists:
            return self.get_call(call.call_id), False

    def get_call(self, call_id: str) -> Call:
        call = self.find_call(call_id)
        if not call:
            raise errors.NotFound(f"No call with id {call_id!r}.")
        return call

    def find_call(self, call_id: str) -> Call | None:
        response = self.db.call("get_item", TableName=self.table, Key=marshal(keys.call(call_id)),
                                ConsistentRead=True)
        return call_from_item(unmarshal(response["Item"])) if "Item" in response else None

    def _start_waiting(self, call: Call) -> Call:
        wait_key = keys.waiting_caller(call.priority, call.arrived_at, call.call_id)
        call.wait_sk = wait_key["sk"]
        try:
            self.db.call("transact_write_items", TransactItems=[
                {"Put": {
                    "TableName": self.table,
                    "Item": marshal(call_to_item(call)),
                    "ConditionExpression": "attribute_not_exists(pk)",
                }},
                {"Put": {"TableName": self.table, "Item": marshal(self._wait_item(call, wait_key))}},
            ])
        except errors.TransactionCancelled as exc:
            if exc.failed_indexes("ConditionalCheckFailed") == [0]:
                raise _CallExists() from exc
            raise
        return call

    def waiting_records(self, call: Call) -> list[dict]:
        """A waiting call's two items (the call and its place in line), for bulk loads."""
        wait_key = keys.waiting_caller(call.priority, call.arrived_at, call.call_id)
        call.status, call.wait_sk = CallStatus.WAITING, wait_key["sk"]
        return [call_to_item(call), self._wait_item(call, wait_key)]

    @staticmethod
    def _wait_item(call: Call, wait_key: dict) -> dict:
        # Preferences as top-level attributes so that a FilterExpression can match them.
        prefs = {f"p_{name}": value for name, value in call.preferences.items() if value is not ANY}
        return {**wait_key, "type": "waiting", "call_id": call.call_id, "priority": call.priority,
                "arrived_at": call.arrived_at, "wait_q": keys.WAITING_PK,
                "wait_since": f"{call.arrived_at}#{call.call_id}", **prefs}

    def _match(self, call: Call, *, new_call: bool) -> Call | None:
        """Try queued agents in order; the loser of a race moves on to a candidate it
        already read instead of starting over.

        The first try is always the head of the queue, so a caller alone always gets
        the earliest-queued agent. Losing a race means other matchers are working the
        same head; they all move down together, so after a loss the next try is drawn
        at random among the next few candidates (all queued earlier than the rest),
        which spreads the matchers out instead of making them collide at every step.
        While this process has been losing races lately (many callers at once), even
        the first try is drawn among the first few: those agents are all being handed
        out at the same moment, so any of them is as fair as the head.

        Matchers in this process also claim a candidate before trying it (in memory, no
        request; see `Claims`): the others pass over a candidate that is being tried or
        was just taken, instead of spending a transaction to lose the race for it. When
        every candidate read is being tried by another thread, the matcher waits for
        one of those tries to end rather than race it. While other matchers of this
        process are running, a FIFO caller's first try may use the candidates another
        matcher read for the same preferences less than `SHARED_READ_AGE` seconds ago,
        if one of them is still free, instead of a Query of its own (agents queued since
        come later in FIFO order anyway; one taken by another process meanwhile fails
        its condition like any lost race). "Nobody fits" always comes from a fresh Query,
        and a caller alone always reads the queue itself.
        """
        claims = _claims_for(self.db)
        claims.enter()
        try:
            return self._match_claiming(call, claims, new_call=new_call)
        finally:
            claims.leave()

    def _match_claiming(self, call: Call, claims: Claims, *, new_call: bool) -> Call | None:
        """`_match` while this matcher counts among the process's running ones."""
        considered: list[dict] = []
        tried: set[str] = set()
        table = self.table
        shared_key = (table, call.order, tuple((k, None if v is ANY else v) for k, v in sorted(call.preferences.items())))
        # Recent races lost by this process say the head is contended before we lose one.
        spread_out = _contention.contended
        for _round in range(self.max_rounds):
            found = None
            if _round == 0 and call.order == QueueOrder.FIFO and claims.active > 1:
                shared = claims.recent_read(shared_key, SHARED_READ_AGE)
                if shared and any(not claims.is_held((table, c.token)) and not claims.is_gone((table, c.token))
                                  for c in shared):
                    found = shared
            if found is None:
                found = self.queue_candidates(call.preferences, call.order)
                claims.publish_read(shared_key, found)
            read = [c for c in found if c.agent_id not in tried]
            if not read:
                return None
            candidates = [c for c in read if not claims.is_gone((table, c.token))]
            remaining = list(candidates)
            while remaining:
                order = list(range(len(remaining)))
                if spread_out:
                    window = order[:self.spread]
                    self._rng.shuffle(window)
                    order[:len(window)] = window
                index = claims.claim_first([(table, remaining[i].token) for i in order])
                claimed = index is not None
                if claimed:
                    candidate = remaining.pop(order[index])
                else:
                    # Every candidate left is being tried by another thread of this process
                    # (or was just taken): wait for one of those tries to end.
                    remaining = self._drop_taken(remaining, claims, considered)
                    if not remaining:
                        break
                    if claims.wait_while_held([(table, c.token) for c in remaining], CLAIM_WAIT):
                        remaining = self._drop_taken(remaining, claims, considered)
                        continue
                    candidate = remaining.pop(0)  # still held after the wait: race for it
                tried.add(candidate.agent_id)
                try:
                    outcome = self._try_assign(call, candidate, new_call=new_call, considered=considered,
                                               others=candidates)
                finally:
                    if claimed:
                        claims.release((table, candidate.token))
                won = outcome is not None and outcome.agent_id == candidate.agent_id
                _contention.observe(lost=not won)
                if outcome is not None:
                    return outcome
                spread_out = True
        return None

    def _drop_taken(self, candidates: list[Candidate], claims: Claims, considered: list[dict]) -> list[Candidate]:
        """The candidates not known to be taken; the taken ones go into the why record."""
        left = []
        for candidate in candidates:
            if claims.is_gone((self.table, candidate.token)):
                considered.append(_why_entry(candidate.agent_id, candidate.name, candidate.queued_at, "taken"))
            else:
                left.append(candidate)
        return left

    def queue_candidates(self, preferences: dict, order: str = QueueOrder.FIFO) -> list[Candidate]:
        """Heads of every queue that fits, merged in queue order (one Query per queue)."""
        seen: dict[str, Candidate] = {}
        for combo in matching_combinations(self.catalog, preferences):
            response = self.db.call(
                "query",
                TableName=self.table,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": keys.queue_name(combo)}},
                ConsistentRead=True,
                ScanIndexForward=order == QueueOrder.FIFO,
                Limit=self.candidate_limit,
            )
            for raw in response.get("Items", []):
                item = unmarshal(raw)
                seen.setdefault(item["agent_id"], Candidate(
                    token=item["sk"], agent_id=item["agent_id"], name=item.get("name", ""),
                    skills=item.get("skills") or {}, queue=item["pk"],
                ))
        return sorted(seen.values(), key=lambda c: c.token, reverse=order == QueueOrder.LIFO)

    def _try_assign(self, call: Call, candidate: Candidate, *, new_call: bool, considered: list[dict],
                    others: list[Candidate]) -> Call | None:
        """One assignment transaction. Returns the assigned call, or None to try the next
        candidate. A lost TransactionConflict is retried on the same candidate."""
        for attempt in range(4):
            stamp = to_iso(self.clock())
            assigned = Call(**call.__dict__)
            assigned.status = CallStatus.ASSIGNED
            assigned.agent_id, assigned.agent_name, assigned.assigned_at = candidate.agent_id, candidate.name, stamp
            assigned.why = self._why(candidate, considered, others)
            assigned.wait_sk = None
            actions = [self._update(
                keys.agent(candidate.agent_id),
                "SET #status = :attending, call_id = :call, version = version + :one, updated_at = :now "
                "REMOVE queue_token",
                {":attending": AgentStatus.ATTENDING, ":call": call.call_id, ":one": 1, ":now": stamp,
                 ":queued": AgentStatus.QUEUED, ":token": candidate.token},
                condition="#status = :queued AND queue_token = :token",
            )]
            actions += self._dequeue_actions(candidate.skills, candidate.token)
            actions += self._call_assignment_actions(call, assigned, new_call=new_call)
            try:
                self.db.call("transact_write_items", TransactItems=actions)
                _claims_for(self.db).mark_gone((self.table, candidate.token))
                return assigned
            except errors.TransactionCancelled as exc:
                if exc.lost_race:
                    time.sleep(random.uniform(0, 0.01 * 2**attempt))
                    continue
                failed = set(exc.failed_indexes())
                call_index = 1 + 2 * len(self.catalog.combinations(candidate.skills))
                if failed & {call_index, call_index + 1}:
                    # The call itself changed: assigned elsewhere, created by a retry, or escalated.
                    if new_call:
                        raise _CallExists() from exc
                    current = self.find_call(call.call_id)
                    if current and current.status == CallStatus.WAITING and current.version != call.version:
                        call.__dict__.update(current.__dict__)  # escalated meanwhile: go on with its new state
                        return None
                    return current if current and current.status == CallStatus.ASSIGNED else None
                # The agent is no longer queued with this token: nobody can take it any more.
                _claims_for(self.db).mark_gone((self.table, candidate.token))
                considered.append(_why_entry(candidate.agent_id, candidate.name, candidate.queued_at, "taken"))
                return None
        considered.append(_why_entry(candidate.agent_id, candidate.name, candidate.queued_at, "busy"))
        return None

    def _call_assignment_actions(self, call: Call, assigned: Call, *, new_call: bool) -> list[dict]:
        if new_call:
            return [{"Put": {
                "TableName": self.table,
                "Item": marshal(call_to_item(assigned)),
                "ConditionExpression": "attribute_not_exists(pk)",
            }}]
        assigned.version = call.version + 1
        return [
            self._update(
                keys.call(call.call_id),
                "SET #status = :assigned, agent_id = :agent, agent_name = :name, assigned_at = :now, "
                "why = :why, version = :next REMOVE wait_sk",
                {":assigned": CallStatus.ASSIGNED, ":agent": assigned.agent_id, ":name": assigned.agent_name,
                 ":now": assigned.assigned_at, ":why": assigned.why, ":next": assigned.version,
                 ":waiting": CallStatus.WAITING, ":version": call.version},
                condition="#status = :waiting AND version = :version",
            ),
            {"Delete": {
                "TableName": self.table,
                "Key": marshal({"pk": keys.WAITING_PK, "sk": call.wait_sk}),
                "ConditionExpression": "attribute_exists(pk)",
            }},
        ]

    @staticmethod
    def _why(chosen: Candidate, considered: list[dict], others: list[Candidate]) -> list[dict]:
        why = [_why_entry(chosen.agent_id, chosen.name, chosen.queued_at, "chosen"), *considered]
        passed = {entry["agent_id"] for entry in why}
        for other in others:
            if other.agent_id not in passed:
                why.append(_why_entry(other.agent_id, other.name, other.queued_at, "later"))
                passed.add(other.agent_id)
        return why[:WHY_LIMIT]

    # --- callers waiting ------------------------------------------------------------

    def _offer_waiting_callers(self, agent: Agent, *, from_queue: bool) -> Call | None:
        """Give the agent the first waiting caller (priority, then arrival) they fit."""
        for waiting in self.waiting_calls_for(agent.skills):
            call = self.find_call(waiting["call_id"])
            if not call or call.status != CallStatus.WAITING:
                continue
            if from_queue:
                candidate = Candidate(token=agent.queue_token, agent_id=agent.agent_id, name=agent.name,
                                      skills=agent.skills, queue="(agent came back)")
                assigned = self._try_assign(call, candidate, new_call=False, considered=[], others=[])
                # `_try_assign` also returns the call when another agent took it meanwhile.
                if assigned and assigned.agent_id == agent.agent_id:
                    return assigned
                current = self.agents.get(agent.agent_id)
                if current.status != AgentStatus.QUEUED or current.queue_token != agent.queue_token:
                    return None  # someone else took the agent first
                continue
            assigned = self._give_free_agent(agent, call)
            if assigned:
                return assigned
        return None

    def _give_free_agent(self, agent: Agent, call: Call) -> Call | None:
        """Assign a caller to an agent who is not queued (offline, available, wrap-up)."""
        stamp = to_iso(self.clock())
        assigned = Call(**call.__dict__)
        assigned.status, assigned.agent_id, assigned.agent_name = CallStatus.ASSIGNED, agent.agent_id, agent.name
        assigned.assigned_at, assigned.wait_sk = stamp, None
        assigned.why = [_why_entry(agent.agent_id, agent.name, stamp, "returned")]
        actions = [self._agent_update(
            agent,
            "SET #status = :attending, call_id = :call, version = version + :one, updated_at = :now "
            "REMOVE queue_token",
            {":attending": AgentStatus.ATTENDING, ":call": call.call_id, ":now": stamp},
        )]
        actions += self._call_assignment_actions(call, assigned, new_call=False)
        try:
            self.db.call("transact_write_items", TransactItems=actions)
        except errors.TransactionCancelled as exc:
            if exc.reasons and exc.reasons[0].failed and exc.reasons[0].code == "ConditionalCheckFailed":
                raise self._agent_changed(agent, exc) from exc
            return None  # the caller went to someone else (or a lost race): try the next caller
        return assigned

    def waiting_calls_for(self, skills: dict[str, list[str]]) -> list[dict]:
        """Waiting callers the agent fits, in order, read with a filter on their preferences."""
        names, values, filters = {}, {":pk": {"S": keys.WAITING_PK}}, []
        for d, (name, _allowed) in enumerate(self.catalog.dimensions):
            names[f"#d{d}"] = f"p_{name}"
            placeholders = []
            for v, value in enumerate(skills.get(name, [])):
                values[f":d{d}v{v}"] = {"S": value}
                placeholders.append(f":d{d}v{v}")
            inside = f" OR #d{d} IN ({', '.join(placeholders)})" if placeholders else ""
            filters.append(f"(attribute_not_exists(#d{d}){inside})")
        found, start = [], None
        while True:
            params = {
                "TableName": self.table,
                "KeyConditionExpression": "pk = :pk",
                "FilterExpression": " AND ".join(filters),
                "ExpressionAttributeNames": names,
                "ExpressionAttributeValues": values,
                "ConsistentRead": True,
            }
            if start:
                params["ExclusiveStartKey"] = start
            response = self.db.call("query", **params)
            found += [unmarshal(i) for i in response.get("Items", [])]
            start = response.get("LastEvaluatedKey")
            if found or not start:
                return found

    def waiting_calls(self, *, limit: int = 50, cursor: dict | None = None) -> tuple[list[dict], dict | None]:
        """The waiting list in order (priority, then arrival), a page at a time."""
        params = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :pk",
            "ExpressionAttributeValues": {":pk": {"S": keys.WAITING_PK}},
            "Limit": limit,
        }
        if cursor:
            params["ExclusiveStartKey"] = cursor
        response = self.db.call("query", **params)
        return [unmarshal(i) for i in response.get("Items", [])], response.get("LastEvaluatedKey")

    def fill_waiting_index(self) -> int:
        """Waiting callers written before the `waiting_by_arrival` index existed lack its
        keys: add them (one Query per page of the waiting list, one update each)."""
        filled, start = 0, None
        while True:
            params = {"TableName": self.table, "KeyConditionExpression": "pk = :pk",
                      "FilterExpression": "attribute_not_exists(wait_q)",
                      "ExpressionAttributeValues": {":pk": {"S": keys.WAITING_PK}}}
            if start:
                params["ExclusiveStartKey"] = start
            response = self.db.call("query", **params)
            for raw in response.get("Items", []):
                item = unmarshal(raw)
                try:
                    self.db.call(
                        "update_item", TableName=self.table, Key=marshal({"pk": item["pk"], "sk": item["sk"]}),
                        UpdateExpression="SET wait_q = :q, wait_since = :since",
                        ConditionExpression="attribute_exists(pk)",
                        ExpressionAttributeValues=marshal({":q": keys.WAITING_PK,
                                                           ":since": f"{item['arrived_at']}#{item['call_id']}"}),
                    )
                    filled += 1
                except errors.Conflict:
                    continue  # assigned meanwhile
            start = response.get("LastEvaluatedKey")
            if not start:
                return filled

    def longest_waiting_since(self) -> str | None:
        """When the caller who has waited longest arrived (one Limit-1 Query on the
        `waiting_by_arrival` index), or None when nobody waits."""
        response = self.db.call(
            "query", TableName=self.table, IndexName="waiting_by_arrival", Limit=1,
            KeyConditionExpression="wait_q = :q", ExpressionAttributeValues={":q": {"S": keys.WAITING_PK}},
        )
        items = response.get("Items", [])
        return unmarshal(items[0])["wait_since"].rsplit("#", 1)[0] if items else None

    def calls_with_status(self, status: str, *, cursor: str | None = None, limit: int = 25) -> Page[Call]:
        """Calls in one status (from the `by_status` index), then read in one batch."""
        params = {
            "TableName": self.table, "IndexName": "by_status", "Limit": limit,
            "KeyConditionExpression": "#status = :status AND sk = :call",
            "ExpressionAttributeNames": {"#status": "status"},
            "ExpressionAttributeValues": {":status": {"S": status}, ":call": {"S": keys.CALL_SK}},
        }
        start = decode_cursor(cursor)
        if start:
            params["ExclusiveStartKey"] = start
        response = self.db.call("query", **params)
        wanted = [{"pk": unmarshal(i)["pk"], "sk": keys.CALL_SK} for i in response.get("Items", [])]
        calls = [call_from_item(item) for item in batch.get_items(self.db, self.table, wanted)]
        calls.sort(key=lambda c: c.assigned_at or c.arrived_at or "", reverse=True)
        return Page(calls, encode_cursor(response.get("LastEvaluatedKey")))

    def count_waiting(self, cap: int = 1000) -> tuple[int, bool]:
        """How many callers wait, counted with one COUNT query of at most `cap` items.
        Returns (count, more): `more` is True when there are at least `cap`."""
        response = self.db.call(
            "query",
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": keys.WAITING_PK}},
            Select="COUNT",
            Limit=cap,
        )
        return response["Count"], bool(response.get("LastEvaluatedKey"))

    def escalate(self) -> list[Call]:
        """Relax the preferences of callers who waited too long, then try to match them.

        Dimensions are relaxed one at a time in the configured order, one more for
        each `after_seconds` waited; the call records what was relaxed and when.
        """
        policy, changed = self.escalation, []
        moment = self.clock()
        cursor = None
        while True:
            page, cursor = self.waiting_calls(limit=100, cursor=cursor)
            for waiting in page:
                arrived = from_iso(waiting["arrived_at"])
                steps_due = int((moment - arrived).total_seconds() // policy.after_seconds) if arrived else 0
                if steps_due <= 0:
                    continue
                call = self.find_call(waiting["call_id"])
                if not call or call.status != CallStatus.WAITING:
                    continue
                relaxable = [d for d in policy.order[:steps_due] if call.preferences.get(d) is not ANY]
                if not relaxable:
                    continue
                relaxed = self._relax(call, relaxable, moment)
                if relaxed:
                    changed.append(self._match(relaxed, new_call=False) or relaxed)
            if not cursor:
                return changed

    def _relax(self, call: Call, dimensions: list[str], moment: datetime) -> Call | None:
        stamp = to_iso(moment)
        entries = [{"dimension": d, "from": call.preferences[d], "at": stamp} for d in dimensions]
        preferences = {**call.preferences, **{d: ANY for d in dimensions}}
        try:
            self.db.call("transact_write_items", TransactItems=[
                self._update(
                    keys.call(call.call_id),
                    "SET preferences = :prefs, relaxed = list_append(relaxed, :entries), version = version + :one",
                    {":prefs": {k: v for k, v in preferences.items() if v is not ANY},
                     ":entries": entries, ":one": 1, ":waiting": CallStatus.WAITING, ":version": call.version},
                    condition="#status = :waiting AND version = :version",
                ),
                self._update(
                    {"pk": keys.WAITING_PK, "sk": call.wait_sk},
                    "REMOVE " + ", ".join(f"#d{i}" for i in range(len(dimensions))),
                    condition="attribute_exists(pk)",
                    names={f"#d{i}": f"p_{d}" for i, d in enumerate(dimensions)},
                ),
            ])
        except errors.TransactionCancelled:
            return None  # assigned or changed meanwhile
        log.info("call %s: relaxed %s after waiting", call.call_id, ", ".join(dimensions))
        call.preferences, call.relaxed, call.version = preferences, call.relaxed + entries, call.version + 1
        return call

    # --- queue metadata ---------------------------------------------------------------

    def queues(self) -> list[QueueInfo]:
        """Every combination's metadata (one Query) and its oldest agent (one Query each,
        so the cost depends on the number of combinations, not of agents)."""
        response = self.db.call(
            "query",
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": keys.QUEUES_PK}},
            ConsistentRead=True,
        )
        stored = {unmarshal(i)["sk"]: unmarshal(i) for i in response.get("Items", [])}
        infos = []
        for combo in self.catalog.all_combinations():
            name = keys.queue_name(combo)
            meta = stored.get(name, {})
            info = QueueInfo(combination=combo, name=name, depth=int(meta.get("depth", 0)),
                             version=int(meta.get("version", 0)))
            if info.depth > 0:
                head = self.db.call(
                    "query", TableName=self.table, KeyConditionExpression="pk = :pk",
                    ExpressionAttributeValues={":pk": {"S": name}}, Limit=1,
                )
                if head.get("Items"):
                    info.oldest_queued_at = unmarshal(head["Items"][0])["sk"].rsplit("#", 1)[0]
            infos.append(info)
        return infos


_contention = ContentionGauge()


def reset_contention() -> None:
    _contention.reset()
    with _claims_lock:
        _claims.clear()
# Per client (in production one per process): which queue tokens its matchers are trying
# or saw taken. Keys are (table, queue token); a token names one enqueue of one agent.
_claims: weakref.WeakKeyDictionary[Dynamo, Claims] = weakref.WeakKeyDictionary()
_claims_lock = threading.Lock()


def _claims_for(db: Dynamo) -> Claims:
    claims = _claims.get(db)
    if claims is None:
        with _claims_lock:
            claims = _claims.setdefault(db, Claims())
    return claims


def _why_entry(agent_id: str, name: str, queued_at: str, outcome: str) -> dict:
    return {"agent_id": agent_id, "name": name, "queued_at": queued_at, "outcome": outcome}


class _CallExists(Exception):
    """Internal: the call item exists already (an idempotent retry won the race)."""

