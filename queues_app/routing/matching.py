"""Matching callers to queued agents, and agents coming back to waiting callers: one
conditional transaction per assignment, never an agent given twice (see
docs/architecture.md, "Matching")."""

from __future__ import annotations

import random
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from queues_app import steps
from queues_app.agents.records import Agent, AgentStatus, StatusChange
from queues_app.agents.roster import Agents
from queues_app.agents.skills import ANY, fits
from queues_app.calls.records import Call, CallStatus, QueueOrder
from queues_app.calls.store import CallExists, Calls
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable, status_clause
from queues_app.ddb import errors, replay
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.contention import ContentionGauge
from queues_app.lines import profiles
from queues_app.lines.profiles import ProfileStore
from queues_app.routing import dispatch
from queues_app.routing.claims import Claims
from queues_app.routing.line import WaitingLine
from queues_app.routing.queues import Candidate, HeadCache, queue_candidates

WHY_LIMIT = 8
_ANYONE = object()  # the caller's preferred agent is not logged in (or cannot take them): as any caller
# How long a matcher waits for another thread's try of the only candidates it has left.
CLAIM_WAIT = 0.5
# How old another matcher's read of the same queue may be for a caller's first try to use it:
# in the matcher process, which takes nearly every agent itself, a read stays good for long.
SHARED_READ_AGE = 1.0
# Why each candidate was chosen or passed over; calls store the short code.
WHY_OUTCOMES = {
    "chosen": "chosen: the earliest-queued agent who fits and was still free",
    "returned": "chosen: became available while this caller was the longest-waiting caller they fit",
    "preferred": "chosen: the agent this caller is kept for (their preferred agent)",
    "taken": "passed over: taken by another caller a moment earlier",
    "busy": "passed over: kept busy by concurrent transactions",
    "later": "passed over: queued later than the chosen agent",
}


def assignment_change(call_id: str) -> str:
    """The change an agent is marked with when a caller is given to them (ddb/replay.py)."""
    return replay.change_id("assign", call_id)


def why_entry(agent_id: str, name: str, queued_at: str, outcome: str) -> dict:
    return {"agent_id": agent_id, "name": name, "queued_at": queued_at, "outcome": outcome}


_contention = ContentionGauge()
# The queues' heads this process read last, for its next new callers' first look: on in
# the matching dispatcher's process alone (`remember_heads`), off everywhere else.
_heads = HeadCache()


def remember_heads(seconds: float = SHARED_READ_AGE) -> None:
    """New callers' first look in this process reuses the queues' heads it read within
    `seconds` (the matching dispatcher: it takes nearly every agent itself)."""
    _heads.seconds = seconds
    _heads.forget_all()


# Per client (in production one per process): which queue tokens its matchers are trying
# or saw taken. Keys are (table, queue token); a token names one enqueue of one agent.
_claims: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_claims_lock = threading.Lock()


def claims_for(db) -> Claims:
    """The in-process claims shared by every matcher using this client."""
    claims = _claims.get(db)
    if claims is None:
        with _claims_lock:
            claims = _claims.setdefault(db, Claims())
    return claims


def reset_contention() -> None:
    """Forget recent lost races and every claim: a process starting afresh."""
    _contention.reset()
    _heads.forget_all()
    with _claims_lock:
        _claims.clear()


@dataclass
class _Search:
    """One caller's search for an agent: who was tried, why the others were passed over,
    and whether the tries are spread out (after a lost race, or while this process keeps
    losing races)."""

    call: Call
    new_call: bool
    claims: Claims
    table: str
    spread_out: bool
    tried: set[str] = field(default_factory=set)
    considered: list[dict] = field(default_factory=list)

    def held(self, candidate: Candidate) -> bool:
        return self.claims.is_held((self.table, candidate.token))

    def gone(self, candidate: Candidate) -> bool:
        return self.claims.is_gone((self.table, candidate.token))


class Matcher:
    """Assigns callers to queued agents (`match`); an agent coming back is routing/returning.py's."""

    def __init__(
        self,
        table: CallCenterTable,
        agents: Agents,
        calls: Calls,
        line: WaitingLine,
        *,
        candidate_limit: int = 16,
        spread: int = 16,
        max_rounds: int = 6,
    ):
        self.table = table
        self.db = table.db
        self.catalog = table.catalog
        self.agents, self.calls, self.line = agents, calls, line
        self.candidate_limit = candidate_limit
        self.spread = spread
        self.max_rounds = max_rounds
        self._rng = random.Random()
        self.profiles = ProfileStore(self.db)

    @property
    def clock(self):
        return self.table.clock

    def match(self, call: Call, *, new_call: bool) -> Call | None:
        """Try queued agents in order; the loser of a race moves on to a candidate it
        already read instead of starting over. Matchers of this process claim candidates
        in memory first. In a process that sends its new callers to the matching
        dispatcher (a web worker), a new caller is matched by the holder of the
        dispatcher's lease, or here when there is none or it does not answer in time
        (docs/architecture.md, "Matching topology")."""
        if new_call and (client := dispatch.client_for(self.db)) is not None:
            outcome = client.request(call)
            if outcome is not dispatch.HERE:
                return cast(Call | None, outcome)
        return self.match_here(call, new_call=new_call)

    def match_here(self, call: Call, *, new_call: bool) -> Call | None:
        """`match` by this process's own threads."""
        claims = claims_for(self.db)
        claims.enter()
        try:
            return self._match_claiming(call, claims, new_call=new_call)
        finally:
            claims.leave()

    def _match_claiming(self, call: Call, claims: Claims, *, new_call: bool) -> Call | None:
        """`_match` while this matcher counts among the process's running ones: a few
        rounds of reading the queues' heads and trying the candidates read."""
        kept_for = call.prefers_at(self.clock())
        if kept_for:
            outcome = self._match_preferred(call, kept_for, new_call=new_call)
            if outcome is not _ANYONE:
                return cast(Call | None, outcome)
        # Recent races lost by this process say the head is contended before we lose one.
        search = _Search(call, new_call, claims, self.table.name, spread_out=_contention.contended)
        for round_ in range(self.max_rounds):
            read = [c for c in self._read(search, first_round=round_ == 0) if c.agent_id not in search.tried]
            if not read:
                return None
            outcome = self._try_each(search, [c for c in read if not search.gone(c)])
            if outcome is not None:
                return outcome
        return None

    def _match_preferred(self, call: Call, agent_id: str, *, new_call: bool) -> object:
        """A caller kept for their preferred agent: given to them when they are queued;
        waiting for them (None) while they are logged in but busy; `_ANYONE` when they are
        logged off, gone, or do not fit the caller's preferences."""
        try:
            agent = self.agents.get(agent_id)
        except errors.NotFound:
            return _ANYONE
        if agent.status == AgentStatus.OFFLINE or not fits(agent.skills, call.preferences):
            return _ANYONE
        if agent.status != AgentStatus.QUEUED or not agent.queue_token:
            return None
        candidate = Candidate(
            agent.queue_token, agent.agent_id, agent.name, agent.skills, "preferred", version=agent.version
        )
        return self.try_assign(call, candidate, new_call=new_call, considered=[], others=[], chosen_as="preferred")

    def _read(self, search: _Search, *, first_round: bool) -> list[Candidate]:
        """The candidates of this round: another matcher's fresh read of the same queues
        while it has some left (a FIFO caller's first round, with several matchers
        running), else the queues' heads, read and shared."""
        call, claims = search.call, search.claims
        moment = self.clock()
        min_level = steps.min_level(call.steps, call.arrived_at, moment)
        admit, admitted = self.admission(call, moment)
        shared_key = (
            search.table,
            call.order,
            tuple((k, None if v is ANY else v) for k, v in sorted(call.preferences.items())),
            tuple(sorted(min_level.items())),
            admitted,
        )
        if first_round and call.order == QueueOrder.FIFO and claims.active > 1:
            shared = claims.recent_read(shared_key, SHARED_READ_AGE)
            if shared and any(not search.held(c) and not search.gone(c) for c in shared):
                return shared
        # A new caller's look may read eventually consistently (half the units): a head
        # already taken fails its conditioned transaction, and an agent who queued a moment
        # ago and is missed is found by the look after the caller joins the line, which
        # reads strongly (new_call false).
        remembered = None
        if first_round and search.new_call and _heads.seconds > 0:
            remembered = (_heads, lambda item: not claims.is_gone((search.table, item["sk"])))
        found = queue_candidates(
            self.table,
            call.preferences,
            call.order,
            self.candidate_limit,
            consistent=not search.new_call,
            min_level=min_level,
            admit=admit,
            remembered=remembered,
        )
        claims.publish_read(shared_key, found)
        return found

    def admission(self, call: Call, moment) -> tuple[Callable[[dict], bool] | None, tuple]:
        """Which queued agents' routing profiles admit the caller now (None: every agent,
        while no agent has a profile), and what that depends on (their line, and the
        longest delay they have waited past), for sharing a read of the queues."""
        read = self.profiles.current()
        if not read.in_use:
            return None, ()
        arrived = from_iso(call.arrived_at)
        waited = (moment - arrived).total_seconds() if arrived else 0.0
        passed = max((d for d in self.profiles.delays(call.line) if d <= waited), default=0)
        return (lambda message: profiles.admits_message(message, read, call.line, waited)), (call.line, passed)

    def _try_each(self, search: _Search, candidates: list[Candidate]) -> Call | None:
        """Try the candidates one by one until one is assigned; a lost try spreads the
        next ones out."""
        remaining = list(candidates)
        while remaining:
            candidate, claimed = self._next_candidate(search, remaining)
            if candidate is None:
                break
            search.tried.add(candidate.agent_id)
            try:
                outcome = self.try_assign(
                    search.call, candidate, new_call=search.new_call, considered=search.considered, others=candidates
                )
            finally:
                if claimed:
                    search.claims.release((search.table, candidate.token))
            if outcome is None and candidate.remembered:
                # Taken by another process since this one read it: the queues are read again
                # and tried in their order (not a race lost here).
                _heads.forget(search.table)
                return None
            _contention.observe(lost=outcome is None or outcome.agent_id != candidate.agent_id)
            if outcome is not None:
                return outcome
            search.spread_out = True
        return None

    def _next_candidate(self, search: _Search, remaining: list[Candidate]) -> tuple[Candidate | None, bool]:
        """The next candidate to try, taken out of `remaining`, and whether this thread
        claimed it; None when every one left was taken."""
        claims = search.claims
        while remaining:
            order = self.try_order(search, len(remaining))
            index = claims.claim_first([(search.table, remaining[i].token) for i in order])
            if index is not None:
                return remaining.pop(order[index]), True
            # Every candidate left is being tried by another thread of this process (or was
            # just taken): wait for one of those tries to end.
            remaining[:] = self._drop_taken(remaining, claims, search.considered)
            if not remaining:
                break
            if claims.wait_while_held([(search.table, c.token) for c in remaining], CLAIM_WAIT):
                remaining[:] = self._drop_taken(remaining, claims, search.considered)
                continue
            return remaining.pop(0), False  # still held after the wait: race for it
        return None, False

    def try_order(self, search: _Search, count: int) -> list[int]:
        """The order to try the `count` candidates left in: the queue's, or, once tries
        are spread out, the first `spread` of them shuffled, so that the losers of a race
        do not all try the same next agent."""
        order = list(range(count))
        if search.spread_out:
            window = order[: self.spread]
            self._rng.shuffle(window)
            order[: len(window)] = window
        return order

    def _drop_taken(self, candidates: list[Candidate], claims: Claims, considered: list[dict]) -> list[Candidate]:
        """The candidates not known to be taken; the taken ones go into the why record."""
        left = []
        for candidate in candidates:
            if claims.is_gone((self.table.name, candidate.token)):
                considered.append(why_entry(candidate.agent_id, candidate.name, candidate.queued_at, "taken"))
            else:
                left.append(candidate)
        return left

    def assign_to_queued(self, call: Call, agent: Agent) -> Call | None:
        """A waiting caller to this queued agent (a transfer to a named agent): None when the
        agent was taken or left the queue meanwhile."""
        candidate = Candidate(
            agent.queue_token or "", agent.agent_id, agent.name, agent.skills, "named", version=agent.version
        )
        considered: list[dict] = []
        return self.try_assign(call, candidate, new_call=False, considered=considered, others=[])

    def try_assign(
        self,
        call: Call,
        candidate: Candidate,
        *,
        new_call: bool,
        considered: list[dict],
        others: list[Candidate],
        change: str | None = None,
        also: list[dict] | None = None,
        chosen_as: str = "chosen",
    ) -> Call | None:
        """One assignment transaction. Returns the assigned call, or None to try the next
        candidate. A lost TransactionConflict is retried on the same candidate. `change`
        is the request the agent's new version is marked with (the caller's assignment by
        default), `also` more actions for the same transaction."""
        also = also or []
        for attempt in range(4):
            why = self._why(candidate, considered, others, self.step_number(call), chosen_as)
            assigned = self._assigned(call, candidate, why)
            call_actions = self.calls.assignment_actions(call, assigned, new_call=new_call)
            actions = [*self._take_queued(call, assigned, candidate, change), *call_actions, *also]
            try:
                self.table.transact(actions)
                claims_for(self.db).mark_gone((self.table.name, candidate.token))
                return assigned
            except errors.TransactionCancelled as exc:
                if exc.lost_race:
                    time.sleep(random.uniform(0, 0.01 * 2**attempt))
                    continue
                first = len(actions) - len(also) - len(call_actions)
                if set(exc.failed_indexes()) & set(range(first, first + len(call_actions))):
                    return self._call_changed(call, new_call, exc)
                # The agent is no longer queued with this token: nobody can take it any more.
                claims_for(self.db).mark_gone((self.table.name, candidate.token))
                considered.append(why_entry(candidate.agent_id, candidate.name, candidate.queued_at, "taken"))
                return None
        considered.append(why_entry(candidate.agent_id, candidate.name, candidate.queued_at, "busy"))
        return None

    def _assigned(self, call: Call, candidate: Candidate, why: list[dict]) -> Call:
        """The call as the assignment to `candidate` leaves it."""
        assigned = Call(**call.__dict__)
        assigned.status = CallStatus.ASSIGNED
        assigned.agent_id, assigned.agent_name = candidate.agent_id, candidate.name
        assigned.assigned_at, assigned.why, assigned.wait_sk = to_iso(self.clock()), why, None
        return assigned

    def _take_queued(self, call: Call, assigned: Call, candidate: Candidate, change: str | None) -> list[dict]:
        """The queued agent given the call (ringing while it is offered, else attending),
        on condition that they are still queued with the token read, and their messages
        out of every queue."""
        status = AgentStatus.RINGING if assigned.offer_sk else AgentStatus.ATTENDING
        attending, values = status_clause(candidate.agent_id, status, change or assignment_change(call.call_id))
        stamp = assigned.assigned_at or ""
        values.update({":call": call.call_id, ":one": 1, ":now": stamp, ":queued": AgentStatus.QUEUED})
        update = self.table.update(
            keys.agent(candidate.agent_id),
            f"SET {attending}, call_id = :call, version = version + :one, updated_at = :now REMOVE queue_token",
            {**values, ":token": candidate.token},
            condition="#status = :queued AND queue_token = :token",
        )
        changed = StatusChange(
            candidate.agent_id,
            candidate.name,
            AgentStatus.QUEUED,
            status,
            stamp,
            since=candidate.queued_at,
            version=None if candidate.version is None else candidate.version + 1,
            call_id=call.call_id,
        )
        return [
            update,
            *self.table.dequeue_actions(candidate.skills, candidate.token),
            *self.table.status_actions(changed),
        ]

    def _call_changed(self, call: Call, new_call: bool, exc: errors.TransactionCancelled) -> Call | None:
        """The call itself changed meanwhile: assigned elsewhere (that call), created by a
        retry of the same request, or escalated (None: go on with its new state)."""
        if new_call:
            raise CallExists() from exc
        current = self.calls.find(call.call_id)
        if current and current.status == CallStatus.WAITING and current.version != call.version:
            call.__dict__.update(current.__dict__)
            return None
        return current if current and current.status == CallStatus.ASSIGNED else None

    def step_number(self, call: Call) -> int | None:
        """The routing step the caller is matched at: its number from 1, 0 after the last
        (None: the call has none). A number, not words: the call's record stays small."""
        if not call.steps:
            return None
        index = steps.current(call.steps, call.arrived_at, self.clock())
        return 0 if index is None else index + 1

    @staticmethod
    def _why(
        chosen: Candidate, considered: list[dict], others: list[Candidate], step: int | None = None, how: str = "chosen"
    ) -> list[dict]:
        first = why_entry(chosen.agent_id, chosen.name, chosen.queued_at, how)
        if step is not None:
            first["step"] = step
        why = [first, *considered]
        passed = {entry["agent_id"] for entry in why}
        for other in others:
            if other.agent_id not in passed:
                why.append(why_entry(other.agent_id, other.name, other.queued_at, "later"))
                passed.add(other.agent_id)
        return why[:WHY_LIMIT]
