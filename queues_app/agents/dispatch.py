"""The matching dispatcher: new callers of every process and host matched by one process
at a time, the holder of a lease, so that matchers of different processes do not race
for the same agent (docs/architecture.md, "Matching").

Every process that matches runs a `Dispatcher`: a small TCP server and a thread that
takes the lease when it is free and renews it while it holds it; the lease item names
the holder's address. A new caller's process sends the call to that address (one JSON
line, signed with the project's secret key) and the holder matches it with its own
threads, which share claims and reads in memory, so they never race each other; its
answer (the assigned call, or nobody) comes back on the same connection. The holder
matches its own callers without the hop. When there is no holder, or it does not
answer within `bound` seconds, the caller's process matches by itself, as every
process did before: an agent is still never given twice (every assignment is
conditioned on the agent's own item) and a call is created once (its Put is
conditioned on the call not existing).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
import random
import socket
import socketserver
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from queues_app.agents import keys
from queues_app.agents.calls import CallExists, call_from_item, call_to_item
from queues_app.agents.records import Call
from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal, unmarshal

if TYPE_CHECKING:
    from queues_app.agents.matching import Matcher

log = logging.getLogger(__name__)

LEASE_NAME = "matching-dispatcher"
HERE = object()  # no dispatcher to ask (or it did not answer): match in this process


class DispatchLease:
    """At most one dispatcher per table: one item (`LEASE / matching-dispatcher`) with the
    holder, its address and the epoch second the lease runs out. Taking it needs the old
    lease to have run out; the holder renews it when a third is left. The lease keeps
    dispatchers from racing each other; it is not what keeps an agent from being given
    twice (every assignment is conditioned on the agent's own item)."""

    def __init__(
        self,
        db: Dynamo,
        *,
        holder: str,
        address: str = "",
        duration: float = 3.0,
        now: Callable[[], float] = time.time,
    ):
        self.db, self.holder, self.address, self.duration, self.now = db, holder, address, duration, now
        self.until = 0.0
        self.others_until = 0.0  # when the lease another holder has runs out, as last seen

    @property
    def key(self) -> dict:
        return marshal(keys.lease(LEASE_NAME))

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
                Key=self.key,
                UpdateExpression="SET holder = :me, address = :address, lease_until = :until, #type = :type",
                ConditionExpression="attribute_not_exists(pk) OR holder = :me OR lease_until < :now",
                ExpressionAttributeNames={"#type": "type"},
                ExpressionAttributeValues=marshal(
                    {":me": self.holder, ":address": self.address, ":until": until, ":now": moment, ":type": "lease"}
                ),
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except errors.Conflict as exc:
            self.until = 0.0
            self.others_until = float((exc.current or {}).get("lease_until", 0))
            return False
        self.until = until
        return True

    def current(self) -> tuple[str, float] | None:
        """(the holder's address, when its lease runs out), or None when nobody holds it."""
        response = self.db.call("get_item", TableName=self.db.table("callcenter"), Key=self.key, ConsistentRead=True)
        item = unmarshal(response.get("Item"))
        until = float(item.get("lease_until", 0))
        if not item.get("address") or until <= self.now():
            return None
        return str(item["address"]), until

    def release(self) -> None:
        if not self.until:
            return
        self.until = 0.0
        try:
            self.db.call(
                "update_item",
                TableName=self.db.table("callcenter"),
                Key=self.key,
                UpdateExpression="SET lease_until = :zero",
                ConditionExpression="holder = :me",
                ExpressionAttributeValues=marshal({":me": self.holder, ":zero": 0}),
            )
        except errors.Conflict:
            pass  # someone took it over already
        except errors.DynamoError as exc:
            log.warning("matching dispatcher: could not give the lease up (it runs out by itself): %s", exc)


def _sign(secret: bytes, body: bytes) -> str:
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def _secret() -> bytes:
    from django.conf import settings

    return ("matching-dispatcher:" + settings.SECRET_KEY).encode()


class _Handler(socketserver.StreamRequestHandler):
    """One connection from another process: a signed call per line, an answer per line."""

    server: _Server

    def handle(self) -> None:
        for line in self.rfile:
            answer = self.server.dispatcher.answer(line)
            self.wfile.write(json.dumps(answer, default=str).encode() + b"\n")
            self.wfile.flush()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], dispatcher: Dispatcher):
        self.dispatcher = dispatcher
        super().__init__(address, _Handler)


class Dispatcher:
    """This process's side of the dispatcher: `request` sends a new call to the holder
    (or says to match here); `start` runs the server and the lease thread."""

    def __init__(
        self,
        matcher: Matcher,
        *,
        bound: float = 2.0,
        lease_seconds: float = 3.0,
        listen: str = "127.0.0.1",
        secret: bytes | None = None,
    ):
        self.matcher = matcher
        self.db = matcher.db
        self.bound = bound
        self.listen = listen
        self._secret = secret
        self.lease = DispatchLease(
            self.db, holder=f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}", duration=lease_seconds
        )
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._holder: tuple[str, float] | None = None  # (address, lease_until) as last read
        self._connections = threading.local()

    @property
    def secret(self) -> bytes:
        if self._secret is None:
            self._secret = _secret()
        return self._secret

    # --- the caller's side --------------------------------------------------------

    def request(self, call: Call) -> Call | None | object:
        """Have the dispatcher match a new call: the assigned call, None when nobody fits,
        or `HERE` when this process should match it itself (it holds the lease, nobody
        does, or the holder did not answer in time). Raises CallExists when the call was
        created meanwhile."""
        if self.lease.held:
            return HERE
        address = self._holder_address()
        if address is None or address == self.lease.address:
            return HERE
        body = json.dumps(call_to_item(call), default=str).encode()
        try:
            answer = self._send(address, body)
        except (OSError, ValueError) as exc:
            log.info("matching dispatcher at %s did not answer (%s); matching here", address, exc)
            self._holder = None
            self._drop_connection(address)
            return HERE
        if answer.get("exists"):
            raise CallExists()
        if answer.get("here"):
            self._holder = None  # it no longer holds the lease
            return HERE
        item = answer.get("call")
        return call_from_item(item) if item else None

    def _holder_address(self) -> str | None:
        holder = self._holder
        if holder is None or holder[1] <= time.time():
            holder = self._holder = self.lease.current()
        return holder[0] if holder else None

    def _send(self, address: str, body: bytes) -> dict:
        stream = self._connection(address)
        stream.write(_sign(self.secret, body).encode() + b" " + body + b"\n")
        stream.flush()
        line = stream.readline()
        if not line:
            raise ConnectionError("closed")
        return json.loads(line)

    def _connection(self, address: str):
        """This thread's connection to `address` (kept open between requests)."""
        open_ = getattr(self._connections, "by_address", None)
        if open_ is None:
            open_ = self._connections.by_address = {}
        if address not in open_:
            host, port = address.rsplit(":", 1)
            connection = socket.create_connection((host, int(port)), timeout=self.bound)
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            open_[address] = (connection, connection.makefile("rwb"))
        return open_[address][1]

    def _drop_connection(self, address: str) -> None:
        found = getattr(self._connections, "by_address", {}).pop(address, None)
        if found is not None:
            found[1].close()
            found[0].close()

    # --- the holder's side --------------------------------------------------------

    def answer(self, line: bytes) -> dict:
        """The answer to one request line from another process."""
        signature, _, body = line.strip().partition(b" ")
        if not hmac.compare_digest(signature.decode(errors="replace"), _sign(self.secret, body)):
            return {"error": "bad signature"}
        if not self.lease.held:
            return {"here": True}
        try:
            call = call_from_item(json.loads(body))
        except (ValueError, KeyError, TypeError):
            return {"error": "not a call"}
        try:
            assigned = self.matcher.match_here(call, new_call=True)
        except CallExists:
            return {"exists": True}
        except errors.DynamoError as exc:
            log.warning("matching dispatcher: %s", exc)
            return {"here": True}
        return {"call": call_to_item(assigned) if assigned else None}

    def start(self) -> None:
        """Listen, and run the lease thread (once per process)."""
        with self._lock:
            if self._thread is not None:
                return
            self._server = _Server((self.listen, 0), self)
            host, port = self._server.socket.getsockname()[:2]
            self.lease.address = f"{host}:{port}"
            threading.Thread(target=self._server.serve_forever, name="matching-dispatcher-server", daemon=True).start()
            self._thread = threading.Thread(target=self._hold, name="matching-dispatcher", daemon=True)
            self._thread.start()

    def _hold(self) -> None:
        """Renew the lease while holding it; otherwise try again when the holder's runs out."""
        while not self._stop.is_set():
            pause = self.lease.duration / 6
            try:
                if not self.lease.hold():
                    pause = max(pause, self.lease.others_until - time.time() + random.uniform(0, pause))
            except errors.DynamoError as exc:
                log.warning("matching dispatcher: %s", exc)
            self._stop.wait(pause)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        self.lease.release()


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
    """Stop this process's dispatchers and give their leases up."""
    with _dispatchers_lock:
        running = list(_dispatchers.values())
        _dispatchers.clear()
    for dispatcher in running:
        dispatcher.stop()
