"""`run_matcher`: the matching dispatcher's process. It listens, holds the dispatcher's
lease (or stands by while another holds it) and matches every new caller the web
workers send it (docs/architecture.md, "Matching topology")."""

from __future__ import annotations

import functools
import ipaddress
import signal
import threading
import time

from django.conf import settings
from django.core.management.base import CommandError

from queues_app.centre.call_center import CallCenter
from queues_app.figures import counters, heartbeats
from queues_app.management.arguments import DAY, BackgroundCommand, float_range, int_range, text
from queues_app.routing import matching
from queues_app.routing.dispatch import Dispatcher, configured_shards

DEFAULT_LISTEN = "127.0.0.1"


def listen_address() -> str:
    """Where the matcher listens: SWITCHBOARD_MATCHING_DISPATCHER, or loopback (one host)."""
    return getattr(settings, "SWITCHBOARD_MATCHING_DISPATCHER", "") or DEFAULT_LISTEN


def matching_dispatcher(
    router: CallCenter | None = None,
    *,
    listen: str | None = None,
    port: int = 0,
    lease_seconds: float = 3.0,
    shards: list[int] | None = None,
) -> Dispatcher:
    """The dispatcher this command runs: new callers matched by the call center's matcher
    in this process (`Matcher.match_here`), from one thread per web worker's connection;
    for the `shards` given, or every shard of the deployment."""
    router = router or CallCenter()
    return Dispatcher(
        router.db,
        functools.partial(router.matcher.match_here, new_call=True),
        listen=listen or listen_address(),
        port=port,
        lease_seconds=lease_seconds,
        shards=shards,
    )


def heartbeat_state(dispatcher: Dispatcher) -> str:
    """What the system page says of a matcher: with shards, which ones it holds."""
    if dispatcher.shard_count == 1:
        return heartbeats.HOLDING if dispatcher.holding else heartbeats.STANDING_BY
    held, count = dispatcher.held_shards, dispatcher.shard_count
    if not held:
        return f"standing by for {_named(list(dispatcher.leases))} (of {count})"
    return f"holding the lease{'s' if len(held) > 1 else ''} of {_named(held)} (of {count})"


def _named(shards: list[int]) -> str:
    """'shard 1', 'shards 0, 2'."""
    return f"shard{'s' if len(shards) > 1 else ''} {', '.join(map(str, shards))}"


def _served(shards: list[int] | None) -> str:
    count = configured_shards()
    if count == 1:
        return ""
    return f", {_named(sorted(set(shards)) if shards else list(range(count)))} of {count}"


def _not_a_wildcard(address: str) -> None:
    """The address goes into the lease for others to connect to: it must name this host."""
    try:
        unspecified = ipaddress.ip_address(address).is_unspecified
    except ValueError:
        unspecified = False  # a host name
    if unspecified:
        raise CommandError(
            f"{address} is no address to publish: listen on this host's private address "
            "(SWITCHBOARD_MATCHING_DISPATCHER or --listen), 127.0.0.1 on one host."
        )


class Command(BackgroundCommand):
    help = (
        "Match every new caller of the deployment: listen for the web workers' callers and hold the "
        "matching dispatcher's lease (one holder across all hosts; the others stand by and take over when "
        "it runs out). With SWITCHBOARD_MATCHING_SHARDS, a lease a shard: it holds every one it can, or those "
        "of --shard. Runs until SIGTERM or Ctrl-C."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--listen",
            type=text(200),
            default=None,
            help="the address to listen on and publish in the lease; without it SWITCHBOARD_MATCHING_DISPATCHER, "
            "else 127.0.0.1",
        )
        parser.add_argument(
            "--port", type=int_range(0, 65535), default=0, help="the port to listen on (0: one the system picks)"
        )
        parser.add_argument(
            "--lease", type=float_range(1, 3600), default=3.0, help="lease length in seconds (renewed every third)"
        )
        parser.add_argument(
            "--shard",
            type=int_range(0, 63),
            action="append",
            default=None,
            help="match the callers of this shard only (again for more); without it, of every shard it can hold",
        )
        parser.add_argument(
            "--max-seconds",
            type=float_range(above=0, high=365 * DAY),
            default=None,
            help="stop after this long (tests, demos)",
        )

    def handle(self, *, listen, port, lease, shard, max_seconds, **options):
        listen = listen or listen_address()
        _not_a_wildcard(listen)
        count = configured_shards()
        if shard and max(shard) >= count:
            raise CommandError(
                f"--shard {max(shard)}: the deployment's callers are in {count} shard{'s' if count > 1 else ''} "
                f"(SWITCHBOARD_MATCHING_SHARDS), numbered from 0."
            )
        dispatcher = matching_dispatcher(listen=listen, port=port, lease_seconds=lease, shards=shard)
        stop = threading.Event()
        previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
        liveness = heartbeats.Heartbeat(heartbeats.MATCHER, dispatcher.db)
        try:
            dispatcher.start()
        except OSError as exc:
            raise CommandError(f"Cannot listen on {listen}:{port}: {exc.strerror or exc}") from exc
        matching.remember_heads()  # it matches nearly every new caller: what it read stays good a moment
        self.stdout.write(
            f"Matcher listening on {dispatcher.lease.address} (lease {lease:g}s{_served(shard)}); stop with SIGTERM."
        )
        self.stdout.flush()
        deadline = time.monotonic() + max_seconds if max_seconds is not None else None
        try:
            while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
                state = heartbeat_state(dispatcher)
                liveness.beat(state, dispatcher.matched, force=state != liveness.state)
                counters.flush_if_due(dispatcher.db)  # the answers it made are counted soon
                stop.wait(1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic())))
        finally:
            dispatcher.stop()
            matching.remember_heads(0)
            counters.MetricsStore(dispatcher.db).flush()  # what it counted, before it goes
            liveness.stopped(dispatcher.matched)
            for s, handler in previous.items():
                signal.signal(s, handler)
        self.stdout.write(f"Stopped: {dispatcher.matched} callers matched.")
