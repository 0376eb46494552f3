"""A day played against a deployment through its API (`switchboard_client`), as its phone
system and its agents' clients would, `speed` times faster than the day's own clock:
`manage.py simulate_day` and `make demo`.

The phone system places each caller (`POST /api/calls`), hangs up for one who gave up
(`abandon`) and ends a call after its handle time (`end`, the agent to wrap-up, the queue
or, their shift over, offline). The agents' clients hire the day's agents (ids `sim-1`,
`sim-2`...: kept, and their skills set again, on the next run), start and end their
shifts, take breaks (after the call in progress, as the API's `next_status` does) and come
back from wrap-up. Whoever gives a caller an agent (the API's answer, the matcher, the
escalation), the player sees it in its answers or, every second, in the agents' list;
a call offered (ANSWER_TIMEOUT_SECONDS) is picked up at once.

Time: every duration of the day (arrival gaps, handle times, patience, wrap-up, shifts and
breaks) is divided by `speed`; the deployment's own timers (the service level threshold,
offers, escalation) are not. So at speed 10 a 4-minute call lasts 24 s and the day's 20 s
threshold is 2 s: the tally counts waits in the day's seconds (the centre's `waited_seconds`
times the speed) against the day's threshold, where the centre's own figures count them
against its threshold in real seconds. At speed 1 the two agree.

DynamoDB or the site unreachable: one line, the same step again after a pause that doubles
up to 30 s. A change refused because the item moved on (409: a supervisor released the
agent, the offer ran out) leaves that agent or call to the next look.
"""

from __future__ import annotations

import heapq
import math
import random
import secrets
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import switchboard_client as sc
from queues_app.simulation.day import CALLBACK_NUMBER, Day, Shift, clock_seconds

AGENT_ID = "sim-{n}"
AGENT_NAME = "Simulated agent {n}"
SIMULATED = "sim-"  # the prefix of the agents' ids: what a deployment's own agents never are
POLL_EVERY = 1.0  # real seconds between looks at the agents
GIVE_UP_AGAIN = 30.0  # day seconds: a caller whose hang-up was refused (their call was ringing) tries again
DRAIN_SECONDS = 4 * 3600.0  # of the day's time after its end, for the calls in progress to end
FIRST_PAUSE, LONGEST_PAUSE = 1.0, 30.0  # after the site or DynamoDB failed, doubling in between
TROUBLE = (sc.Unreachable, sc.Unavailable, sc.ServerError, sc.Backpressure)
MOVED_ON = (sc.Conflict, sc.NotFound)
LINE_TALLY = ("offered", "answered", "abandoned", "overflowed")  # a line's, in the tally
ON_A_CALL = ("ringing", "attending")
MISSED = "missed"  # the reason of an agent made not ready by an offer not picked up (the API's)


def clock_text(seconds: float) -> str:
    return f"{int(seconds // 3600) % 24:02d}:{int(seconds % 3600 // 60):02d}"


@dataclass
class Caller:
    call_id: str
    index: int  # in the day's arrivals
    agent_id: str | None = None
    waited: float | None = None  # the day's seconds: the centre's waited_seconds times the speed
    callback: bool = False  # hung up to be called back at their turn


@dataclass
class Seat:
    """One of the day's agents, as the player last saw them."""

    agent_id: str
    shift: Shift
    version: int = 1
    state: str = "off"  # off | idle | talking | wrap_up | break
    break_after: float | None = None  # a break asked for during a call: its length (day seconds)
    shift_over: bool = False


@dataclass
class Tally:
    """The day as the player saw it; waits in the day's seconds."""

    threshold: float
    offered: int = 0
    answered: int = 0
    within: int = 0
    abandoned: int = 0
    refused: int = 0  # callers the centre did not take into a line (closed, full), or refused
    missed: int = 0  # offers let ring (ANSWER_TIMEOUT_SECONDS), or picked up after they ran out
    callbacks_asked: int = 0
    callbacks_reached: int = 0
    overflowed: int = 0  # ended past the day's line's `max_wait_seconds`
    left: int = 0  # calls still waiting or in progress when the player stopped, hours after the day
    wait_sum: float = 0.0
    ended: int = 0
    trouble: int = 0  # steps put off because the site or DynamoDB failed
    # On a day with lines, each line's callers offered, answered, abandoned and overflowed.
    by_line: dict[str, dict[str, int]] = field(default_factory=dict)

    def answer(self, waited: float, line: str | None = None) -> None:
        self.answered += 1
        self.wait_sum += waited
        self.within += waited <= self.threshold
        self.on_line(line, "answered")

    def on_line(self, line: str | None, figure: str) -> None:
        if line is not None:
            counts = self.by_line.setdefault(line, dict.fromkeys(LINE_TALLY, 0))
            counts[figure] += 1

    def as_dict(self) -> dict:
        return {
            "offered": self.offered,
            "answered": self.answered,
            "abandoned": self.abandoned,
            "refused": self.refused,
            "offers_missed": self.missed,
            "callbacks_asked": self.callbacks_asked,
            "callbacks_reached": self.callbacks_reached,
            "overflowed": self.overflowed,
            "left_at_the_end": self.left,
            "service_level": round(self.within / self.answered, 3) if self.answered else None,
            "asa_seconds": round(self.wait_sum / self.answered, 1) if self.answered else None,
            "calls_ended": self.ended,
            "steps_put_off": self.trouble,
            "by_line": self.by_line,
        }

    def __str__(self) -> str:
        figures = self.as_dict()
        level = "-" if figures["service_level"] is None else f"{figures['service_level']:.0%}"
        asa = "-" if figures["asa_seconds"] is None else f"{figures['asa_seconds']:.0f} s"
        return (
            f"{self.offered} callers: {self.answered} answered ({level} within {self.threshold:g} s, "
            f"average wait {asa}), {self.abandoned} gave up, {self.ended} calls ended"
            + (f", {self.refused} refused" if self.refused else "")
            + (f", {self.overflowed} overflowed" if self.overflowed else "")
            + (f", {self.missed} offers missed" if self.missed else "")
            + (f", {self.callbacks_reached} of {self.callbacks_asked} called back" if self.callbacks_asked else "")
        )


@dataclass(order=True)
class Event:
    at: float  # real seconds from the start of play
    tie: int
    kind: str = field(compare=False)
    subject: str = field(compare=False, default="")


def hire(client: sc.Switchboard, day: Day, other_skills: dict[str, list[str]]) -> dict[str, Seat]:
    """The day's agents, created or found from an earlier run (off, with the day's skills
    and lines): a seat each."""
    seats, n = {}, 0
    for shift in day.shifts:
        for _ in range(shift.count):
            n += 1
            agent_id = AGENT_ID.format(n=n)
            skills = {**other_skills, "language": list(shift.languages)}
            try:
                agent = client.create_agent(AGENT_NAME.format(n=n), skills, agent_id=agent_id, lines=shift.serving())
            except sc.Conflict:  # hired by an earlier run: off to start, with this day's skills and lines
                agent = rehire(client, agent_id, skills, shift.serving())
            seats[agent_id] = Seat(agent_id, shift, agent["version"])
    return seats


def rehire(client: sc.Switchboard, agent_id: str, skills: dict, lines: dict | None = None) -> dict:
    agent = client.get_agent(agent_id)
    if agent.get("call_id"):
        client.end_call(agent["call_id"], then="offline")
        agent = client.get_agent(agent_id)
    if agent["status"] != "offline":
        agent = client.log_off(agent_id, agent["version"])["agent"]
    changes: dict = {}
    if {k: set(v) for k, v in agent["skills"].items()} != {k: set(v) for k, v in skills.items()}:
        changes["skills"] = skills
    if agent.get("profile") is not None or served(agent.get("lines")) != served(lines):
        changes.update(profile=None, lines=lines)
    return client.change_agent(agent_id, agent["version"], **changes) if changes else agent


def served(lines: dict | None) -> dict:
    """Each line served and its priority (a delay of 0 is no delay)."""
    return {line: (how or {}).get("priority") for line, how in (lines or {}).items()}


class MissedOffers:
    """Offers counted missed as the centre counts them, each once: those the player let ring
    or picked up too late, when it does; any other (one that rang out between two looks, a
    slow one under faults, or at a shift's end or a break's start) when it sees the agent not
    ready for it (at a look, in an answer, or as read before logging them off), whatever it
    thought the agent was doing."""

    def __init__(self) -> None:
        self.decided_for: set[str] = set()  # agents whose missed offer is counted, not yet seen not ready
        self.seen_since: dict[str, str | None] = {}  # each agent's not ready for `missed` last seen: since when

    def decided(self, agent_id: str) -> int:
        self.decided_for.add(agent_id)
        return 1

    def seen(self, agent: dict) -> int:
        """1 for an agent not ready for a missed offer that was not counted yet, else 0."""
        agent_id, since = agent["agent_id"], agent.get("status_since")
        if self.seen_since.get(agent_id, "") == since:
            return 0  # the same time, seen again
        self.seen_since[agent_id] = since
        if agent_id in self.decided_for:
            self.decided_for.discard(agent_id)
            return 0
        return 1


def leave_floor(client: sc.Switchboard, seats: dict[str, Seat]) -> None:
    """Every agent of the day not on a call logged off, as far as the site lets (the next
    run's hiring logs off the others)."""
    for seat in seats.values():
        try:
            log_off_if_free(client, seat.agent_id)
        except sc.SwitchboardError:
            continue


def log_off_if_free(client: sc.Switchboard, agent_id: str) -> dict:
    """The agent logged off, unless offline already or on a call; returns them as read before."""
    agent = client.get_agent(agent_id)
    if agent["status"] != "offline" and not agent.get("call_id"):
        client.log_off(agent_id, agent["version"])
    return agent


def heartbeats(client: sc.Switchboard, seats: Iterable[Seat]) -> float | None:
    """A heartbeat for each agent logged in: the deployment's presence timeout (infinite
    when it checks none: the first answer says so), or None when nobody is logged in."""
    presence = None
    for seat in seats:
        if seat.state != "off":
            presence = client.heartbeat(seat.agent_id).get("presence_seconds")
            if presence is None:
                return math.inf
    return presence


def open_lines(client: sc.Switchboard, day: Day) -> None:
    """The day's lines: each created, or set to the day's settings."""
    for line_id, settings in day.line_settings().items():
        try:
            version = client.get_line(line_id)["version"]
        except sc.NotFound:
            version = None
        client.put_line(line_id, settings, version=version)


class Player:
    """Plays `day` once through `client` (a `switchboard_client.Switchboard`)."""

    def __init__(
        self,
        day: Day,
        client: sc.Switchboard,
        *,
        speed: float = 1.0,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        log: Callable[[str], None] = print,
        seed: int | None = None,
        run: str = "",
        other_skills: dict[str, list[str]] | None = None,
        missed_share: float | None = None,
    ):
        self.day, self.client, self.speed = day, client, speed
        # The catalog's other dimensions: the day's agents fit every caller on them.
        self.other_skills = dict(other_skills or {})
        self.clock, self.sleep, self.log = clock or time.monotonic, sleep or time.sleep, log
        self.rng = random.Random(day.seed if seed is None else seed)
        self.rng.getrandbits(48)  # drawn before the callers, as it always was: a seed's callers stay the same
        # The callers' idempotency keys: new each play, whatever the seed (the same keys again would
        # be the last play's calls answered back, or refused for another day's preferences).
        self.run = run or secrets.token_hex(6)
        self.arrivals = day.arrivals(self.rng)
        self.tally = Tally(day.threshold_seconds)
        self.seats: dict[str, Seat] = {}
        self.callers: dict[str, Caller] = {}
        self.waiting: dict[str, Caller] = {}
        self.talking: dict[str, str] = {}  # call id -> the agent on it, for every call the player will end
        self.events: list[Event] = []
        self.ties = 0
        self.started = 0.0
        self.pause = FIRST_PAUSE
        self.arrived = 0
        self.heartbeat_due = 0.0  # with AGENT_PRESENCE_SECONDS, the agents' clients say they are there
        # With ANSWER_TIMEOUT_SECONDS, the share of offers let ring (the day's, unless given), and those.
        self.missed_share = day.missed_share if missed_share is None else missed_share
        self.let_ring: set[tuple[str, str, str | None]] = set()
        self.missed_offers = MissedOffers()

    # --- the loop ---------------------------------------------------------------------------

    def play(self) -> Tally:
        self.started = self.clock()
        open_lines(self.client, self.day)  # before the agents who serve them
        self.seats = hire(self.client, self.day, self.other_skills)
        try:
            self._play()
        except BaseException:  # refused, failed for good or stopped midway: no agent of the day left taking callers
            leave_floor(self.client, self.seats)
            raise
        return self.tally

    def _play(self) -> None:
        for index, arrival in enumerate(self.arrivals):
            self._at_day(arrival.at, "arrive", str(index))
        end = self.day.hours * 3600
        for seat in self.seats.values():
            self._at_day(seat.shift.start, "shift_start", seat.agent_id)
            self._at_day(min(seat.shift.end, end), "shift_end", seat.agent_id)
            for begins, length in seat.shift.breaks:
                self._at_day(begins, f"break:{length}", seat.agent_id)
        self._at_day(end, "close")
        self._at_day(end + DRAIN_SECONDS, "drained")
        for hour in range(1, int(self.day.hours) + 1):
            self._at_day(hour * 3600, "hour", clock_text(clock_seconds(self.day.start) + hour * 3600))
        self._at(0.0, "look")
        while self.events:
            event = heapq.heappop(self.events)
            if event.kind == "look" and self._over():
                break
            self._wait_for(event.at)
            try:
                self._handle(event.kind, event.subject)
                self.pause = FIRST_PAUSE
            except MOVED_ON as exc:  # a supervisor changed the agent or call meanwhile: left as it is
                self.log(f"left alone: {exc}")
            except TROUBLE as exc:
                self.tally.trouble += 1
                self.log(f"{type(exc).__name__}: {exc}; again in {self.pause:g} s")
                self._at(self.now() + self.pause, event.kind, event.subject)
                self.pause = min(self.pause * 2, LONGEST_PAUSE)

    def now(self) -> float:
        return self.clock() - self.started

    def _at(self, at: float, kind: str, subject: str = "") -> None:
        self.ties += 1
        heapq.heappush(self.events, Event(at, self.ties, kind, subject))

    def _at_day(self, second: float, kind: str, subject: str = "") -> None:
        self._at(second / self.speed, kind, subject)

    def _later(self, day_seconds: float, kind: str, subject: str = "") -> None:
        self._at(self.now() + day_seconds / self.speed, kind, subject)

    def _wait_for(self, at: float) -> None:
        ahead = at - self.now()
        if ahead > 0:
            self.sleep(ahead)

    def _over(self) -> bool:
        return self.arrived == len(self.arrivals) and not self.waiting and not self.talking and self._closed

    @property
    def _closed(self) -> bool:
        return all(seat.shift_over for seat in self.seats.values())

    def _handle(self, kind: str, subject: str) -> None:
        if kind == "arrive":
            self._arrive(int(subject))
        elif kind == "give_up":
            self._give_up(subject)
        elif kind == "ask_callback":
            self._ask_callback(subject)
        elif kind == "hang_up":
            self._hang_up(subject)
        elif kind == "look":
            self._look()
            self._at(self.now() + POLL_EVERY, "look")
        elif kind == "hour":
            self.log(f"{subject} {self.tally}; {len(self.waiting)} waiting")
        elif kind == "drained":  # calls that never end (no process ends an offer, say): stop
            self.tally.left = len(self.waiting) + len(self.talking)
            self.log(f"the day is over: stopped with {len(self.waiting)} waiting and {len(self.talking)} on a call")
            self.events.clear()
        elif kind == "close":
            for call_id in list(self.waiting):  # the day is over: whoever still waits hangs up
                self._give_up(call_id, closing=True)
        elif kind in ("shift_start", "wrapped", "break_end"):
            self._back(self.seats[subject])
        elif kind == "shift_end":
            self._leave(self.seats[subject])
        elif kind.startswith("break:"):
            self._break(self.seats[subject], float(kind.split(":", 1)[1]))

    # --- the agents' clients ----------------------------------------------------------------

    def _seen(self, agent: dict) -> Seat | None:
        """The day's agent as read (by a look, or in any answer): their version kept, and
        an offer they did not pick up counted if it was not yet."""
        seat = self.seats.get(agent["agent_id"])
        if seat is not None:
            seat.version = agent["version"]
            if agent["status"] == "not_ready" and agent.get("reason") == MISSED:
                self.tally.missed += self.missed_offers.seen(agent)
        return seat

    def _back(self, seat: Seat) -> None:
        """Available: at the start of the shift, after a break or a wrap-up."""
        if seat.shift_over:
            self._leave(seat)
            return
        if seat.break_after is not None and seat.state == "wrap_up":
            self._seen(self.client.set_not_ready(seat.agent_id, seat.version, "break")["agent"])
            self._on_break(seat)
            return
        try:
            answer = self.client.make_available(seat.agent_id, seat.version)
        except MOVED_ON:  # changed meanwhile (the line's wrap-up ended on its own, say): as it is now
            agent = self.client.get_agent(seat.agent_id)
            if agent["status"] in ("available", "queued", *ON_A_CALL):
                self._seen(agent)
                seat.state = "idle"  # a call it took shows at the next look
                return
            answer = self.client.make_available(seat.agent_id, self._seen(agent).version)  # type: ignore[union-attr]
        self._seen(answer["agent"])
        seat.state = "idle"
        if answer.get("call"):
            self._taken(answer["call"])

    def _break(self, seat: Seat, length: float) -> None:
        if seat.state in ("off", "break") or seat.shift_over:
            return
        seat.break_after = length
        if seat.state in ("idle", "talking"):  # on a call: after it (the agent's next status)
            self._seen(self.client.set_not_ready(seat.agent_id, seat.version, "break")["agent"])
        if seat.state == "idle":
            self._on_break(seat)

    def _on_break(self, seat: Seat) -> None:
        seat.state = "break"
        self._later(seat.break_after or 0, "break_end", seat.agent_id)
        seat.break_after = None

    def _leave(self, seat: Seat) -> None:
        seat.shift_over = True
        if seat.state in ("idle", "break", "wrap_up"):
            self._seen(log_off_if_free(self.client, seat.agent_id))
            seat.state = "off"

    # --- the phone system -------------------------------------------------------------------

    def _arrive(self, index: int) -> None:
        arrival = self.arrivals[index]
        try:
            call = self.client.create_call(
                {"language": arrival.language},
                idempotency_key=f"sim-{self.run}-{index}",
                line=arrival.line,
            )
        except MOVED_ON as exc:  # refused for good (trouble raises, and the arrival is tried again)
            self.arrived += 1
            self.tally.refused += 1
            self.log(f"caller {index} refused: {exc}")
            return
        self.arrived += 1
        caller = Caller(call["call_id"], index)
        self.callers[caller.call_id] = caller
        self.tally.offered += 1
        self.tally.on_line(arrival.line, "offered")
        if not call.get("agent_id") and call.get("status") != "waiting":  # ended at once
            self.tally.refused += 1
            return
        self.waiting[caller.call_id] = caller  # until `_taken` (an offer let ring keeps them waiting)
        if call.get("agent_id"):
            self._taken(call)
        if arrival.patience is not None:
            self._later(arrival.patience, "give_up", caller.call_id)
        if arrival.callback_after is not None:
            self._later(arrival.callback_after, "ask_callback", caller.call_id)

    def _give_up(self, call_id: str, *, closing: bool = False) -> None:
        """The caller hangs up while waiting (after their patience; to be called back, only
        when the day is over: the callback is cancelled)."""
        caller = self.waiting.get(call_id)
        if caller is None or (caller.callback and not closing):
            return  # answered meanwhile, or holding no more
        try:
            self.client.abandon_call(call_id)
        except MOVED_ON:  # given an agent just now (the next look finds whom), ringing, or overflowed
            if self.client.get_call(call_id).get("status") == "overflowed":
                del self.waiting[call_id]
                self.tally.overflowed += 1
                self.tally.on_line(self.arrivals[caller.index].line, "overflowed")
            else:
                self._later(GIVE_UP_AGAIN, "give_up", call_id)
            return
        del self.waiting[call_id]
        self.tally.abandoned += 1
        self.tally.on_line(self.arrivals[caller.index].line, "abandoned")

    def _ask_callback(self, call_id: str) -> None:
        caller = self.waiting.get(call_id)
        if caller is None or caller.callback:
            return  # answered, or gone, before they asked
        try:
            self.client.request_callback(call_id, CALLBACK_NUMBER)
        except MOVED_ON:  # given an agent as they asked (the next look finds whom)
            return
        caller.callback = True
        self.tally.callbacks_asked += 1

    def _taken(self, call: dict) -> None:
        """A call given to an agent, as an answer or a look showed it: picked up if offered,
        dialled if a callback (and reached), and ended after its handle time."""
        call_id, agent_id = call["call_id"], call.get("agent_id")
        if call_id in self.talking or not agent_id or call.get("status") not in ("assigned", "offered", "callback_due"):
            return  # read after its offer ran out (it waits again), or ended meanwhile
        if call.get("status") == "callback_due":
            try:
                call = self.client.callback_result(call_id, "connected", agent_id=agent_id)
            except MOVED_ON:
                return  # the reservation ran out: the callback is back at its place
            self.tally.callbacks_reached += 1
        elif call.get("status") == "offered":
            offer = (call_id, agent_id, call.get("answer_by"))  # this offer, not the next one to the same agent
            if offer in self.let_ring:
                return
            if self.missed_share and self.rng.random() < self.missed_share:  # let ring: the offer runs out
                self.let_ring.add(offer)
                self._missed(agent_id)
                return
            try:
                call = self.client.answered(call_id, agent_id=agent_id)
            except MOVED_ON:  # picked up too late: the offer ran out (missed, as the centre counts it)
                self._missed(agent_id)
                return
        caller = self.waiting.pop(call_id, None) or self.callers.get(call_id)
        if caller is not None and caller.agent_id is None:
            caller.agent_id = agent_id
            caller.waited = float(call.get("waited_seconds") or 0.0) * self.speed
            self.tally.answer(caller.waited, self.arrivals[caller.index].line)
        handle = self.arrivals[caller.index].handle if caller is not None else self.day.handle(self.rng)
        seat = self.seats.get(agent_id)
        if seat is not None:
            seat.state = "talking"
        elif caller is None:
            return  # neither the caller nor the agent is the day's
        self.talking[call_id] = agent_id
        self._later(handle, "hang_up", call_id)

    def _missed(self, agent_id: str) -> None:
        self.tally.missed += self.missed_offers.decided(agent_id)

    def _hang_up(self, call_id: str) -> None:
        agent_id = self.talking.pop(call_id, None)
        seat = self.seats.get(agent_id or "")
        then = "queue"
        if seat is not None:
            then = "offline" if seat.shift_over else "wrap_up" if self.day.wrap_up_seconds else "queue"
        try:
            answer = self.client.end_call(call_id, then=then)
        except MOVED_ON:  # ended otherwise (a supervisor, a transfer): the agent as they are now
            answer = {"agent": self.client.get_agent(agent_id or ""), "call": None}
        if call_id in self.callers:
            self.tally.ended += 1
        if seat is not None:
            self._after_call(seat, answer)

    def _after_call(self, seat: Seat, answer: dict) -> None:
        agent = answer["agent"]
        self._seen(agent)
        status = agent["status"]
        if status == "offline":
            seat.state = "off"
        elif status == "not_ready":  # the break asked for during the call
            self._on_break(seat)
        elif status == "wrap_up":
            seat.state = "wrap_up"
            self._later(self.day.wrap_up_seconds, "wrapped", seat.agent_id)
        else:
            seat.state = "idle"
            if answer.get("call"):
                self._taken(answer["call"])

    # --- looking ----------------------------------------------------------------------------

    def _look(self) -> None:
        """The agents on calls the player has not seen given: the day's callers answered by
        the matcher or the escalation, and the day's agents given someone else's caller."""
        if self.heartbeat_due <= self.now():  # every third of the presence timeout, as the agents' clients do
            presence = heartbeats(self.client, self.seats.values())
            if presence is not None:
                self.heartbeat_due = self.now() + presence / 3
        for agent in self.client.iter_agents():
            seat = self._seen(agent)
            call_id = agent.get("call_id")
            if seat is not None and seat.state == "idle" and agent["status"] == "not_ready":
                seat.state = "break"  # an offer it let ring made it not ready (`missed`): back at once
                self._later(0, "break_end", seat.agent_id)
            if agent["status"] not in ON_A_CALL or not call_id or call_id in self.talking:
                continue
            if call_id in self.waiting or seat is not None:
                self._taken(self.client.get_call(call_id))
