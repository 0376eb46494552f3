"""Delivering call events: the handler the callback worker runs on each event of the
`callbacks` queue. A 2xx answer completes the event; anything else (an error status, a
timeout, a refused connection, an address the guard refuses, a token without a callback)
fails it with the reason, so the queue retries it with backoff and dead-letters it after
SWITCHBOARD_CALLBACK_RETRY's attempts; the callbacks queue shows each reason."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

import httpcore
import httpx

from queues_app.shipments.records import Shipment
from queues_app.shipments.worker import HandlerFailed
from queues_app.webhooks.destinations import DestinationRefused, GuardedNetwork
from queues_app.webhooks.signing import SigningSecret, signed_headers

TIMEOUT_SECONDS = 5.0
USER_AGENT = "Switchboard-Callbacks/1"


# Where the events of an API token go: its callback URL and the secrets that sign for it,
# or None when the token was deleted, revoked or its callback removed since the event was
# written. `models.ApiToken.callback_of`, given by the command that runs the worker.
Destinations = Callable[[object], tuple[str, list[SigningSecret]] | None]


class GuardedTransport(httpx.HTTPTransport):
    """httpx's transport connecting through `GuardedNetwork`, and never through a proxy
    named in the environment (the proxy would make the connection the guard judges)."""

    def __init__(self) -> None:
        super().__init__(trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False), network_backend=GuardedNetwork()
        )


class Deliverer:
    """POSTs events, signed, one at a time; one per worker thread (httpx clients keep
    connections to the receiver open between events)."""

    def __init__(self, destinations: Destinations, client: httpx.Client | None = None):
        self.destinations = destinations
        self.client = client or httpx.Client(
            transport=GuardedTransport(),
            trust_env=False,
            timeout=TIMEOUT_SECONDS,
            follow_redirects=False,  # a redirect is an answer that is not 2xx: the attempt fails
            headers={"User-Agent": USER_AGENT},
        )

    def __call__(self, shipment: Shipment, stop: threading.Event) -> None:
        event = shipment.data.get("event")
        if not isinstance(event, dict) or "id" not in event:
            raise HandlerFailed("not a call event (no event in the shipment's data)")
        token_id = shipment.data.get("token")
        destination = self.destinations(token_id)
        if destination is None:
            if str(event.get("type", "")).startswith("agent."):
                return  # it stopped listening to agents: nothing owed to it (a call's events are)
            raise HandlerFailed(f"API token {token_id} has no callback any more (revoked, deleted or removed)")
        url, signing = destination
        body = json.dumps(event, separators=(",", ":"), sort_keys=True).encode()
        host = urlsplit(url).netloc
        try:
            response = self.client.post(url, content=body, headers=signed_headers(signing, body, event["id"]))
        except httpx.ConnectError as exc:
            if isinstance(exc.__cause__, DestinationRefused):
                raise HandlerFailed(f"refused to connect to {host}: {exc.__cause__}") from exc
            raise HandlerFailed(f"could not reach {host}: {exc}") from exc
        except httpx.TimeoutException as exc:
            raise HandlerFailed(f"{host} did not answer within {TIMEOUT_SECONDS:g} s") from exc
        except httpx.HTTPError as exc:
            raise HandlerFailed(f"could not reach {host}: {exc.__class__.__name__}") from exc
        if not 200 <= response.status_code < 300:
            raise HandlerFailed(f"{host} answered {response.status_code}")
