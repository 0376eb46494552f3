"""A day on the floor, event by event, on the domain every API request runs (`CallCenter`)
and a clock the simulation moves: no sleeping, so an eight-hour day takes minutes.

The day (`Day`, read from a JSON file: queues_app/simulation/days/) gives the callers'
arrival rate per interval, their languages, the handle time's distribution, the callers'
patience and callbacks, their lines, the wrap-up, and the agents with their shifts,
breaks and the lines they serve. The floor plays it as the phone system and the agents' clients would: a caller
arrives (`create_call`), gives up after their patience (`abandon`) or asks to be called
back (`request_callback`: reached as soon as an agent is reserved, `callback_result`
connected), hangs up after the handle time (`release`, to the queue or to wrap-up), is
turned away by a full line or overflows past its longest wait (the escalation's pass,
every 5 s); an agent starts a shift (`make_available`), goes on a break (`set_not_ready`,
which waits for the end of a call in progress as the agents' client asks), comes back
and ends the shift (`log_off`, after the call). Timers are not scaled: every one is on
the simulated clock, so a 20 s threshold is 20 simulated seconds.

What the floor saw (`Truth`) is its own record of every caller, taken from what each
action answered (the call assigned, and to whom): the ground truth the centre's figures
are checked against. Work conservation is measured from it: an agent idle while a
caller they fit waits, in agent-seconds.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from queues_app.calls.records import CallStatus
from queues_app.ddb import errors
from queues_app.simulation.day import CALLBACK_NUMBER, Arrival, Day, Shift

# The collector samples occupancy every 15 s; the floor every minute, which keeps a day short and
# still gives the wait estimate 15 samples over its 15 minutes.
SAMPLE_EVERY = 60.0
SWEEP_EVERY = 5.0  # the escalation loop's pass over the callers past their line's limit (`escalate_callers`)


@dataclass
class Caller:
    language: str
    arrived: float  # seconds from the day's start, as the centre stamped them
    index: int = 0  # in the day's arrivals
    answered: float | None = None
    abandoned: float | None = None
    ended: float | None = None
    agent_id: str | None = None
    estimate: float | None = None  # the estimated wait when they arrived to wait
    callback_asked: float | None = None  # when they hung up to be called back at their turn
    overflowed: float | None = None  # when their line's max_wait_seconds ended their call
    line: str | None = None  # the line they called on

    @property
    def waited(self) -> float | None:
        left = next((t for t in (self.answered, self.abandoned, self.overflowed) if t is not None), None)
        return None if left is None else left - self.arrived


@dataclass
class Seat:
    """An agent as the floor knows them."""

    agent_id: str
    languages: frozenset[str]
    shift: Shift
    state: str = "off"  # off | idle | talking | wrap_up | break
    call_id: str | None = None
    break_after: float | None = None  # a break asked for during a call: its length
    shift_over: bool = False  # the shift ended (during a call: logged off after it)
    since: float = 0.0  # in `state` since (seconds from the day's start)
    # Seconds in each state, stretches ended (the agents' report counts those it stored).
    seconds: dict[str, float] = field(default_factory=dict)

    def serves(self, line: str | None) -> bool:
        return not self.shift.lines or line in self.shift.lines


@dataclass
class Truth:
    callers: dict[str, Caller] = field(default_factory=dict)
    # Callers turned away (their line full): when, and which line.
    refused: list[tuple[float, str | None]] = field(default_factory=list)
    idle_while_waiting: float = 0.0  # agent-seconds: an agent idle while a caller they fit waited
    problems: list[str] = field(default_factory=list)


class Floor:
    """Plays a `Day` on fresh tables (`db`) from `began` (an aware datetime)."""

    def __init__(self, day: Day, db, began: datetime, *, estimates: bool = True):
        from queues_app.agents.skills import SkillCatalog
        from queues_app.centre.call_center import CallCenter
        from queues_app.figures.service_level import ServiceLevelReader

        self.day, self.db, self.began = day, db, began
        self.moment = began
        self.rng = random.Random(day.seed)
        catalog = SkillCatalog.from_mapping({"language": list(day.languages)})
        self.center = CallCenter(db, catalog, clock=self.clock)
        self.reader = ServiceLevelReader(db, self.clock)
        self.estimates = estimates
        self.arrivals: list[Arrival] = []
        self.truth = Truth()
        self.seats: dict[str, Seat] = {}
        self.waiting: dict[str, Caller] = {}  # in arrival order
        self.events: list[tuple[float, int, str, str]] = []
        self.tie = 0
        self.now = 0.0

    def clock(self) -> datetime:
        """The simulated moment; each reading a microsecond on, so that what is written one
        after the other still sorts in order."""
        self.moment += timedelta(microseconds=1)
        return self.moment

    def at(self, second: float, kind: str, subject: str = "") -> None:
        self.tie += 1
        heapq.heappush(self.events, (second, self.tie, kind, subject))

    def seconds(self, stamp: str | None) -> float:
        from queues_app.ddb.clock import from_iso

        moment = from_iso(stamp)
        assert moment is not None
        return (moment - self.began).total_seconds()

    # --- the day --------------------------------------------------------------------------

    def play(self) -> Truth:
        from bench import harness
        from queues_app.figures.counters import FLUSH_SECONDS, MetricsStore
        from queues_app.monitoring.sampler import MetricsCollector

        collector = MetricsCollector(self.db, self.clock)

        self.arrivals = self.day.arrivals(self.rng)
        lines = self.day.line_settings()
        for line_id, settings in lines.items():  # before the agents who serve them
            self.center.lines.put({"line_id": line_id, **settings})
        if any(settings.get("max_wait_seconds") for settings in lines.values()):
            self.at(SWEEP_EVERY, "sweep")
        for index, arrival in enumerate(self.arrivals):
            self.at(arrival.at, "arrive", str(index))
        for shift in self.day.shifts:
            for n in range(shift.count):
                seat = self._hire(shift, n)
                self.at(shift.start, "shift_start", seat.agent_id)
                if shift.end < self.day.hours * 3600:
                    self.at(shift.end, "shift_end", seat.agent_id)
                for begins, length in shift.breaks:
                    self.at(begins, f"break:{length}", seat.agent_id)
        flushed = sampled = 0.0
        while self.events:
            second, _tie, kind, subject = heapq.heappop(self.events)
            self._idle_since(second)
            self.moment = max(self.moment, self.began + timedelta(seconds=second))
            # Every serving process writes what it counted every FLUSH_SECONDS (the estimate
            # reads those figures: a floor flushing less often would estimate from old ones).
            while flushed + FLUSH_SECONDS <= second:
                flushed += FLUSH_SECONDS
                MetricsStore(self.db).flush()
            if sampled + SAMPLE_EVERY <= second:  # the collector's occupancy sample, not the callers' cost
                sampled = second
                with harness.unmetered():
                    collector.sample_occupancy()
            self._handle(kind, subject)
        MetricsStore(self.db).flush()
        if self.waiting:
            self.truth.problems.append(f"{len(self.waiting)} callers still wait at the day's end")
        return self.truth

    def _hire(self, shift: Shift, n: int) -> Seat:
        skills = {"language": list(shift.languages)}
        agent = self.center.agents.create(f"Agent {len(self.seats) + 1}", skills, lines=shift.serving())
        seat = Seat(agent.agent_id, frozenset(shift.languages), shift)
        self.seats[agent.agent_id] = seat
        return seat

    def _handle(self, kind: str, subject: str) -> None:
        if kind == "arrive":
            self._arrive(int(subject))
        elif kind == "give_up":
            self._give_up(subject)
        elif kind == "ask_callback":
            self._ask_callback(subject)
        elif kind == "sweep":
            self._sweep()
        elif kind == "hang_up":
            self._hang_up(subject)
        elif kind == "wrapped":
            self._back(self.seats[subject])
        elif kind == "shift_start":
            self._back(self.seats[subject])
        elif kind == "shift_end":
            self._leave(self.seats[subject])
        elif kind.startswith("break:"):
            self._break(self.seats[subject], float(kind.split(":", 1)[1]))
        elif kind == "break_end":
            self._back(self.seats[subject])

    # --- callers ----------------------------------------------------------------------------

    def _arrive(self, index: int) -> None:
        from queues_app.routing.standing import standing_of

        arrival = self.arrivals[index]
        try:
            call, _ = self.center.create_call({"language": arrival.language}, line=arrival.line)
        except errors.Refused:  # the line is full, and its overflow ends there
            self.truth.refused.append((self.now, arrival.line))
            return
        caller = Caller(arrival.language, self.seconds(call.arrived_at), index=index, line=arrival.line)
        self.truth.callers[call.call_id] = caller
        if call.agent_id:
            self._taken(call)
            return
        self.waiting[call.call_id] = caller
        if arrival.patience is not None:
            self.at(self.now + arrival.patience, "give_up", call.call_id)
        if arrival.callback_after is not None:
            self.at(self.now + arrival.callback_after, "ask_callback", call.call_id)
        if self.estimates:
            standing = standing_of(self.center.line, self.reader, call)
            if standing is not None and standing.estimated_wait_seconds is not None:
                caller.estimate = standing.estimated_wait_seconds

    def _sweep(self) -> None:
        """The escalation loop's pass: callers past the line's `max_wait_seconds` overflow."""
        for call in self.center.escalator.overflow():
            caller = self.waiting.pop(call.call_id, None)
            if caller is not None and call.status == CallStatus.OVERFLOWED:
                caller.overflowed = self.seconds(call.ended_at)
        if self.now < self.day.hours * 3600 or self.waiting:
            self.at(self.now + SWEEP_EVERY, "sweep")

    def _give_up(self, call_id: str) -> None:
        caller = self.waiting.get(call_id)
        if caller is None or caller.callback_asked is not None:
            return  # answered before their patience ran out, or hung up to be called back
        del self.waiting[call_id]
        gone = self.center.abandon(call_id).call
        assert gone is not None
        caller.abandoned = self.seconds(gone.ended_at)

    def _ask_callback(self, call_id: str) -> None:
        caller = self.waiting.get(call_id)
        if caller is None:
            return  # answered, or gone, before they asked
        asked = self.center.request_callback(call_id, CALLBACK_NUMBER).call
        assert asked is not None
        caller.callback_asked = self.seconds(asked.callback_requested_at)

    def _taken(self, call) -> None:
        """A call the centre assigned (the answer of whatever action gave it); a callback's
        turn reserves the agent, and the phone system reaches the caller at once."""
        if call.state == CallStatus.CALLBACK_DUE:
            call = self.center.callback_result(call.call_id, "connected").call
        caller = self.truth.callers[call.call_id]
        self.waiting.pop(call.call_id, None)
        caller.answered, caller.agent_id = self.seconds(call.answered_at or call.assigned_at), call.agent_id
        seat = self.seats[call.agent_id]
        if seat.state != "idle":
            self.truth.problems.append(f"call {call.call_id} given to {call.agent_id}, who was {seat.state}")
        self._become(seat, "talking")
        seat.call_id = call.call_id
        self.at(self.now + self.arrivals[caller.index].handle, "hang_up", call.call_id)

    def _hang_up(self, call_id: str) -> None:
        caller = self.truth.callers[call_id]
        seat = self.seats[caller.agent_id or ""]
        then = "offline" if seat.shift_over else "wrap_up" if self.day.wrap_up_seconds else "queue"
        agent, taken = self.center.release(seat.agent_id, then, call_id=call_id)
        assert agent is not None
        caller.ended = self.seconds(agent.status_since)  # the call ended as the agent's status changed
        seat.call_id = None
        if agent.status == "offline":
            self._become(seat, "off")
        elif agent.status == "not_ready":  # the break asked for during the call
            self._on_break(seat)
        elif agent.status == "wrap_up":
            self._become(seat, "wrap_up")
            self.at(self.now + self.day.wrap_up_seconds, "wrapped", seat.agent_id)
        else:
            self._become(seat, "idle")
            if taken is not None:
                self._taken(taken)

    # --- agents -----------------------------------------------------------------------------

    def _become(self, seat: Seat, state: str) -> None:
        """The seat's new state, as of now: every change the floor makes or is answered with
        happens at the event's moment (to the microseconds of the clock's readings)."""
        if seat.state != "off" or state != "off":
            seat.seconds[seat.state] = seat.seconds.get(seat.state, 0.0) + self.now - seat.since
        seat.state, seat.since = state, self.now

    def _back(self, seat: Seat) -> None:
        """The agent becomes available: from the start of a shift, a break or a wrap-up."""
        if seat.shift_over:
            if seat.state != "off":
                self.center.log_off(seat.agent_id)
                self._become(seat, "off")
            return
        if seat.break_after is not None and seat.state == "wrap_up":
            self.center.set_not_ready(seat.agent_id, "break")
            self._on_break(seat)
            return
        self._become(seat, "idle")
        taken = self.center.make_available(seat.agent_id).call
        if taken is not None:
            self._taken(taken)

    def _break(self, seat: Seat, length: float) -> None:
        if seat.state in ("off", "break") or seat.shift_over:
            return
        seat.break_after = length
        if seat.state == "idle":
            self.center.set_not_ready(seat.agent_id, "break")
            self._on_break(seat)
        elif seat.state == "talking":
            self.center.set_not_ready(seat.agent_id, "break")  # after this call (its next status)

    def _on_break(self, seat: Seat) -> None:
        self._become(seat, "break")
        self.at(self.now + (seat.break_after or 0), "break_end", seat.agent_id)
        seat.break_after = None

    def _leave(self, seat: Seat) -> None:
        seat.shift_over = True
        if seat.state in ("idle", "break"):
            self.center.log_off(seat.agent_id)
            self._become(seat, "off")

    # --- work conservation ------------------------------------------------------------------

    def _idle_while_waiting(self) -> int:
        """Agents idle while a caller they fit waits, paired greedily (oldest caller first)."""
        idle = [s for s in self.seats.values() if s.state == "idle"]
        pairs = 0
        for caller in self.waiting.values():
            fit = next((s for s in idle if caller.language in s.languages and s.serves(caller.line)), None)
            if fit is not None:
                idle.remove(fit)
                pairs += 1
        return pairs

    def _idle_since(self, second: float) -> None:
        """Adds the agent-seconds since the last event that an agent sat idle while a caller
        they fit waited (0 on a floor that works), then moves the floor's time on."""
        if self.waiting and second > self.now:
            self.truth.idle_while_waiting += (second - self.now) * self._idle_while_waiting()
        self.now = second
