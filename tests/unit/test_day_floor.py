"""The theory a day on the floor is held to (`bench.erlang`): the formulas against known
values and each other; and the day's checks (`bench.day`, `bench.floor`) failing when
the figures are outside the theory's interval or an agent sits idle while a caller they
fit waits. A day played on DynamoDB Local: tests/integration/test_day.py."""

import dataclasses
import json
import math
import random
import re
from pathlib import Path

import pytest

from bench import erlang
from bench.day import against_the_ideal_queue, against_theory
from bench.floor import Caller, Floor, Seat, Truth
from queues_app.simulation.day import Arrival, Day, Shift

SHORT = Path(__file__).resolve().parents[1] / "fixtures" / "days" / "short.json"


def test_erlang_c_in_closed_form_and_from_the_chain():
    assert erlang.erlang_c(2, 1.0) == pytest.approx(1 / 3)  # Erlang B(2, 1) = 0.2; C = 0.2 / (1 - 0.5 x 0.8)
    c = erlang.predict(10, 8.5 / 240, 240, 20)
    assert c.wait_probability == pytest.approx(erlang.erlang_c(10, 8.5))
    assert c.service_level == pytest.approx(1 - c.wait_probability * math.exp(-(10 / 240 - 8.5 / 240) * 20))
    assert c.asa == c.mean_wait == pytest.approx(c.wait_probability / (10 / 240 - 8.5 / 240))
    nearly = erlang.predict(10, 8.5 / 240, 240, 20, patience=1e9)  # callers who (almost) never give up
    assert nearly.wait_probability == pytest.approx(c.wait_probability, rel=1e-3)
    assert nearly.mean_wait == pytest.approx(c.mean_wait, rel=1e-3)
    with pytest.raises(ValueError, match="grows without end"):
        erlang.predict(10, 10 / 240, 240, 20)  # one erlang an agent: only Erlang A has an answer


def test_erlang_a_balances_what_comes_in_with_what_is_served_or_gives_up():
    rate, handle, patience, agents = 150 / 3600, 240.0, 180.0, 10
    a = erlang.predict(agents, rate, handle, 20, patience)
    chain = erlang._chain(agents, rate, 1 / handle, 1 / patience)
    busy = sum(min(n, agents) * p for n, p in enumerate(chain))
    assert rate * (1 - a.abandon_probability) == pytest.approx(busy / handle)
    assert 0 < a.abandon_probability < a.wait_probability < 1


def test_batch_means_give_students_interval():
    mean, half = erlang.batch_means([1.0, 2.0, 3.0])
    assert mean == 2.0 and half == pytest.approx(4.303 * 1.0 / math.sqrt(3))
    with pytest.raises(ValueError):
        erlang.batch_means([1.0])


def test_an_agent_idle_while_a_fitting_caller_waits_is_counted():
    day = dataclasses.replace(Day.load(SHORT), languages={"English": 0.5, "Spanish": 0.5})
    floor = Floor.__new__(Floor)
    floor.now, floor.truth = 0.0, Truth()
    floor.seats = {"a": Seat("a", frozenset({"English"}), Shift(1, 0, math.inf, ("English",)), state="idle")}
    floor.waiting = {"s": Caller("Spanish", 0.0)}
    floor._idle_since(10.0)
    assert floor.truth.idle_while_waiting == 0  # nobody who fits is idle
    floor.waiting["e"] = Caller("English", 5.0)
    floor._idle_since(25.0)
    assert floor.truth.idle_while_waiting == 15.0
    assert day.rate(0) == 60 / 3600


def test_an_agent_idle_while_a_caller_on_a_line_they_do_not_serve_waits_is_not_counted():
    floor = Floor.__new__(Floor)
    floor.now, floor.truth = 0.0, Truth()
    support = Shift(1, 0, math.inf, ("English",), lines=("support",))
    floor.seats = {"a": Seat("a", frozenset({"English"}), support, state="idle")}
    floor.waiting = {"s": Caller("English", 0.0, line="sales")}
    floor._idle_since(10.0)
    assert floor.truth.idle_while_waiting == 0  # the one idle agent serves support only
    floor.waiting["t"] = Caller("English", 5.0, line="support")
    floor._idle_since(25.0)
    assert floor.truth.idle_while_waiting == 15.0


def test_a_days_callers_are_spread_over_its_lines_by_share_and_its_agents_serve_theirs(tmp_path):
    day = Day.load(SHORT)
    assert support_and_sales(day) and day.shifts[1].serving() == {"sales": {"priority": 1}, "support": {"priority": 2}}
    assert day.shifts[2].serving() is None  # every line
    arrivals = day.arrivals(random.Random(day.seed))
    on_sales = sum(a.line == "sales" for a in arrivals) / len(arrivals)
    assert {a.line for a in arrivals} == {"support", "sales"} and 0.15 < on_sales < 0.45
    settings = day.line_settings()
    assert settings["sales"] == {
        "name": "A short mixed day (sales)",
        "service_level_seconds": 20,
        "short_abandon_seconds": 10,
    }
    assert day.short_abandon_seconds("support") == 5 and day.short_abandon_seconds("nowhere") == 0
    # No line: the centre's main line. One line, as the older files give it (`line`): `day`,
    # every caller on it and none drawn, so the day's callers are those it had before.
    steady = Day.load(SHORT.with_name("steady.json"))
    assert steady.lines == {} and {a.line for a in steady.arrivals(random.Random(1))} == {None}
    raw = json.loads(SHORT.read_text())
    del raw["lines"], raw["agents"][0]["lines"], raw["agents"][1]["lines"]
    (tmp_path / "one.json").write_text(json.dumps({**raw, "line": {"short_abandon_seconds": 5}}))
    one, none = Day.load(tmp_path / "one.json"), dataclasses.replace(Day.load(tmp_path / "one.json"), lines={})
    assert one.lines == {"day": {"short_abandon_seconds": 5}}
    assert one.line_settings()["day"]["name"] == "A short mixed day"
    drawn = [(a.at, a.language, a.handle) for a in one.arrivals(random.Random(3))]
    assert drawn == [(a.at, a.language, a.handle) for a in none.arrivals(random.Random(3))]
    assert {a.line for a in one.arrivals(random.Random(3))} == {"day"}


def support_and_sales(day: Day) -> bool:
    return list(day.lines) == ["support", "sales"]


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"lines": {"support": {"share": -1}}}, "lines[].share"),
        ({"lines": {"support": {"service_level_seconds": 30}}}, "share its threshold_seconds"),
        ({"lines": {"support": 5}}, "each line's settings an object"),
        ({"lines": ["support"]}, "lines: an object"),
        ({"lines": {"x" * 200_000: {}}}, "lines: each line's id 1 to 40 lowercase letters"),
        ({"shifts": (Shift(1, 0, 60, ("English",), lines=("billing",)),)}, "agents[].lines: lines of the day's"),
    ],
)
def test_a_day_whose_lines_cannot_be_played_says_which(change, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        dataclasses.replace(Day.load(SHORT), **change).checked()


def test_figures_outside_the_theorys_interval_are_failures():
    day = dataclasses.replace(Day.load(SHORT), steady=True, warmup_minutes=0, batches=2, patience_mean=None, hours=1)
    day = dataclasses.replace(day, arrivals_per_hour=(60.0,), shifts=(Shift(5, 0, math.inf, ("English",)),))
    floor_truth = Truth()
    for n in range(60):  # every caller waited ten minutes: Erlang C says about 2 s on average
        floor_truth.callers[str(n)] = Caller("English", n * 60.0, answered=n * 60.0 + 600 + (n % 2))
    rows = {row["figure"]: row for row in against_theory(day, floor_truth)}
    assert not rows["wait probability"]["holds"] and not rows["mean wait (s)"]["holds"]
    assert rows["abandon probability"]["holds"]


def test_the_ideal_queue_serves_first_come_first_served_and_loses_the_impatient():
    callers = [(0.0, 10.0, None), (1.0, 5.0, None), (2.0, 1.0, 3.0), (3.0, 1.0, None), (20.0, 1.0, None)]
    # One agent: the first at once; the second waits until 10; the third gives up at 5;
    # the fourth waits from 3 until the second is done at 15; the fifth finds the agent free.
    assert erlang.fifo(callers, 1) == [(0.0, True), (9.0, True), (3.0, False), (12.0, True), (0.0, True)]
    assert [wait for wait, _ in erlang.fifo(callers, 2)] == [0.0, 0.0, 3.0, 3.0, 0.0]


def test_a_caller_who_waited_otherwise_than_in_the_ideal_queue_fails_the_day():
    day = dataclasses.replace(Day.load(SHORT), steady=True, patience_mean=None)
    floor = Floor.__new__(Floor)
    floor.arrivals = [Arrival(0.0, "English", 60.0, None), Arrival(1.0, "English", 60.0, None)]
    day = dataclasses.replace(day, shifts=(Shift(1, 0, math.inf, ("English",)),))
    truth = Truth()
    truth.callers = {
        "a": Caller("English", 0.0, answered=0.0, index=0),
        "b": Caller("English", 1.0, answered=60.0, index=1),
    }
    assert against_the_ideal_queue(day, floor, truth) == {"callers": 2, "differ": 0} and not truth.problems
    truth.callers["b"].answered = 75.0  # an agent free at 60 s took the second caller only at 75 s
    assert against_the_ideal_queue(day, floor, truth)["differ"] == 1
    assert "did not live as in the ideal queue" in truth.problems[0]
