"""The matching dispatcher: new callers of every process and host matched by one process
at a time, the holder of a lease, so that matchers of different processes do not race
for the same agent (docs/architecture.md, "Matching topology").

The holder's side is a `Dispatcher`, which `run_matcher` runs: a small TCP server and a
thread that takes the lease when it is free and renews it while it holds it; the lease
item names the holder's address. It matches with a callable it is given (the matcher's
`match_here`), from one thread per connection, and those threads share claims and reads
in memory, so they never race each other.

A web worker's side is a `DispatchClient` (`send_new_callers()` at the process's start
turns it on): it sends a new call to the address in the lease (one JSON line, signed
with Django's signing and the project's secret key) and reads the answer (the assigned
call, or nobody) on the same connection. When nobody holds the lease, or the holder does
not answer within `bound` seconds, the caller's process matches by itself: an agent is
still never given twice (every assignment is conditioned on the agent's own item) and a
call is created once (its Put is conditioned on the call not existing).

Past one process (SWITCHBOARD_MATCHING_SHARDS): the callers are split into shards, those
of one line and one set of preferences always in the same one, and each shard has a
lease of its own, held and handed over as the single one is. Callers of a
shard are matched by one process in their order; two shards' holders may reach for the
same agent, and the agent's conditional write settles it, as between two web workers.
"""

from __future__ import annotations

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
import zlib
from collections.abc import Callable, Iterable

from django.conf import settings
from django.core import signing

from queues_app.calls.records import Call
from queues_app.calls.store import CallExists, call_from_item, call_to_item
from queues_app.centre import keys
from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.lease import Lease, LeaseInfo, read_lease

log = logging.getLogger(__name__)

LEASE_NAME = "matching-dispatcher"
HERE = object()  # no dispatcher to ask (or it did not answer): match in this process
SALT = "switchboard.matching-dispatcher"  # the dispatcher's own signatures: no other signed value passes
MAX_AGE = 60  # seconds a signed request is good for: one captured on the wire cannot be replayed later
NOBODY_SECONDS = 1.0  # how long a client believes nobody holds the lease before reading it again


def configured_shards() -> int:
    """How many shards the deployment's new callers are split into (1: one matcher)."""
    return int(getattr(settings, "SWITCHBOARD_MATCHING_SHARDS", 1))


def shard_of(call: Call, shards: int) -> int:
    """The shard whose lease holder matches `call`: by its line and its preferences (the
    partition it would wait in), a stable hash, so every process and host places a
    caller alike. (Every caller has a line, `main` when nobody named one: by the line
    alone, a centre of one line would have one shard.)"""
    if shards <= 1:
        return 0
    key = json.dumps([call.line, sorted(call.preferences.items())])
    return zlib.crc32(key.encode()) % shards


def lease_name(shard: int = 0) -> str:
    """Shard 0's lease is the one lease of a deployment with one shard."""
    return LEASE_NAME if shard == 0 else f"{LEASE_NAME}-{shard}"


def matching_lease(
    db: Dynamo, *, holder: str, address: str = "", duration: float = 3.0, now=time.time, shard: int = 0
) -> Lease:
    """A shard's lease: the item `LEASE / matching-dispatcher[-<shard>]` of the callcenter table."""
    return Lease(
        db,
        table="callcenter",
        key=keys.lease(lease_name(shard)),
        holder=holder,
        name=lease_name(shard),
        address=address,
        duration=duration,
        now=now,
    )


def current_holder(db: Dynamo, shard: int = 0) -> LeaseInfo | None:
    """A shard's lease as stored now (None when nobody holds it)."""
    return read_lease(db, "callcenter", keys.lease(lease_name(shard)))


def signer() -> signing.TimestampSigner:
    return signing.TimestampSigner(salt=SALT)


def default_holder() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


# --- a web worker's side ----------------------------------------------------------------


class _Slow(Exception):
    """Connected, but the holder did not answer within the bound (a refused or timed-out
    connection is an OSError: the holder is gone)."""


class DispatchClient:
    """Sends this process's new callers to the holder of the dispatcher's lease."""

    def __init__(
        self, db: Dynamo, *, bound: float = 2.0, now: Callable[[], float] = time.time, shards: int | None = None
    ):
        self.db, self.bound, self.now = db, bound, now
        self.shards = shards or configured_shards()
        self._known: dict[int, tuple[str | None, float]] = {}  # shard: (holder's address or None, believed until)
        self._connections = threading.local()
        self.sent = 0  # callers matched by the holder
        self.here = 0  # callers left to this process

    def request(self, call: Call) -> Call | None | object:
        """Have the holder match a new call: the assigned call, None when nobody fits, or
        `HERE` when this process should match it itself (nobody holds the lease, or the
        holder did not answer in time). Raises CallExists when the call was created
        meanwhile."""
        shard = shard_of(call, self.shards)
        address = self._holder_address(shard)
        if address is None:
            self.here += 1
            return HERE
        line = signer().sign(json.dumps(call_to_item(call), default=str)).encode()
        try:
            answer = self._exchange(self._connection(address), line)
        except _Slow:
            # Slow, not gone: this caller is matched here, the next ones go to it again.
            log.info("matching dispatcher at %s did not answer within %g s; matching here", address, self.bound)
            self._drop_connection(address)  # its late answer must not be read as the next one's
            self.here += 1
            return HERE
        except (OSError, ValueError) as exc:
            return self._gone(shard, address, exc)
        if answer.get("exists"):
            raise CallExists()
        if "call" not in answer:
            if answer.get("error"):
                log.warning("matching dispatcher at %s refused a caller: %s", address, answer["error"])
            self._known.pop(shard, None)  # it no longer holds the lease: read it again
            self.here += 1
            return HERE
        self.sent += 1
        return call_from_item(answer["call"]) if answer["call"] else None

    def _holder_address(self, shard: int) -> str | None:
        address, until = self._known.get(shard, (None, 0.0))
        moment = self.now()
        if moment < until:
            return address
        holder = current_holder(self.db, shard)
        if holder and holder.address and holder.live(moment):
            self._known[shard] = (holder.address, holder.lease_until)
            return holder.address
        self._known[shard] = (None, moment + NOBODY_SECONDS)
        return None

    def _gone(self, shard: int, address: str, exc: Exception) -> object:
        log.info("matching dispatcher at %s is gone (%s); matching here", address, exc)
        self._drop_connection(address)
        # Nobody else can hold the lease before this one runs out: until then, match here.
        until = self._known.get(shard, (None, 0.0))[1]
        self._known[shard] = (None, max(until, self.now() + NOBODY_SECONDS))
        self.here += 1
        return HERE

    @staticmethod
    def _exchange(stream, line: bytes) -> dict:
        try:
            stream.write(line + b"\n")
            stream.flush()
            answer = stream.readline()
        except TimeoutError as exc:
            raise _Slow() from exc
        if not answer:
            raise ConnectionError("closed")
        return json.loads(answer)

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


_clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_clients_lock = threading.Lock()
_sending = threading.Event()
_bound = 2.0  # seconds a new caller waits for the holder before being matched here


def send_new_callers(*, bound: float = 2.0) -> None:
    """From now on, this process's new callers go to the holder of the dispatcher's lease
    (a web worker calls it as it starts: callcenter/wsgi.py), each matched here instead
    when the holder does not answer within `bound` seconds."""
    global _bound
    _bound = bound
    _sending.set()


def stop_sending() -> None:
    """This process matches its own new callers again."""
    _sending.clear()
    with _clients_lock:
        _clients.clear()


def client_for(db: Dynamo) -> DispatchClient | None:
    """This process's client for `db` (one per client, as claims), or None when new
    callers are matched here."""
    if not _sending.is_set():
        return None
    with _clients_lock:
        found = _clients.get(db)
        if found is None:
            found = _clients[db] = DispatchClient(db, bound=_bound)
        return found


# --- the holder's side --------------------------------------------------------------------


class _Handler(socketserver.StreamRequestHandler):
    """One connection from a web worker's thread: a signed call per line, an answer per line."""

    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.connections.add(self.request)

    def handle(self) -> None:
        for line in self.rfile:
            answer = self.server.dispatcher.answer(line)
            self.wfile.write(json.dumps(answer, default=str).encode() + b"\n")
            self.wfile.flush()

    def finish(self) -> None:
        self.server.connections.discard(self.request)
        super().finish()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], dispatcher: Dispatcher):
        self.dispatcher = dispatcher
        self.connections: set[socket.socket] = set()
        super().__init__(address, _Handler)

    def close_connections(self) -> None:
        for connection in list(self.connections):
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Dispatcher:
    """The holder's side: `start` listens and runs the lease thread; while it holds a
    shard's lease, every new call of that shard sent to it is matched with `match` (which
    raises CallExists when the call exists already). It stands by for the `shards` given
    (every shard of the deployment without them), holding each lease it can take."""

    def __init__(
        self,
        db: Dynamo,
        match: Callable[[Call], Call | None],
        *,
        listen: str = "127.0.0.1",
        port: int = 0,
        lease_seconds: float = 3.0,
        holder: str | None = None,
        shards: Iterable[int] | None = None,
        shard_count: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.db, self.match, self.listen, self.port, self.clock = db, match, listen, port, clock
        self.shard_count = shard_count or configured_shards()
        served = sorted(set(range(self.shard_count) if shards is None else shards))
        if not served or not all(0 <= shard < self.shard_count for shard in served):
            raise ValueError(f"shards {served} are not among the deployment's {self.shard_count}")
        holder = holder or default_holder()
        self.leases = {s: matching_lease(db, holder=holder, duration=lease_seconds, shard=s) for s in served}
        self._due: dict[int, float] = {}  # shard: when its lease's next turn is (`clock`)
        self.matched = 0  # callers given an agent here
        self._matched_lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    @property
    def lease(self) -> Lease:
        """The lease of the first shard it serves (its address and length are every one's)."""
        return next(iter(self.leases.values()))

    @property
    def holding(self) -> bool:
        return bool(self.held_shards)

    @property
    def held_shards(self) -> list[int]:
        return [shard for shard, lease in self.leases.items() if lease.held]

    def answer(self, line: bytes) -> dict:
        """The answer to one request line from a web worker."""
        try:
            body = signer().unsign(line.strip().decode(errors="replace"), max_age=MAX_AGE)
        except signing.BadSignature:  # SignatureExpired too
            return {"error": "bad signature"}
        try:
            call = call_from_item(json.loads(body))
        except (ValueError, KeyError, TypeError):
            return {"error": "not a call"}
        lease = self.leases.get(shard_of(call, self.shard_count))
        if lease is None or not lease.held:
            return {"here": True}
        try:
            assigned = self.match(call)
        except CallExists:
            return {"exists": True}
        except errors.DynamoError as exc:
            log.warning("matching dispatcher: %s", exc)
            return {"here": True}
        if assigned is None:
            return {"call": None}
        with self._matched_lock:
            self.matched += 1
        return {"call": call_to_item(assigned)}

    def start(self) -> None:
        """Listen (on `listen`, a port the system picks unless `port` is given), publish the
        address with the lease, and run the lease thread."""
        self._server = _Server((self.listen, self.port), self)
        host, port = self._server.socket.getsockname()[:2]
        for lease in self.leases.values():
            lease.address = f"{host}:{port}"
        threading.Thread(target=self._server.serve_forever, name="matching-dispatcher-server", daemon=True).start()
        self._thread = threading.Thread(target=self._hold, name="matching-dispatcher-lease", daemon=True)
        self._thread.start()

    def keep_lease(self) -> float:
        """One turn of the lease thread: each shard's lease whose turn has come renewed
        when less than two thirds of it are left, or taken when free or run out (one held
        by another is tried again when the lease seen runs out). Returns how long to wait
        before the next turn."""
        moment = self.clock()
        for shard, lease in self.leases.items():
            if self._due.get(shard, 0.0) <= moment:
                self._due[shard] = moment + self._keep(shard, lease)
        return max(0.0, min(self._due.values()) - moment)

    @staticmethod
    def _keep(shard: int, lease: Lease) -> float:
        pause = lease.duration / 6
        if lease.generation is not None:
            if lease.until - lease.now() > lease.duration * 2 / 3 or lease.renew():
                return pause
        if not lease.acquire():
            # Somebody else holds it: try again when the lease we saw runs out, not before.
            return max(pause, lease.wait_hint(lease.duration) + random.uniform(0, pause))
        log.info(
            "matching dispatcher: %s holds shard %s's lease (generation %s)", lease.address, shard, lease.generation
        )
        return pause

    def _hold(self) -> None:
        while not self._stop.is_set():
            try:
                pause = self.keep_lease()
            except errors.DynamoError as exc:
                log.warning("matching dispatcher: %s", exc)
                pause = self.lease.duration / 6
            self._stop.wait(pause)

    def stop(self) -> None:
        """Stop listening, close the connections and give the lease up."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._server is not None:
            self._server.shutdown()
            self._server.close_connections()
            self._server.server_close()
        for lease in self.leases.values():
            try:
                lease.release()
            except errors.DynamoError as exc:
                log.warning("matching dispatcher: could not give a lease up (it runs out by itself): %s", exc)
