"""A Python client of Switchboard's JSON API (`/api/`), for phone systems and other machines.

    from switchboard_client import Switchboard

    with Switchboard("https://switchboard.example.com", token) as sb:
        call = sb.create_call({"language": "Spanish"})
        call = sb.wait_for_call(call["call_id"])
        ...
        sb.end_call(call["call_id"])

Answers are the API's JSON objects (dicts), as `/api/docs` describes them.

Retries: 429 and 503 answers and connection failures (a timeout included) are tried
again, up to `max_retries` times, after the `Retry-After` the server sent (seconds) or
else after a capped exponential backoff with full jitter. Every request is safe to send
again, so every request is retried: reads; creations, which always carry an
`Idempotency-Key` (one is made up when the caller gives none, and the same key is sent
on every retry); and changes, which name what they were decided on (the agent's
`version`, the call being ended), so that a change the server made before its answer was
lost is answered as done (`Idempotent-Replayed: true`) instead of made twice, and one
that meets a change made since is refused (`Conflict`, with `current`).

Refusals raise `ApiError` subclasses (`NotFound`, `Conflict`, `InvalidInput`...)
carrying the problem body: `error`, `message`, `hint`, `fields`.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import quote

import httpx

__all__ = [
    "ApiError",
    "Backpressure",
    "Conflict",
    "Forbidden",
    "InvalidInput",
    "KeyReused",
    "NotFound",
    "ServerError",
    "Switchboard",
    "SwitchboardError",
    "TooLarge",
    "Unauthorized",
    "Unavailable",
    "Unreachable",
    "UnsupportedMediaType",
]

RETRY_STATUSES = (429, 503)
RELEASE_TARGETS = ("queue", "wrap_up", "offline")
CALL_STATUSES = ("waiting", "assigned")


class SwitchboardError(Exception):
    """Anything this client raises."""


class Unreachable(SwitchboardError):
    """The server could not be reached (after the retries that were safe to make)."""


class ApiError(SwitchboardError):
    """The API refused or failed a request; `problem` is its JSON body."""

    def __init__(self, status: int, problem: Mapping[str, Any], response: httpx.Response | None = None):
        self.status = status
        self.problem = dict(problem)
        self.response = response
        self.error: str = str(self.problem.get("error") or f"HTTP {status}")
        self.message: str = str(self.problem.get("message") or "")
        self.hint: str | None = self.problem.get("hint")
        self.fields: dict[str, str] = dict(self.problem.get("fields") or {})
        # On a 409: the items the request named as they are now, by kind (`agent`, `call`...).
        self.current: dict[str, Any] = dict(self.problem.get("current") or {})
        self.trace_id: str | None = response.headers.get("X-Trace-Id") if response is not None else None
        super().__init__(f"{status} {self.error}: {self.message}" if self.message else f"{status} {self.error}")


class InvalidInput(ApiError):
    """400: `fields` names each bad input."""


class Unauthorized(ApiError):
    """401: no token, or one unknown, revoked or expired."""


class Forbidden(ApiError):
    """403: the token may only read."""


class NotFound(ApiError):
    """404: no such call, agent or shipment."""


class Conflict(ApiError):
    """409: the item's state does not allow it (e.g. the agent is already queued), or it
    changed since the version or call the request named; `current` holds it as it is now."""


class KeyReused(ApiError):
    """422: an `Idempotency-Key` sent again with a different request."""


class TooLarge(ApiError):
    """413: the body is larger than the API accepts."""


class UnsupportedMediaType(ApiError):
    """415: the body was not sent as application/json."""


class Backpressure(ApiError):
    """429 after every retry: the queue is past its bound."""


class Unavailable(ApiError):
    """503 after every retry: the server's DynamoDB is unreachable or throttling."""


class ServerError(ApiError):
    """Any other 5xx."""


ERRORS: dict[int, type[ApiError]] = {
    400: InvalidInput,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    415: UnsupportedMediaType,
    422: KeyReused,
    429: Backpressure,
    503: Unavailable,
}


def error_for(response: httpx.Response) -> ApiError:
    """The typed error of a refused request, with its problem body (or the text, when the
    answer was not the API's JSON, e.g. from a proxy)."""
    try:
        problem = response.json()
    except ValueError:
        problem = None
    if not isinstance(problem, dict):
        problem = {"error": response.reason_phrase or f"HTTP {response.status_code}", "message": response.text[:500]}
    kind = ERRORS.get(response.status_code)
    if kind is None:
        kind = ServerError if response.status_code >= 500 else ApiError
    return kind(response.status_code, problem, response)


def retry_after_seconds(response: httpx.Response) -> float | None:
    """The answer's `Retry-After` in seconds, or None when absent or not a number."""
    value = response.headers.get("Retry-After", "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def new_idempotency_key() -> str:
    return uuid.uuid4().hex


class Switchboard:
    """The API at `base_url` (the site, e.g. `http://127.0.0.1:8000`), as the user of
    `token` (`python manage.py create_api_token USER --name NAME`)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout: float = 10.0,
        max_retries: int = 5,
        transport: httpx.BaseTransport | None = None,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_retry_after: float = 300.0,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ):
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.max_retry_after = max_retry_after
        self._sleep = sleep
        self._jitter = jitter
        self._http = httpx.Client(
            base_url=base_url.rstrip("/") + "/api/",
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )

    # --- the connection ---------------------------------------------------------------

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Switchboard:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- calls ----------------------------------------------------------------------

    def create_call(
        self,
        preferences: Mapping[str, str],
        *,
        priority: int = 0,
        order: str | None = None,
        idempotency_key: str | None = None,
        line: str | None = None,
    ) -> dict:
        """Place a caller (on `line`, or the centre's main line): the call, `assigned` to an
        agent at once or `waiting` (or ended at once: a line closed, or full).

        Leave out a dimension (or send "any") for any agent. A key is made up when none is
        given, so the retries of this request never make a second call; pass your own
        (e.g. the phone system's call id) to be safe across restarts too."""
        body: dict[str, Any] = {"preferences": dict(preferences), "priority": priority}
        if order is not None:
            body["order"] = order
        if line is not None:
            body["line"] = line
        return self._request("POST", "calls", json=body, idempotency_key=idempotency_key or new_idempotency_key())

    def get_call(self, call_id: str) -> dict:
        return self._request("GET", f"calls/{_segment(call_id)}")

    def abandon_call(self, call_id: str) -> dict:
        """The caller hung up before being answered."""
        return self._request("POST", f"calls/{_segment(call_id)}/abandon")

    def end_call(self, call_id: str, then: str = "queue") -> dict:
        """End the call named; its agent then goes back to the `queue` (and perhaps takes
        the next caller: `call`), or to `wrap_up`, or `offline`. `{"agent": ..., "call": ...}`."""
        if then not in RELEASE_TARGETS:
            raise ValueError(f"then must be one of {', '.join(RELEASE_TARGETS)}")
        return self._request("POST", f"calls/{_segment(call_id)}/end", json={"then": then})

    def answered(self, call_id: str, *, agent_id: str | None = None) -> dict:
        """The agent picked up the call offered to them (with ANSWER_TIMEOUT_SECONDS); a
        `Conflict` once the offer ran out and the call went back to the line (or, naming
        the `agent_id` it rang for, was offered to another agent)."""
        body = None if agent_id is None else {"agent_id": agent_id}
        return self._request("POST", f"calls/{_segment(call_id)}/answered", json=body)

    def request_callback(self, call_id: str, number: str) -> dict:
        """Call the waiting caller back on `number` (E.164) instead of holding: the call,
        `callback_waiting` at its place in line. Asked again with the same number, the
        same; a `Conflict` once the call no longer waits."""
        return self._request("POST", f"calls/{_segment(call_id)}/callback", json={"number": number})

    def callback_result(
        self, call_id: str, result: str, *, attempt: int | None = None, agent_id: str | None = None
    ) -> dict:
        """How dialling a `callback_due` call went: `connected`, `no_answer`, `busy` or
        `failed`, of its `attempt` (the attempts the due call showed, plus one), with the
        `agent_id` it named. The call as it is after; a `Conflict` once that reservation ran out."""
        body: dict = {"result": result}
        body.update({k: v for k, v in (("attempt", attempt), ("agent_id", agent_id)) if v is not None})
        return self._request("POST", f"calls/{_segment(call_id)}/callback-result", json=body)

    def transfer(
        self,
        call_id: str,
        *,
        from_agent_id: str,
        preferences: Mapping[str, str] | None = None,
        agent_id: str | None = None,
        then: str = "queue",
    ) -> dict:
        """Hand a call in progress on from `from_agent_id` (the agent on it as you last
        read it): to new `preferences` (it keeps its place in line) or to the queued agent
        `agent_id`; that agent then goes `then`. `{"agent": ..., "call": ...}`; sent again
        once it took effect, the same answer as things are now."""
        if (preferences is None) == (agent_id is None):
            raise ValueError("transfer to preferences or to an agent_id, one of the two")
        if then not in RELEASE_TARGETS:
            raise ValueError(f"then must be one of {', '.join(RELEASE_TARGETS)}")
        body: dict[str, Any] = {"then": then, "from_agent_id": from_agent_id}
        body.update({"preferences": dict(preferences)} if preferences is not None else {"agent_id": agent_id})
        return self._request("POST", f"calls/{_segment(call_id)}/transfer", json=body)

    def list_calls(self, status: str, cursor: str | None = None, *, limit: int | None = None) -> dict:
        """One page of calls: `{"calls": [...], "next_cursor": ...}`. `status` is `waiting`
        (the line, in order) or `assigned`."""
        if status not in CALL_STATUSES:
            raise ValueError(f"status must be one of {', '.join(CALL_STATUSES)}")
        return self._request("GET", "calls", params=_params(status=status, cursor=cursor, limit=limit))

    def iter_calls(self, status: str, *, limit: int | None = None) -> Iterator[dict]:
        """Every call of that status, page after page."""
        return self._pages(lambda cursor: self.list_calls(status, cursor, limit=limit), "calls")

    def wait_for_call(self, call_id: str, *, timeout: float = 60.0, poll_every: float = 1.0) -> dict:
        """Poll the call until it is no longer waiting (assigned, or ended), or until
        `timeout` seconds have passed; returns the call as last read."""
        deadline = time.monotonic() + timeout
        while True:
            call = self.get_call(call_id)
            if call.get("status") != "waiting" or time.monotonic() >= deadline:
                return call
            self._sleep(min(poll_every, max(deadline - time.monotonic(), 0)))

    # --- agents ---------------------------------------------------------------------

    def list_agents(
        self,
        *,
        status: str | None = None,
        skill: str | None = None,
        cursor: str | None = None,
        limit: int | None = None,
    ) -> dict:
        """One page of agents in id order: `{"agents": [...], "next_cursor": ...}`.
        `status` is one agent status (`queued`, `attending`...); `skill` is
        `dimension:value`, e.g. `language:French`."""
        return self._request("GET", "agents", params=_params(status=status, skill=skill, cursor=cursor, limit=limit))

    def iter_agents(self, *, status: str | None = None, skill: str | None = None) -> Iterator[dict]:
        return self._pages(lambda cursor: self.list_agents(status=status, skill=skill, cursor=cursor), "agents")

    def get_agent(self, agent_id: str) -> dict:
        return self._request("GET", f"agents/{_segment(agent_id)}")

    def create_agent(
        self,
        name: str,
        skills: Mapping[str, Any],
        *,
        agent_id: str | None = None,
        lines: Mapping[str, Mapping[str, int]] | None = None,
    ) -> dict:
        """Add an agent, logged off (version 1), with `skills` (`{"language": ["French"]}`, or
        with levels `{"language": {"French": 5}}`), serving `lines` (`{"sales": {"priority":
        1}}`; None: every line); with an `agent_id` of your own, sent again it answers the
        agent it made (a `Conflict` if another holds that id)."""
        body: dict[str, Any] = {"name": name, "skills": dict(skills)}
        if agent_id is not None:
            body["agent_id"] = agent_id
        if lines is not None:
            body["lines"] = {line: dict(how) for line, how in lines.items()}
        return self._request("POST", "agents", json=body)

    def change_agent(self, agent_id: str, version: int, **changes: Any) -> dict:
        """Change `name`, `skills`, `profile` or `lines` of an agent not queued or on a
        call, from the `version` you last read."""
        return self._request("PATCH", f"agents/{_segment(agent_id)}", json={"version": version, **changes})

    def get_line(self, line_id: str) -> dict:
        return self._request("GET", f"lines/{_segment(line_id)}")

    def put_line(self, line_id: str, settings: Mapping[str, Any], *, version: int | None = None) -> dict:
        """Create the line (no `version`) or change it from the `version` you last read: its
        promise, hours, limits and overflow (`settings`, as PUT /api/lines/<id> takes them)."""
        body = {**settings, **({"version": version} if version is not None else {})}
        return self._request("PUT", f"lines/{_segment(line_id)}", json=body)

    def make_available(self, agent_id: str, version: int) -> dict:
        """`{"agent": ..., "call": ...}`: the agent, at the `version` you last read, took the
        longest-waiting caller they fit (`call`), or was queued (`call` null)."""
        return self._request("POST", f"agents/{_segment(agent_id)}/available", json={"version": version})

    def release(self, agent_id: str, call_id: str, then: str = "queue") -> dict:
        """End the agent's call `call_id` (the one you last read); then `queue` them again
        (and perhaps give them the next caller: `call`), or `wrap_up`, or `offline`."""
        if then not in RELEASE_TARGETS:
            raise ValueError(f"then must be one of {', '.join(RELEASE_TARGETS)}")
        return self._request("POST", f"agents/{_segment(agent_id)}/release", json={"call_id": call_id, "then": then})

    def log_off(self, agent_id: str, version: int) -> dict:
        """Log the agent off, from the `version` you last read."""
        return self._request("POST", f"agents/{_segment(agent_id)}/offline", json={"version": version})

    def set_not_ready(self, agent_id: str, version: int, reason: str) -> dict:
        """Out of every queue, logged in, offered no call, for `reason` (break, lunch...),
        from the `version` you last read; `make_available` ends it."""
        body = {"version": version, "reason": reason}
        return self._request("POST", f"agents/{_segment(agent_id)}/not-ready", json=body)

    def heartbeat(self, agent_id: str) -> dict:
        """Say the agent's client is there (AGENT_PRESENCE_SECONDS): send one every third
        of `presence_seconds`, which the answer gives (null: presence is not checked)."""
        return self._request("POST", f"agents/{_segment(agent_id)}/heartbeat")

    def queues(self) -> dict:
        """Every skill combination's queue and the number of callers waiting."""
        return self._request("GET", "queues")

    # --- shipments ------------------------------------------------------------------

    def create_shipment(
        self,
        data: Mapping[str, Any],
        *,
        tenant: str | None = None,
        priority: int = 0,
        delay_seconds: float = 0,
        idempotency_key: str | None = None,
    ) -> dict:
        """Enqueue a shipment (`queue`: `live`, or `spillover` when the tenant is over its
        rate). A key is made up when none is given, so a retry never enqueues twice."""
        body: dict[str, Any] = {"data": dict(data), "priority": priority, "delay_seconds": delay_seconds}
        if tenant is not None:
            body["tenant"] = tenant
        return self._request("POST", "shipments", json=body, idempotency_key=idempotency_key or new_idempotency_key())

    def get_shipment(self, shipment_id: str) -> dict:
        """The shipment with its state, `receive_count` and `failures` (time and reason)."""
        return self._request("GET", f"shipments/{_segment(shipment_id)}")

    # --- callbacks ------------------------------------------------------------------

    def get_callback(self) -> dict:
        """Where this token's call events go (`url` None: nowhere)."""
        return self._request("GET", "callback")

    def set_callback(self, url: str, secret: str | None = None, *, rotate: bool = False, agents: bool = False) -> dict:
        """Send this token's call events to `url` from now on; the answer holds the secret
        that signs them (a Standard Webhooks `whsec_...`, made up when none is given).
        With `rotate`, the secret replaced keeps signing too until `previous_secret_until`;
        with `agents`, every agent's changes of status go there too."""
        body: dict[str, Any] = {"url": url}
        if agents:
            body["agents"] = True
        if secret is not None:
            body["secret"] = secret
        if rotate:
            body["rotate"] = True
        return self._request("PUT", "callback", json=body)

    def remove_callback(self) -> dict:
        return self._request("DELETE", "callback")

    # --- requests -------------------------------------------------------------------

    def _pages(self, fetch: Callable[[str | None], dict], key: str) -> Iterator[dict]:
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            yield from page.get(key) or []
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def _request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        idempotency_key: str | None = None,
    ) -> dict:
        """Send, retrying 429, 503 and failures to connect or to answer; the answer's JSON,
        or a typed error."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, json=json, params=params, headers=headers)
            except httpx.TransportError as exc:
                # Sent twice, a request acts once: creations carry their key, changes name
                # what they were decided on.
                if attempt >= self.max_retries:
                    raise Unreachable(f"{method} /api/{path}: {exc!r}") from exc
                self._sleep(self._backoff(attempt))
                attempt += 1
                continue
            if response.status_code in RETRY_STATUSES and attempt < self.max_retries:
                self._sleep(self._delay(response, attempt))
                attempt += 1
                continue
            if response.status_code >= 400:
                raise error_for(response)
            return response.json()

    def _delay(self, response: httpx.Response, attempt: int) -> float:
        told = retry_after_seconds(response)
        return min(told, self.max_retry_after) if told is not None else self._backoff(attempt)

    def _backoff(self, attempt: int) -> float:
        """Full jitter: a random wait up to the capped exponential step."""
        return self._jitter() * min(self.backoff_max, self.backoff_base * 2**attempt)


def _segment(item_id: str) -> str:
    if not item_id:
        raise ValueError("an id is required")
    return quote(item_id, safe="")


def _params(**given: Any) -> dict[str, Any]:
    return {name: value for name, value in given.items() if value is not None}
