"""Where callbacks may go: only to addresses on the public internet, unless the operator
allows a network (CALLBACK_ALLOWED_NETWORKS).

A callback URL is chosen by whoever holds an API token, and the worker POSTs to it from
inside the deployment: without this guard a token could make it reach the instance
metadata address, the database or any internal service. The rule (OWASP's) is applied
twice: when a callback is registered, on every address its host resolves to, and when an
event is delivered, on the address actually connected to (`GuardedNetwork`), so a name
that resolves elsewhere later, or differently for each lookup, is refused as well.
Redirects are never followed (the delivery's client says so), so a receiver cannot send
the worker on elsewhere.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urlsplit

import httpcore
from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# IPv6 addresses that carry an IPv4 address and reach it: judged by that address.
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")


class DestinationRefused(httpcore.ConnectError):
    """A callback's address is not one the worker may reach. (An httpcore.ConnectError,
    so that httpx reports it as a connection that could not be made.)"""


@lru_cache(maxsize=8)
def _parsed(networks: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(network, strict=False) for network in networks)


def allowed_networks() -> tuple[Network, ...]:
    return _parsed(tuple(settings.SWITCHBOARD_CALLBACK_ALLOWED_NETWORKS))


def _effective(address: Address) -> Address:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address in NAT64:
            return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address


def refusal(address: str) -> str | None:
    """Why the worker may not connect to `address` (an IP address, as text), or None when
    it may: a global unicast address, or one in CALLBACK_ALLOWED_NETWORKS."""
    try:
        ip = _effective(ipaddress.ip_address(address.split("%", 1)[0]))  # without an IPv6 zone
    except ValueError:
        return f"{address} is not an IP address"
    if any(ip in network for network in allowed_networks()):
        return None
    if ip.is_loopback:
        kind = "a loopback address"
    elif ip.is_link_local:
        kind = "a link-local address (the cloud metadata address is one)"
    elif ip.is_multicast:
        kind = "a multicast address"
    elif ip.is_unspecified:
        kind = "the unspecified address"
    elif ip.is_reserved:
        kind = "a reserved address"
    elif ip.is_global:
        return None
    elif ip.is_private:
        kind = "a private address"
    else:
        kind = "a reserved address"  # e.g. shared address space (carrier-grade NAT)
    return f"{ip} is {kind}, not on the public internet (CALLBACK_ALLOWED_NETWORKS may allow it)"


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (an IP address resolves to itself); raises OSError."""
    found = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(entry[4][0]) for entry in found))


def url_refusal(url: str) -> str | None:
    """Why a callback may not be registered at `url`, or None. A name that does not
    resolve now is let through: it is checked again on every delivery, where a name
    that does not resolve fails the attempt."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "has a port that is not a number from 0 to 65535"
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError):
        return None
    for address in addresses:
        if problem := refusal(address):
            return _named(host.strip("[]"), address, problem)
    return None


def _named(host: str, address: str, problem: str) -> str:
    """The problem, saying which address a name resolved to."""
    return problem if host == address else f"{host} resolves to {address}: {problem}"


class GuardedNetwork(httpcore.NetworkBackend):
    """httpcore's own sockets, opened only to allowed addresses: the host is resolved
    here, each address judged, and the connection made to that address (TLS still
    checks the certificate for the URL's name). The peer of the socket is judged once
    more, so what is refused is the connection actually made."""

    def __init__(self, backend: httpcore.NetworkBackend | None = None):
        self.backend = backend or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            addresses = resolve(host, port)
        except (OSError, UnicodeError) as exc:
            raise httpcore.ConnectError(f"{host} does not resolve") from exc
        refusals = []
        for address in addresses:
            if problem := refusal(address):
                refusals.append(_named(host, address, problem))
                continue
            stream = self.backend.connect_tcp(address, port, timeout, local_address, socket_options)
            peer = stream.get_extra_info("socket").getpeername()[0]
            if problem := refusal(peer):
                stream.close()
                raise DestinationRefused(problem)
            return stream
        raise DestinationRefused(refusals[0])

    def sleep(self, seconds: float) -> None:
        self.backend.sleep(seconds)
