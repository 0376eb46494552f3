"""A day on the floor as a file describes it (`days/`): the callers' arrival rate per
interval, their languages, the handle time's distribution, their patience, the callers
who ask to be called back rather than hold, the lines they call on, the wrap-up, and the
agents with their shifts, breaks and the lines they serve. `bench.day` plays one on a simulated clock;
`manage.py simulate_day` plays one against a deployment, through its API, at a speed.
"""

from __future__ import annotations

import dataclasses
import json
import math
import random
from dataclasses import dataclass
from pathlib import Path

from queues_app.lines.records import LINE_ID as LINE_ID_PATTERN
from queues_app.lines.records import LINE_ID_RULE
from queues_app.text import NAME_MAX

DAYS = Path(__file__).resolve().parent / "days"
MAX_AGENTS = 1000  # the day's agents are hired one request each
MAX_RATE = 100_000  # callers an hour
MAX_SECONDS = 86_400
LINE_ID = "day"  # the day's line, when a file gives one (`line`)
CALLBACK_NUMBER = "+33612345678"  # each caller called back is dialled here


@dataclass(frozen=True)
class Shift:
    count: int
    start: float  # seconds from the day's start
    end: float
    languages: tuple[str, ...]
    breaks: tuple[tuple[float, float], ...] = ()  # (from, seconds), from the day's start
    lines: tuple[str, ...] = ()  # the lines served, the first first (priority 1, 2...); none: every line

    def serving(self) -> dict[str, dict[str, int]] | None:
        """The lines served as an agent's `lines` (each line's priority), or None: every line."""
        return {line: {"priority": n} for n, line in enumerate(self.lines, 1)} or None


@dataclass(frozen=True)
class Day:
    name: str
    start: str  # "08:00", on the centre's clock
    interval_minutes: int
    arrivals_per_hour: tuple[float, ...]  # one an interval; the last goes on to the day's end
    hours: float
    languages: dict[str, float]  # the share of callers asking for each
    handle_mean: float
    handle_spread: float | None  # lognormal's coefficient of variation; None: exponential
    patience_mean: float | None  # exponential; None: callers wait as long as it takes
    wrap_up_seconds: float
    threshold_seconds: float
    shifts: tuple[Shift, ...]
    steady: bool = False  # one rate and one staffing all day: checked against Erlang C / A
    warmup_minutes: float = 30.0
    batches: int = 10
    seed: int = 7
    missed_share: float = 0.0  # of the offers (ANSWER_TIMEOUT_SECONDS), those the agent lets ring
    # A share of the callers, still waiting this long, ask to be called back instead (and
    # are reached at once when their turn comes).
    callback_after_seconds: float | None = None
    callback_share: float = 0.0
    # The lines the day's callers call on, each with its settings (a line's, as PUT
    # /api/lines takes them: `short_abandon_seconds`, `max_wait_seconds` with its
    # `overflow`...) and, with more than one, the `share` of callers on it; none: no line.
    lines: dict[str, dict] = dataclasses.field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, hours: float | None = None) -> Day:
        raw = json.loads(path.read_text())
        start = clock_seconds(raw["start"])
        if start + (hours or raw["hours"]) * 3600 > 24 * 3600:
            raise ValueError(f"{path.name}: a day ends by midnight (its reports are the centre's day's)")
        shifts = tuple(
            Shift(
                s["count"],
                clock_seconds(s.get("from", raw["start"])) - start,
                clock_seconds(s["to"]) - start if "to" in s else math.inf,
                tuple(s.get("languages") or raw["languages"]),
                tuple((clock_seconds(at) - start, minutes * 60) for at, minutes in s.get("breaks", ())),
                tuple(s.get("lines", ())),
            )
            for s in raw["agents"]
        )
        return cls(
            name=raw["name"],
            start=raw["start"],
            interval_minutes=raw.get("interval_minutes", 15),
            arrivals_per_hour=tuple(raw["arrivals_per_hour"]),
            hours=hours or raw["hours"],
            languages=raw["languages"],
            handle_mean=raw["handle"]["mean_seconds"],
            handle_spread=raw["handle"].get("spread"),
            patience_mean=(raw.get("patience") or {}).get("mean_seconds"),
            wrap_up_seconds=raw.get("wrap_up_seconds", 0),
            threshold_seconds=raw.get("threshold_seconds", 20),
            shifts=shifts,
            steady=raw.get("steady", False),
            warmup_minutes=raw.get("warmup_minutes", 30),
            batches=raw.get("batches", 10),
            seed=raw.get("seed", 7),
            missed_share=(raw.get("offers") or {}).get("missed_share", 0.0),
            callback_after_seconds=(raw.get("callbacks") or {}).get("after_seconds"),
            callback_share=(raw.get("callbacks") or {}).get("share", 0.0),
            lines=raw["lines"] if "lines" in raw else {LINE_ID: raw["line"]} if "line" in raw else {},
        ).checked()

    def checked(self) -> Day:
        """The day, if it can be played: else a `ValueError` naming the value at fault."""
        problems = [
            (not 0 < self.hours <= 24, f"hours: above 0 and at most 24, not {self.hours}"),
            (not self.arrivals_per_hour, "arrivals_per_hour: one rate an interval at least"),
            (
                any(not 0 <= rate <= MAX_RATE for rate in self.arrivals_per_hour) or not max(self.arrivals_per_hour),
                f"arrivals_per_hour: 0 to {MAX_RATE} each, one at least above 0",
            ),
            (not 0 < self.handle_mean <= MAX_SECONDS, f"handle.mean_seconds: above 0 and at most {MAX_SECONDS}"),
            (self.patience_mean is not None and not 0 < self.patience_mean, "patience.mean_seconds: above 0"),
            (not self.languages or min(self.languages.values()) < 0, "languages: a share of 0 or more each"),
            (not 1 <= sum(s.count for s in self.shifts) <= MAX_AGENTS, f"agents: 1 to {MAX_AGENTS} in all"),
            (any(s.count < 0 for s in self.shifts), "agents[].count: 0 or more"),
            (not 0 <= self.missed_share < 1, "offers.missed_share: 0 or more and under 1"),
            (not 0 <= self.callback_share <= 1, "callbacks.share: 0 to 1"),
            *self._line_problems(),
            (
                bool(self.callback_share) and not 0 <= (self.callback_after_seconds or -1) <= MAX_SECONDS,
                f"callbacks.after_seconds: 0 to {MAX_SECONDS} when a share asks",
            ),
        ]
        for failed, problem in problems:
            if failed:
                raise ValueError(problem)
        return self

    def _line_problems(self) -> list[tuple[bool, str]]:
        lines = self.lines if isinstance(self.lines, dict) else {}
        shares = [settings.get("share", 1) for settings in lines.values() if isinstance(settings, dict)]
        served = {line for shift in self.shifts for line in shift.lines}
        return [
            (not isinstance(self.lines, dict), "lines: an object of lines, each with its settings"),
            (any(not LINE_ID_PATTERN.match(line) for line in lines), f"lines: each line's id {LINE_ID_RULE}"),
            (len(shares) < len(lines), "lines: each line's settings an object"),
            (
                any(not isinstance(s, (int, float)) or s < 0 for s in shares) or (bool(shares) and not sum(shares)),
                "lines[].share: a number of 0 or more each, one at least above 0",
            ),
            (
                any("service_level_seconds" in s for s in lines.values() if isinstance(s, dict)),
                "lines[].service_level_seconds: a day's lines share its threshold_seconds",
            ),
            (bool(served - set(lines)), f"agents[].lines: lines of the day's, not {sorted(served - set(lines))}"),
        ]

    def short_abandon_seconds(self, line_id: str) -> float:
        """Callers on the line who hang up sooner are short abandons (0: none are)."""
        return float(self.lines.get(line_id, {}).get("short_abandon_seconds", 0))

    def line_settings(self) -> dict[str, dict]:
        """Each of the day's lines as PUT /api/lines/<id> takes it (its threshold the day's)."""
        return {
            line_id: {
                "name": self.name[:NAME_MAX]
                if len(self.lines) == 1
                else f"{self.name[: NAME_MAX - len(line_id) - 3]} ({line_id})",
                "service_level_seconds": int(self.threshold_seconds),
                **{name: value for name, value in settings.items() if name != "share"},
            }
            for line_id, settings in self.lines.items()
        }

    def line_of(self, rng: random.Random) -> str | None:
        """A caller's line: drawn by the lines' shares when there are several (the callers of
        days with one line or none are drawn as they were)."""
        if len(self.lines) < 2:
            return next(iter(self.lines), None)
        return rng.choices(list(self.lines), [settings.get("share", 1) for settings in self.lines.values()])[0]

    def rate(self, second: float) -> float:
        """Callers a second at `second` from the day's start."""
        index = int(second // (self.interval_minutes * 60))
        return self.arrivals_per_hour[min(index, len(self.arrivals_per_hour) - 1)] / 3600

    def staffed(self, second: float) -> int:
        """Agents on shift and not on a scheduled break at `second` (a break may start late,
        after a call)."""
        return sum(
            s.count
            for s in self.shifts
            if s.start <= second < s.end and not any(at <= second < at + length for at, length in s.breaks)
        )

    def handle(self, rng: random.Random) -> float:
        if self.handle_spread is None:
            return rng.expovariate(1 / self.handle_mean)
        sigma2 = math.log(1 + self.handle_spread**2)
        return rng.lognormvariate(math.log(self.handle_mean) - sigma2 / 2, math.sqrt(sigma2))

    def arrivals(self, rng: random.Random) -> list[Arrival]:
        """The callers: arrival moments of a Poisson process whose rate changes by interval
        (thinning against the day's highest rate), each with its language, handle time and
        patience drawn at once, so that an ideal queue fed the same callers (`erlang.fifo`)
        lives the same day whatever order the floor serves them in."""
        top, moment = max(self.arrivals_per_hour) / 3600, 0.0
        callers: list[Arrival] = []
        languages, shares = list(self.languages), list(self.languages.values())
        while True:
            moment += rng.expovariate(top)
            if moment >= self.hours * 3600:
                return callers
            if rng.random() * top < self.rate(moment):
                patience = rng.expovariate(1 / self.patience_mean) if self.patience_mean else None
                arrival = Arrival(moment, rng.choices(languages, shares)[0], self.handle(rng), patience)
                arrival = dataclasses.replace(arrival, line=self.line_of(rng))
                # Drawn only on a day with callbacks: the other days' callers stay as they were.
                if self.callback_share and rng.random() < self.callback_share:
                    arrival = dataclasses.replace(arrival, callback_after=self.callback_after_seconds)
                callers.append(arrival)


@dataclass(frozen=True)
class Arrival:
    at: float  # seconds from the day's start
    language: str
    handle: float  # seconds on the call once answered
    patience: float | None  # seconds they will wait before giving up
    callback_after: float | None = None  # seconds they will hold before asking to be called back
    line: str | None = None  # the line they call on (None: the centre's main line)


def clock_seconds(text: str) -> float:
    hours, minutes = text.split(":")
    return int(hours) * 3600 + int(minutes) * 60


def find(name: str, hours: float | None = None) -> Day:
    """The day named (`weekday`: days/weekday.json) or in the file at `name`; a
    `ValueError` saying which days there are, or what is wrong with the file."""
    path = DAYS / f"{name}.json" if "/" not in name and not name.endswith(".json") else Path(name)
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in DAYS.glob("*.json")))
        raise ValueError(f"no day {name!r}: one of {known}, or a day file's path")
    try:
        return Day.load(path, hours)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a field missing, of a wrong kind, too big
        raise ValueError(f"{path}: not a day file ({type(exc).__name__}: {exc})") from exc
