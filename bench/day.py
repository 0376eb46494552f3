"""A day on the floor, checked against queueing theory and against itself.

    .venv/bin/python -m bench.day [DAY.json ...] [--hours H] [--json] [--endpoint URL] [--smoke]

Each day file (default: every one in queues_app/simulation/days/) is played on fresh tables of DynamoDB
Local by `bench.floor`: callers arriving at random by interval, agents with shifts,
breaks and wrap-up, callers who give up, on the domain every API request runs and a
simulated clock (timers are not scaled: the day's seconds are the centre's). Then:

- **against theory** (a `steady` day: one arrival rate, one staffing, exponential handle
  times): every caller's wait must equal, to 0.01 s, the wait they would have had in the
  ideal queue Erlang C (A, with patience) describes fed the same callers (`erlang.fifo`:
  first come first served, no agent idle while a caller waits); and after the warm-up the
  callers are cut into consecutive batches by arrival, whose share who waited, mean wait,
  share answered within the threshold and share who gave up give a 95% interval (batch
  means) shown beside Erlang's prediction (shown, not checked: with a correct queue the
  mean wait's interval leaves the prediction out 20 to 30 times in 100, docs/benchmarks.md);
- **work conservation**: the agent-seconds an agent sat idle while a caller they fit
  waited, from what each action answered (0 is the goal, and checked);
- **against itself**: the interval report (`GET /api/reports/intervals`' figures) and
  the agents' day report equal, interval by interval, what the floor saw: offered,
  answered, answered within the threshold, abandoned, the waits' and handle times' sums,
  callbacks asked for and connected; each agent's calls handled and seconds idle, on calls,
  in wrap-up and not ready (so occupancy); and at the day's end, today's figures on the wallboard
  ("All calls") and in /metrics (`window="today"`: answered, abandoned, service level,
  answer speed, handle time);
- the estimated wait a caller was given on arrival, scored against the wait they had
  (as `bench.estimate` scores it);
- and the day's DynamoDB requests and capacity per call.

`--hours` shortens every day (the suite plays a short one); `--smoke`: two hours each.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path

from bench import erlang, harness
from bench.floor import Caller, Floor, Truth
from queues_app.simulation.day import DAYS, Day, clock_seconds

SMOKE = {"hours": 2.0}
FIGURES = (
    "offered",
    "answered",
    "answered_within",
    "abandoned",
    "wait_sum",
    "handled",
    "handle_sum",
    "callbacks_requested",
    "callbacks_connected",
    "callback_connect_sum",
    "overflowed",
    "refused",
)
# Each line's own figures (a day with lines): short abandons counted apart there.
LINE_FIGURES = ("offered", "answered", "answered_within", "abandoned", "short_abandoned", "overflowed")


@dataclass
class Played:
    day: Day
    truth: Truth
    requests_per_call: float = 0.0
    capacity_per_call: float = 0.0
    theory: list[dict] = field(default_factory=list)  # one row a figure: measured, its interval, predicted
    intervals: list[dict] = field(default_factory=list)  # the day's intervals: measured and predicted
    estimate: dict = field(default_factory=dict)
    twin: dict = field(default_factory=dict)  # the callers, and those whose wait differs from the ideal queue's
    seconds: float = 0.0

    @property
    def problems(self) -> list[str]:
        return [f"{self.day.name}: {problem}" for problem in self.truth.problems]


@dataclass
class Run:
    days: list[Played] = field(default_factory=list)

    @property
    def problems(self) -> list[str]:
        return [problem for played in self.days for problem in played.problems]


def play(endpoint: str, day: Day) -> Played:
    from django.test import override_settings

    from queues_app.ddb.clock import centre_day_start, now

    began = centre_day_start(now()) + timedelta(seconds=clock_seconds(day.start))
    with (
        override_settings(SERVICE_LEVEL_SECONDS=day.threshold_seconds),
        harness.fresh_tables(endpoint, "day") as db,
        harness.metered() as seen,
    ):
        floor = Floor(day, db, began)
        truth = floor.play()
        with harness.unmetered():
            check_figures(floor)
    played = Played(day, truth, seconds=seen.seconds)
    calls = len(truth.callers) or 1
    played.requests_per_call = round(seen.requests / calls, 1)
    played.capacity_per_call = round(seen.capacity / calls, 1)
    if truth.idle_while_waiting > 0.5:
        truth.problems.append(f"agents sat idle {truth.idle_while_waiting:.0f} agent-seconds while a caller waited")
    played.intervals = by_interval(day, truth)
    if day.steady:
        played.theory = against_theory(day, truth)
        played.twin = against_the_ideal_queue(day, floor, truth)
    played.estimate = estimate_errors(truth)
    return played


def against_the_ideal_queue(day: Day, floor: Floor, truth: Truth) -> dict:
    """Every caller's wait beside the wait they would have had in the ideal queue
    (`erlang.fifo`) fed the same callers: equal, to a hundredth of a second, on a floor
    that routes as the theory assumes. Exact where the interval around Erlang is not: no
    sampling noise between the two."""
    agents = sum(s.count for s in day.shifts)
    ideal = erlang.fifo([(a.at, a.handle, a.patience) for a in floor.arrivals], agents)
    differ = []
    for call_id, caller in truth.callers.items():
        wait, answered = ideal[caller.index]
        if (caller.answered is not None) != answered or abs((caller.waited or 0.0) - wait) > 0.01:
            differ.append(f"{call_id} waited {caller.waited} s, the ideal queue {wait:.3f} s")
    if differ:
        truth.problems.append(f"{len(differ)} callers did not live as in the ideal queue, e.g. {differ[0]}")
    return {"callers": len(truth.callers), "differ": len(differ)}


# --- against theory --------------------------------------------------------------------------


def against_theory(day: Day, truth: Truth) -> list[dict]:
    """Each figure's batch means over the steady stretch against Erlang C (or A)."""
    agents = sum(s.count for s in day.shifts)
    rate = day.rate(0)
    model = "Erlang A" if day.patience_mean else "Erlang C"
    predicted = erlang.predict(agents, rate, day.handle_mean, day.threshold_seconds, day.patience_mean)
    first, last = day.warmup_minutes * 60, day.hours * 3600
    length = (last - first) / day.batches
    batches: list[list[Caller]] = [[] for _ in range(day.batches)]
    for caller in truth.callers.values():
        if first <= caller.arrived < last:
            batches[min(int((caller.arrived - first) / length), day.batches - 1)].append(caller)
    measures = {
        "wait probability": (predicted.wait_probability, lambda c: (c.waited or 0) > 0.001),
        "mean wait (s)": (predicted.mean_wait, lambda c: c.waited or 0.0),
        "abandon probability": (predicted.abandon_probability, lambda c: c.abandoned is not None),
    }
    if predicted.service_level is not None:
        measures["service level"] = (
            predicted.service_level,
            lambda c: c.answered is not None and (c.waited or 0) <= day.threshold_seconds,
        )
    rows = []
    for name, (expected, of) in measures.items():
        mean, half = erlang.batch_means([statistics.fmean(float(of(c)) for c in batch) for batch in batches])
        rows.append(
            {
                "figure": name,
                "model": model,
                "measured": round(mean, 4),
                "half_width": round(half, 4),
                "predicted": round(expected, 4),
                "holds": abs(mean - expected) <= half + 1e-9,  # a figure that cannot vary (0 gave up) holds
            }
        )
    return rows


def by_interval(day: Day, truth: Truth) -> list[dict]:
    """The day's intervals as the floor saw them, beside what Erlang C (or A) predicts for
    the interval's rate and the agents on shift and not on a break at its middle, every
    agent taken as fitting every caller (an interval is too short to be steady, and the
    languages split the agents: shown, not checked)."""
    step = day.interval_minutes * 60
    rows = []
    for n in range(int(day.hours * 3600 // step)):
        start, end = n * step, (n + 1) * step
        arrived = [c for c in truth.callers.values() if start <= c.arrived < end]
        staffed = day.staffed((start + end) / 2)
        row: dict = {
            "start": start,
            "calls": len(arrived),
            "agents": staffed,
            "waited": _share(arrived, lambda c: (c.waited or 0) > 0.001),
            "mean_wait": round(statistics.fmean(c.waited or 0.0 for c in arrived), 1) if arrived else None,
            "abandoned": _share(arrived, lambda c: c.abandoned is not None),
        }
        try:
            busy = day.handle_mean + day.wrap_up_seconds  # an agent takes the next call after the wrap-up
            p = erlang.predict(staffed, day.rate(start), busy, day.threshold_seconds, day.patience_mean)
            row.update(predicted_waited=round(p.wait_probability, 3), predicted_mean_wait=round(p.mean_wait, 1))
        except ValueError:
            row.update(predicted_waited=None, predicted_mean_wait=None)  # no agents, or a line that grows
        rows.append(row)
    return rows


def _share(callers: list[Caller], test) -> float | None:
    return round(sum(1 for c in callers if test(c)) / len(callers), 3) if callers else None


def estimate_errors(truth: Truth) -> dict:
    from bench.estimate import Recorded, errors_of

    recorded = Recorded(waited=sum(1 for c in truth.callers.values() if (c.waited or 0) > 0.001))
    for call_id, caller in truth.callers.items():
        if caller.estimate is not None:
            recorded.estimated[call_id] = caller.estimate
        if caller.answered is not None and (caller.waited or 0) > 0:
            recorded.actual[call_id] = caller.waited or 0.0
    return errors_of(recorded)


# --- against itself ----------------------------------------------------------------------------


def check_figures(floor: Floor) -> None:
    """The interval report, the agents' day report, and today's figures on the wallboard
    and /metrics at the day's end, against the floor's own record."""
    from queues_app.ddb.clock import centre_date
    from queues_app.figures.intervals import IntervalReader

    db, day, began, truth = floor.db, floor.day, floor.began, floor.truth
    report = IntervalReader(db).day(date.fromisoformat(centre_date(began)), day.interval_minutes)
    step = day.interval_minutes * 60
    offset = (began - report.intervals[0].start).total_seconds()
    expected: dict[int, dict[str, float]] = {}

    def add(second: float | None, **values: float) -> None:
        if second is None:
            return
        slot = expected.setdefault(int((second + offset) // step), dict.fromkeys(FIGURES, 0.0))
        for name, value in values.items():
            slot[name] += value

    for second, _line in truth.refused:
        add(second, refused=1)
    for caller in truth.callers.values():
        add(caller.arrived, offered=1)
        add(caller.overflowed, overflowed=1)
        if caller.answered is not None:
            waited = caller.answered - caller.arrived
            add(caller.answered, answered=1, wait_sum=waited, answered_within=waited <= day.threshold_seconds)
        if caller.abandoned is not None:
            add(caller.abandoned, abandoned=1)
        if caller.callback_asked is not None:
            add(caller.callback_asked, callbacks_requested=1)
            if caller.answered is not None:
                reached = caller.answered - caller.callback_asked
                add(caller.answered, callbacks_connected=1, callback_connect_sum=reached)
        if caller.ended is not None and caller.answered is not None:
            add(caller.ended, handled=1, handle_sum=caller.ended - caller.answered)
    for index, interval in enumerate(report.intervals):
        figures = interval.overall.figures
        measured = {name: float(getattr(figures, name)) for name in FIGURES}
        want = expected.get(index, dict.fromkeys(FIGURES, 0.0))
        for name in FIGURES:
            tolerance = 0.01 * max(1.0, want["answered"] + want["handled"]) if name.endswith("_sum") else 0.0
            if abs(measured[name] - want[name]) > tolerance:
                truth.problems.append(
                    f"interval {interval.start:%H:%M}: {name} {measured[name]:g} in the report, {want[name]:g} seen"
                )
    for line_id in day.lines:
        _check_line(floor, line_id, offset, step)
    _check_agents(db, began, truth)
    _check_agent_states(floor)
    _check_today(floor)


def _check_line(floor: Floor, line_id: str, offset: float, step: float) -> None:
    """A line's figures, interval by interval, as its own promise counts them: a caller on
    it who hung up sooner than its `short_abandon_seconds` is a short abandon, not an
    abandon; those past its limits overflowed."""
    from queues_app.ddb.clock import centre_date
    from queues_app.figures.intervals import IntervalReader

    truth, short = floor.truth, floor.day.short_abandon_seconds(line_id)
    report = IntervalReader(floor.db).day(
        date.fromisoformat(centre_date(floor.began)), floor.day.interval_minutes, by_line=True
    )
    expected: dict[int, dict[str, float]] = {}

    def add(second: float | None, name: str, value: float = 1.0) -> None:
        if second is not None:
            slot = expected.setdefault(int((second + offset) // step), dict.fromkeys(LINE_FIGURES, 0.0))
            slot[name] += value

    for caller in (c for c in truth.callers.values() if c.line == line_id):
        add(caller.arrived, "offered")
        add(caller.overflowed, "overflowed")
        if caller.answered is not None:
            add(caller.answered, "answered")
            add(
                caller.answered,
                "answered_within",
                float(caller.answered - caller.arrived <= floor.day.threshold_seconds),
            )
        if caller.abandoned is not None:
            add(caller.abandoned, "short_abandoned" if (caller.waited or 0.0) < short else "abandoned")
    for index, interval in enumerate(report.intervals):
        shown = interval.by_combination.get(line_id)
        want = expected.get(index, dict.fromkeys(LINE_FIGURES, 0.0))
        for name in LINE_FIGURES:
            have = float(getattr(shown.figures, name)) if shown else 0.0
            if have != want[name]:
                truth.problems.append(
                    f"interval {interval.start:%H:%M}, line {line_id}: {name} {have:g} in the report, "
                    f"{want[name]:g} seen"
                )


def _check_today(floor: Floor) -> None:
    """The wallboard's "All calls" today and /metrics' `window="today"` at the day's end."""
    from queues_app.figures.service_level import ServiceLevelReader
    from queues_app.monitoring.overview import Dashboard
    from queues_app.monitoring.prometheus import ServiceLevelCollector
    from queues_app.monitoring.wallboard import read_board

    truth, threshold = floor.truth, floor.day.threshold_seconds
    left = [c for c in truth.callers.values() if c.answered is not None or c.abandoned is not None]
    answered = [c for c in left if c.answered is not None]
    ended = [c for c in answered if c.ended is not None]
    within = sum(1 for c in answered if (c.waited or 0) <= threshold)
    seen = {
        "offered": len(truth.callers),
        "answered": len(answered),
        "answered_within": within,
        "abandoned": len(left) - len(answered),
        "wait_sum": sum(c.waited or 0 for c in answered),
        "handled": len(ended),
        "handle_sum": sum((c.ended or 0) - (c.answered or 0) for c in ended),
    }
    today = read_board(Dashboard(floor.center, clock=floor.clock)).total.today
    for name, want in seen.items():
        tolerance = 0.01 * max(1, len(answered) + len(ended)) if name.endswith("_sum") else 0.0
        if abs(float(getattr(today, name)) - want) > tolerance:
            truth.problems.append(f"today: {name} {getattr(today, name):g} on the wallboard, {want:g} seen")
    metrics = {
        sample.name: sample.value
        for family in ServiceLevelCollector(ServiceLevelReader(floor.db, floor.clock)).collect()
        for sample in family.samples
        if sample.labels.get("window") == "today" and sample.labels.get("combination") == "all"
    }
    shown = {
        "switchboard_calls_answered": seen["answered"],
        "switchboard_calls_abandoned": seen["abandoned"],
        "switchboard_calls_service_level_ratio": within / len(left) if left else None,
        "switchboard_calls_answer_speed_seconds": seen["wait_sum"] / len(answered) if answered else None,
        "switchboard_calls_handle_time_seconds": seen["handle_sum"] / len(ended) if ended else None,
    }
    for name, want in shown.items():
        have = metrics.get(name)
        tolerance = 0.0001 if name.endswith("_ratio") else 0.01  # ratios are shown to 4 decimals
        if (have is None) != (want is None) or (want is not None and abs((have or 0) - want) > tolerance):
            truth.problems.append(f"today: {name} {have} in /metrics, {want} seen")


def _check_agents(db, began: datetime, truth: Truth) -> None:
    """Each agent's calls answered and handled, and seconds attending, in the agents' report."""
    from queues_app.ddb.clock import centre_date
    from queues_app.figures.agent_days import AgentDayReader

    seen: dict[str, dict[str, float]] = {}
    for caller in truth.callers.values():
        if caller.agent_id and caller.answered is not None and caller.ended is not None:
            mine = seen.setdefault(caller.agent_id, {"answered": 0, "handled": 0, "sec_attending": 0.0})
            mine["answered"] += 1
            mine["handled"] += 1
            mine["sec_attending"] += caller.ended - caller.answered
    reported = AgentDayReader(db).figures(date.fromisoformat(centre_date(began)))
    for agent_id in sorted(set(seen) | set(reported)):
        want, have = seen.get(agent_id, {}), reported.get(agent_id, {})
        for name in ("answered", "handled", "sec_attending"):
            tolerance = 0.01 * max(1.0, want.get("handled", 0)) if name.startswith("sec") else 0.0
            if abs(have.get(name, 0.0) - want.get(name, 0.0)) > tolerance:
                truth.problems.append(
                    f"agent {agent_id}: {name} {have.get(name, 0.0):g} in the agents' report, "
                    f"{want.get(name, 0):g} seen"
                )


# The floor's states of a seat, and the agents' report's statuses each is.
STATE_STATUSES = {
    "idle": ("available", "queued"),
    "talking": ("ringing", "attending"),
    "wrap_up": ("wrap_up",),
    "break": ("not_ready",),
}


def _check_agent_states(floor: Floor) -> None:
    """Each agent's seconds idle, on calls, in wrap-up and not ready in the agents' report,
    against the stretches the floor saw end (what is still open at the day's end is not
    stored yet); so its occupancy too."""
    from queues_app.ddb.clock import centre_date
    from queues_app.figures.agent_days import AgentDayReader

    reported = AgentDayReader(floor.db).figures(date.fromisoformat(centre_date(floor.began)))
    for agent_id, seat in floor.seats.items():
        have = reported.get(agent_id, {})
        for state, statuses in STATE_STATUSES.items():
            stored = sum(have.get(f"sec_{status}", 0.0) for status in statuses)
            seen = seat.seconds.get(state, 0.0)
            if abs(stored - seen) > 0.01 * max(1.0, have.get("handled", 0.0)):
                floor.truth.problems.append(
                    f"agent {agent_id}: {stored:g} s {'/'.join(statuses)} in the agents' report, "
                    f"{seen:g} s seen {state}"
                )


# --- the report ----------------------------------------------------------------------------


def report(run: Run, where: str) -> str:
    lines = [f"A day on the floor ({where}):"]
    for played in run.days:
        day, truth = played.day, played.truth
        callers = list(truth.callers.values())
        lines += [
            "",
            f"{day.name}: {len(callers)} callers in {day.hours:g} h, {sum(s.count for s in day.shifts)} agents; "
            f"played in {played.seconds:.0f} s",
            f"  work conservation: {truth.idle_while_waiting:.1f} agent-seconds idle while a fitting caller waited",
            f"  DynamoDB per call: {played.requests_per_call} requests, {played.capacity_per_call} capacity units",
            f"  estimated wait vs actual (waited 30 s or more): {played.estimate}",
        ]
        for line_id, gone in line_ends(day, truth).items():
            lines.append(
                f"  line {line_id}: {gone['offered']} offered, {gone['short_abandoned']} short abandons (hung up "
                f"within {gone['short_abandon_seconds']:g} s), {gone['overflowed']} overflowed, "
                f"{gone['turned_away']} turned away (full)"
            )
        if day.callback_share:
            asked = callbacks(truth)
            lines.append(
                f"  callbacks: {asked['asked']} callers asked after {day.callback_after_seconds:g} s on hold, "
                f"{asked['reached']} reached, {asked['mean_seconds_to_reach']} s from the request on average"
            )
        if played.twin:
            lines.append(
                f"  the ideal queue fed the same callers: {played.twin['callers'] - played.twin['differ']} of "
                f"{played.twin['callers']} callers waited as there (to 0.01 s)"
            )
        if played.theory:
            lines.append(f"  {'figure':<22}{'measured':>10}{'± 95%':>9}{'predicted':>11}  model")
            for row in played.theory:
                mark = "" if row["holds"] else "  OUTSIDE"
                lines.append(
                    f"  {row['figure']:<22}{row['measured']:>10}{row['half_width']:>9}{row['predicted']:>11}  "
                    f"{row['model']}{mark}"
                )
        else:
            lines.append(
                f"  {'interval':<10}{'calls':>6}{'agents':>7}{'waited':>8}{'(theory)':>9}{'wait s':>8}"
                f"{'(theory)':>9}{'gave up':>8}"
            )
            for row in played.intervals:
                start = (
                    datetime.combine(datetime.min, time()) + timedelta(seconds=clock_seconds(day.start) + row["start"])
                ).strftime("%H:%M")
                lines.append(
                    f"  {start:<10}{row['calls']:>6}{row['agents']:>7}{_cell(row['waited']):>8}"
                    f"{_cell(row['predicted_waited']):>9}{_cell(row['mean_wait']):>8}"
                    f"{_cell(row['predicted_mean_wait']):>9}{_cell(row['abandoned']):>8}"
                )
    lines += harness.checks(run.problems)
    return "\n".join(lines)


def line_ends(day: Day, truth: Truth) -> dict[str, dict]:
    """Each of the day's lines: the callers offered on it, those who hung up sooner than its
    short abandon, those who overflowed, and those it turned away (full)."""
    ends = {}
    for line_id in day.lines:
        short = day.short_abandon_seconds(line_id)
        callers = [c for c in truth.callers.values() if c.line == line_id]
        ends[line_id] = {
            "offered": len(callers),
            "short_abandon_seconds": short,
            "short_abandoned": sum(c.abandoned is not None and (c.waited or 0.0) < short for c in callers),
            "overflowed": sum(c.overflowed is not None for c in callers),
            "turned_away": sum(line == line_id for _second, line in truth.refused),
        }
    return ends


def callbacks(truth: Truth) -> dict:
    """The callers who asked to be called back, those reached, and how long after asking."""
    asked = [c for c in truth.callers.values() if c.callback_asked is not None]
    reached = [(c.answered or 0.0) - (c.callback_asked or 0.0) for c in asked if c.answered is not None]
    mean = round(statistics.fmean(reached), 1) if reached else None
    return {"asked": len(asked), "reached": len(reached), "mean_seconds_to_reach": mean}


def _cell(value) -> str:
    return "–" if value is None else f"{value:g}"


def as_json(run: Run) -> dict:
    return {
        "days": [
            {
                "name": p.day.name,
                "callers": len(p.truth.callers),
                "idle_while_waiting": round(p.truth.idle_while_waiting, 2),
                "requests_per_call": p.requests_per_call,
                "capacity_per_call": p.capacity_per_call,
                "theory": p.theory,
                "intervals": p.intervals,
                "estimate": p.estimate,
                "twin": p.twin,
                "callbacks": callbacks(p.truth),
                "lines": line_ends(p.day, p.truth),
                "seconds": round(p.seconds, 1),
            }
            for p in run.days
        ]
    }


def main(argv: list[str] | None = None) -> int:
    parser = harness.parser(__doc__ or "", "day", warmup=0)
    parser.add_argument(
        "days", nargs="*", type=Path, help="day files (default: every one in queues_app/simulation/days/)"
    )
    parser.add_argument(
        "--hours", type=harness.positive(float), default=None, help="play only the first H hours of each day"
    )
    args = harness.parse(parser, argv, smoke=SMOKE)
    files = args.days or sorted(DAYS.glob("*.json"))
    days = []
    for path in files:
        try:
            days.append(Day.load(path, args.hours))
        except (OSError, ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
            parser.error(f"{path}: {exc if not isinstance(exc, KeyError) else f'no {exc} given'}")
    run = Run()

    def everything(endpoint: str) -> Run:
        for day in days:
            harness.progress(f"{day.name}: {day.hours:g} h")
            run.days.append(play(endpoint, day))
        return run

    return harness.execute(args, everything, report=report, as_json=as_json)


if __name__ == "__main__":
    sys.exit(main())
