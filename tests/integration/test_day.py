"""A day on the floor on DynamoDB Local: `python -m bench.day` on a steady stretch (checked
against Erlang A), and the suite's short day (callers who give up, ask to be called back,
hang up too soon to count or overflow on their line, two lines and agents who serve one,
both or every line, shifts and breaks) whose figures
reconcile with what the floor saw, then fail to once one caller is taken out of its record."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench import harness
from bench.day import by_interval, callbacks, check_figures, line_ends
from bench.floor import Floor, Truth
from queues_app.simulation.day import Day

pytestmark = pytest.mark.integration

SHORT = Path(__file__).resolve().parents[1] / "fixtures" / "days" / "short.json"
STEADY = SHORT.with_name("steady.json")
BEGAN = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)


def test_a_steady_stretch_holds_to_theory_and_to_itself(dynamodb_local):
    done = harness.run_module("day", "--json", "--endpoint", dynamodb_local.endpoint, str(STEADY), timeout=600)
    assert done.returncode == 0, done.stderr
    (steady,) = json.loads(done.stdout)["days"]
    assert steady["idle_while_waiting"] == 0 and steady["callbacks"] == callbacks(Truth())
    assert steady["twin"] == {"callers": steady["callers"], "differ": 0} and steady["callers"] > 80
    assert {row["figure"] for row in steady["theory"]} == {"wait probability", "mean wait (s)", "abandon probability"}
    assert steady["requests_per_call"] > 0


def test_a_short_day_reconciles_and_a_miscount_is_caught(local_db):
    day = Day.load(SHORT)
    floor = Floor(day, local_db, BEGAN)
    truth = floor.play()
    assert truth.problems == [] and truth.idle_while_waiting == 0
    callers = list(truth.callers.values())
    assert len(callers) > 50 and sum(row["calls"] for row in by_interval(day, truth)) == len(callers)
    assert any(c.abandoned is not None for c in callers) and any(c.ended is not None for c in callers)
    assert any(c.callback_asked is not None and c.ended is not None for c in callers)  # called back, talked
    asked = callbacks(truth)
    assert asked["asked"] >= asked["reached"] > 0
    ends = line_ends(day, truth)
    assert ends["support"]["short_abandoned"] > 0 and ends["support"]["overflowed"] > 0  # its own figures, checked
    assert ends["sales"]["offered"] > 0 and ends["support"]["offered"] + ends["sales"]["offered"] == len(callers)
    check_figures(floor)
    assert truth.problems == []

    # One caller called back the figures have and the floor did not see: every count it touched is named;
    # and an agent's wrap-up the floor saw five seconds longer.
    call_id = next(i for i, c in truth.callers.items() if c.callback_asked is not None and c.ended is not None)
    line = truth.callers.pop(call_id).line
    seat = next(s for s in floor.seats.values() if s.seconds.get("wrap_up"))
    seat.seconds["wrap_up"] += 5
    check_figures(floor)
    said = " ".join(truth.problems)
    for figure in ("callbacks_requested", "callbacks_connected", "callback_connect_sum"):
        assert f"{figure} " in said, figure
    assert f"agent {seat.agent_id}: " in said and " s wrap_up in the agents' report" in said
    assert f"line {line}: offered " in said and f"line {line}: answered " in said
    for figure in ("offered", "answered", "handled", "handle_sum", "in the agents' report"):
        assert figure in said
    for figure in ("offered", "answered", "handled", "handle_sum"):
        assert f"today: {figure} " in said and "on the wallboard" in said
    assert "today: switchboard_calls_answered" in said and "in /metrics" in said
