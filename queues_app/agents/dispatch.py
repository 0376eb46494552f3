"""The matching dispatcher: new callers of every process and host matched by one
dispatcher at a time, behind a lease, so that matchers of different processes never race
for the same agent (docs/architecture.md, "Matching").

A new caller's process writes a request (one item in the MATCHING partition, keyed by
priority then arrival) and reads it back with the call (one BatchGetItem per look) until
the call is assigned, the request is answered "nobody fits" (deleted without a call), or
`bound` seconds pass; then it withdraws the request (a conditional delete) and matches
by itself. The dispatcher holding the lease reads the pending requests in order, gives
each the earliest-queued agent it fits that no earlier request of the same pass got, and
commits those assignments side by side; each transaction also deletes the request, on
the condition that it is still there, so a withdrawn request is never assigned.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from queues_app.agents import keys
from queues_app.agents.calls import CallExists, call_from_item, call_to_item
from queues_app.agents.records import Call, QueueOrder
from queues_app.agents.skills import ANY
from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal, unmarshal

if TYPE_CHECKING:
    from queues_app.agents.matching import Candidate, Matcher

log = logging.getLogger(__name__)

LEASE_NAME = "matching-dispatcher"
# A request older than its deadline plus this is one whose caller has gone: dropped.
ABANDONED_AFTER = 30.0
REQUESTS_PER_PASS = 64
# How long the dispatcher goes on using a FIFO read of a queue (see `dispatch_once`).
READ_KEPT = 1.0


class RequestGone(Exception):
    """The request was withdrawn (or answered) before this assignment committed."""


WITHDRAWN = object()  # no dispatcher answered in time: the request was taken back


class DispatchLease:
    """At most one dispatcher per table: one item (`LEASE / matching-dispatcher`) holding
    the holder and the epoch second its lease runs out. Taking over needs the old lease
    to have run out; a holder renews it when a third of it is left. The lease keeps
    dispatchers from racing each other; it is not what keeps an agent from being given
    twice (every assignment is conditioned on the agent's own item)."""

    def __init__(self, db: Dynamo, *, holder: str, duration: float = 3.0, now: Callable[[], float] = time.time):
        self.db, self.holder, self.duration, self.now = db, holder, duration, now
        self.until = 0.0

    @property
    def held(self) -> bool:
        return self.now() < self.until - self.duration / 10

    def hold(self) -> bool:
        """True when this holder has the lease for a while yet: renews it (or takes it,
        when free or run out) when less than two thirds of it are left."""
        moment = self.now()
        if self.until - moment > self.duration * 2 / 3:
            return True
        until = moment + self.duration
        try:
            self.db.call(
                "update_item",
                TableName=self.db.table("callcenter"),
                Key=marshal(keys.lease(LEASE_NAME)),
                UpdateExpression="SET holder = :me, lease_until = :until, #type = :type",
                ConditionExpression="attribute_not_exists(pk) OR holder = :me OR lease_until < :now",
                ExpressionAttributeNames={"#type": "type"},
                ExpressionAttributeValues=marshal(
                    {":me": self.holder, ":until": until, ":now": moment, ":type": "lease"}
                ),
            )
        except errors.Conflict:
            self.until = 0.0
            return False
        self.until = until
        return True

    def release(self) -> None:
        if not self.until:
            return
        self.until = 0.0
        try:
            self.db.call(
                "update_item",
                TableName=self.db.table("callcenter"),
                Key=marshal(keys.lease(LEASE_NAME)),
                UpdateExpression="SET lease_until = :zero",
                ConditionExpression="holder = :me",
                ExpressionAttributeValues=marshal({":me": self.holder, ":zero": 0}),
            )
        except errors.Conflict:
            pass  # someone took it over already
        except errors.DynamoError as exc:
            log.warning("matching dispatcher: could not give the lease up (it runs out by itself): %s", exc)


@dataclass
class _Planned:
    request: dict
    call: Call
    candidate: Candidate
    read: list[Candidate]
    passed: list[Candidate]  # queued earlier, given to earlier requests of this pass


class Dispatcher:
    """Requests from this process (`request`) and, while it holds the lease, the
    dispatching of every process's requests (a daemon thread started by `start`)."""

    def __init__(
        self,
        matcher: Matcher,
        *,
        bound: float = 2.0,
        lease_seconds: float = 3.0,
        look_every: float = 0.02,
        idle_look_every: float = 0.1,
        commit_threads: int = 8,
    ):
        self.matcher = matcher
        self.db = matcher.db
        self.bound = bound
        self.look_every, self.idle_look_every = look_every, idle_look_every
        self.lease = DispatchLease(
            self.db, holder=f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}", duration=lease_seconds
        )
        self._pool = ThreadPoolExecutor(max_workers=commit_threads, thread_name_prefix="dispatch")
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._answers: dict[str, tuple[threading.Event, list]] = {}  # this process's requests
        self._reads: dict[tuple, tuple[float, list[Candidate]]] = {}  # (monotonic time, read) per want

    @property
    def table(self) -> str:
        return self.db.table("callcenter")

    # --- the caller's side --------------------------------------------------------

    def request(self, call: Call) -> Call | None | object:
        """Ask the dispatcher to match a new call. The assigned call, None when nobody
        fits, or `WITHDRAWN` when no dispatcher answered within `bound` and the request
        was taken back (the caller then matches by itself)."""
        self.start()
        key = keys.match_request(call.priority, call.arrived_at, call.call_id)
        deadline = time.time() + self.bound
        item = {**call_to_item(call), **key, "type": "match_request", "deadline": deadline}
        item["expires_at"] = int(deadline + ABANDONED_AFTER + 60)  # TTL: a leftover of a crash
        self.db.call(
            "put_item", TableName=self.table, Item=marshal(item), ConditionExpression="attribute_not_exists(pk)"
        )
        answered = threading.Event()
        with self._lock:
            self._answers[call.call_id] = (answered, [])
        try:
            self._wake.set()
            pause = self.look_every
            while time.time() < deadline:
                # While this process dispatches, its own thread hands the answer over;
                # otherwise the request and the call are read back, less often as time goes.
                if answered.wait(pause):
                    return self._answers[call.call_id][1][0]
                pause = min(pause * 2, self.look_every * 4)
                if not self.lease.held:
                    found = self._look(key, call.call_id)
                    if found is not None:
                        return found[0]
        finally:
            with self._lock:
                self._answers.pop(call.call_id, None)
        try:
            self.db.call(
                "delete_item", TableName=self.table, Key=marshal(key), ConditionExpression="attribute_exists(pk)"
            )
            return WITHDRAWN
        except errors.Conflict:
            # Answered meanwhile: the call was assigned, or nobody fits.
            return self.matcher.calls.find(call.call_id)

    def _look(self, key: dict, call_id: str) -> tuple[Call | None] | None:
        """(the assigned call,) or (None,) when answered "nobody fits"; None while pending."""
        response = self.db.call(
            "batch_get_item",
            RequestItems={self.table: {"Keys": [marshal(key), marshal(keys.call(call_id))], "ConsistentRead": True}},
        )
        found = [unmarshal(raw) for raw in response.get("Responses", {}).get(self.table, [])]
        calls = [item for item in found if item.get("type") == "call"]
        if calls:
            return (call_from_item(calls[0]),)
        if found or response.get("UnprocessedKeys"):
            return None
        # Neither: answered "nobody fits", or assigned between the two reads of the batch
        # (it is not one snapshot): the call's own read decides.
        return (self.matcher.calls.find(call_id),)

    # --- the dispatcher's side ----------------------------------------------------

    def start(self) -> None:
        """Run the dispatcher thread of this process (once): it takes the lease when it is
        free and dispatches while it holds it."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="matching-dispatcher", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._pool.shutdown(wait=True)
        self.lease.release()

    def _run(self) -> None:
        pause = self.look_every
        while not self._stop.is_set():
            try:
                if not self.lease.hold():
                    self._stop.wait(self.lease.duration / 3)
                    continue
                handled = self.dispatch_once()
            except errors.DynamoError as exc:
                log.warning("matching dispatcher: %s", exc)
                handled = 0
            except Exception:  # noqa: BLE001 - the thread must go on; callers fall back meanwhile
                log.exception("matching dispatcher: pass failed")
                handled = 0
            if handled:
                pause = self.look_every
                continue
            # Nothing to do: look again soon (at once when this process adds a request),
            # less often the longer nothing comes.
            self._wake.wait(pause)
            self._wake.clear()
            pause = min(self.idle_look_every, pause * 2)

    def pending(self) -> list[dict]:
        """The requests waiting for the dispatcher, by priority then arrival."""
        response = self.db.call(
            "query",
            TableName=self.table,
            KeyConditionExpression="pk = :pk",
            ExpressionAttributeValues={":pk": {"S": keys.MATCHING_PK}},
            ConsistentRead=True,
            Limit=REQUESTS_PER_PASS,
        )
        return [unmarshal(raw) for raw in response.get("Items", [])]

    def dispatch_once(self) -> int:
        """One pass: read the pending requests, plan, commit. Returns how many requests
        it saw."""
        requests = self.pending()
        if not requests:
            return 0
        moment = time.time()
        live = []
        for request in requests:
            if float(request.get("deadline", 0)) + ABANDONED_AFTER < moment:
                self._forget(request)  # its caller's process is gone
            else:
                live.append(request)
        calls = [call_from_item(request) for request in live]
        wants = {self._wanted(call): call for call in calls}
        # A FIFO read stays good for this dispatcher's next passes: it knows which of those
        # agents it gave away, agents queued since come after them anyway, and one taken
        # by someone else fails its condition (and the read is dropped). LIFO reads afresh.
        moment = time.monotonic()
        stale = [
            want
            for want in wants
            if want[0] != QueueOrder.FIFO or moment - self._reads.get(want, (-READ_KEPT, []))[0] > READ_KEPT
        ]
        fresh = self._pool.map(lambda want: self.matcher.queue_candidates(wants[want].preferences, want[0]), stale)
        for want, read in zip(stale, fresh, strict=True):
            self._reads[want] = (moment, read)
        gone = self.matcher.gone
        reads = {want: self._reads[want][1] for want in wants}
        given: set[str] = set()
        planned = []
        for request, call in zip(live, calls, strict=True):
            want = self._wanted(call)
            read = [c for c in reads[want] if not gone(c)]
            passed: list[Candidate] = []
            for candidate in read:
                if candidate.agent_id not in given:
                    given.add(candidate.agent_id)
                    planned.append(_Planned(request, call, candidate, read, passed))
                    break
                passed.append(candidate)
            else:
                if want in stale and not read:
                    self._forget(request)  # nobody fits (a fresh read): the caller's process reads that
                    self._answer(call.call_id, None)
                else:
                    self._reads.pop(want, None)  # every agent read is given: read further next pass
        for plan, assigned in zip(planned, self._pool.map(self._commit, planned), strict=True):
            if not assigned:
                self._reads.pop(self._wanted(plan.call), None)
        return len(requests)

    @staticmethod
    def _wanted(call: Call) -> tuple[str, tuple]:
        return call.order, tuple((k, None if v is ANY else v) for k, v in sorted(call.preferences.items()))

    def _commit(self, plan: _Planned) -> bool:
        """Commit one planned assignment; False when its agent went to someone else."""
        from queues_app.agents.matching import why_entry

        considered = [why_entry(c.agent_id, c.name, c.queued_at, "taken") for c in plan.passed]
        delete_request = {
            "Delete": {
                "TableName": self.table,
                "Key": marshal(self._request_key(plan.request)),
                "ConditionExpression": "attribute_exists(pk)",
            }
        }
        try:
            assigned = self.matcher._try_assign(
                plan.call,
                plan.candidate,
                new_call=True,
                considered=considered,
                others=plan.read,
                extra=[delete_request],
            )
            # None: the agent went to someone else (a caller matching by itself, an agent's
            # own offer); the request stays for the next pass.
            if assigned is not None:
                self._answer(plan.call.call_id, assigned)
                return True
            return False
        except (RequestGone, CallExists):
            self._forget(plan.request)
            return True  # nothing to learn about the agent
        except errors.DynamoError as exc:
            log.warning("matching dispatcher: assignment of %s failed: %s", plan.call.call_id, exc)
            return False

    def _answer(self, call_id: str, outcome: Call | None) -> None:
        """Hand the outcome to a request of this process, if it is one."""
        with self._lock:
            waiting = self._answers.get(call_id)
            if waiting is not None:
                waiting[1].append(outcome)
                waiting[0].set()

    @staticmethod
    def _request_key(request: dict) -> dict:
        return {"pk": request["pk"], "sk": request["sk"]}

    def _forget(self, request: dict) -> None:
        self.db.call("delete_item", TableName=self.table, Key=marshal(self._request_key(request)))


_dispatchers: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_dispatchers_lock = threading.Lock()


def dispatcher_for(matcher: Matcher, **options) -> Dispatcher:
    """This process's dispatcher for the matcher's client (one per client, as claims)."""
    with _dispatchers_lock:
        found = _dispatchers.get(matcher.db)
        if found is None:
            found = _dispatchers[matcher.db] = Dispatcher(matcher, **options)
        return found


def stop_dispatchers() -> None:
    """Stop this process's dispatcher threads and give their leases up."""
    with _dispatchers_lock:
        running = list(_dispatchers.values())
        _dispatchers.clear()
    for dispatcher in running:
        dispatcher.stop()
