"""Erlang C staffing (queues_app.staffing) and the planners' `staffing` command, checked
against published worked examples to the rounding they were published with."""

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from hypothesis import given
from hypothesis import strategies as st

from queues_app import staffing

# --- published examples ------------------------------------------------------------------
#
# 1. Call Centre Helper, "Erlang C Formula - Made Simple With an Easy Worked Example"
#    (callcentrehelper.com/erlang-c-formula-example-121281.htm): 100 calls per 30 minutes,
#    AHT 180 s, 80% within 20 s, occupancy at most 85%, shrinkage 30%. Its figures as
#    printed, agent count by agent count, in the README of the CRAN package ErlangC 0.1.0,
#    and the answer in pyworkforce's docs (tutorials/erlangc_example) and tests.
# 2. Mitan, "The Erlang-C Formula" (mitan.co.uk/erlang/elgcmath.htm): 360 calls per half
#    hour, 4-minute calls, 55 agents, 15 s answer time.
# 3. Patrick Hubers' R package Erlang, vignette "Queuing and Staffing Functions for Contact
#    Centers": 200 calls per half hour of 3 minutes, 80% within 60 s: 23 agents, 20/23 or
#    87% occupancy.

CALL_CENTRE_HELPER = dict(calls_per_hour=200, aht_seconds=180, answer_within_seconds=20)
MITAN = dict(calls_per_hour=720, aht_seconds=240, answer_within_seconds=15)
HUBERS = dict(calls_per_hour=400, aht_seconds=180, answer_within_seconds=60)


def test_call_centre_helper_needs_14_agents_and_20_with_shrinkage():
    figures = staffing.required(**CALL_CENTRE_HELPER, service_level=0.8, max_occupancy=0.85, shrinkage=0.3)
    assert figures.traffic_erlangs == 10
    assert (figures.agents, figures.agents_with_shrinkage) == (14, 20)
    # ErlangC 0.1.0: wait 0.1741319, service level 0.88835, ASA 7.83593701177724 s, occupancy 0.7142857.
    assert round(figures.wait_probability, 7) == 0.1741319
    assert round(figures.service_level, 5) == 0.88835
    assert round(figures.asa_seconds, 10) == 7.8359370118
    assert round(figures.occupancy, 7) == 0.7142857


@pytest.mark.parametrize(
    ("agents", "wait", "service_level", "asa"),
    [
        # ErlangC 0.1.0's search from 11 agents up; Call Centre Helper's first step is 11.
        (11, 0.6821182, 0.3896138, 122.78127684408),
        (12, 0.4493882, 0.640158, 40.4449401868444),
        (13, 0.2852705, 0.7955948, 17.1162271821896),
        (14, 0.1741319, 0.88835, 7.83593701177724),
    ],
)
def test_call_centre_helper_agent_by_agent(agents, wait, service_level, asa):
    figures = staffing.for_agents(agents, **CALL_CENTRE_HELPER)
    assert round(figures.wait_probability, 7) == wait
    assert figures.service_level == pytest.approx(service_level, abs=5e-8)
    assert figures.asa_seconds == pytest.approx(asa, rel=1e-12)


def test_call_centre_helper_with_occupancy_at_most_70_percent():
    # pyworkforce, test_over_occupancy_erlangc: 15 agents, 22 with shrinkage, 0.941, 0.667, 0.102.
    figures = staffing.required(**CALL_CENTRE_HELPER, service_level=0.8, max_occupancy=0.7, shrinkage=0.3)
    assert (figures.agents, figures.agents_with_shrinkage) == (15, 22)
    assert round(figures.service_level, 3) == 0.941
    assert round(figures.occupancy, 3) == 0.667
    assert round(figures.wait_probability, 3) == 0.102


def test_mitan_55_agents_for_48_erlangs():
    figures = staffing.for_agents(55, **MITAN)
    # Mitan: traffic 48, occupancy 0.873, probability of waiting 0.239, ASA 8.2 s, 84.6% within 15 s.
    assert figures.traffic_erlangs == 48
    assert round(figures.occupancy, 3) == 0.873
    assert round(figures.wait_probability, 3) == 0.239
    assert round(figures.asa_seconds, 1) == 8.2
    assert round(figures.service_level, 3) == 0.846


def test_hubers_23_agents_for_80_percent_within_a_minute():
    figures = staffing.required(**HUBERS, service_level=0.8)
    assert figures.traffic_erlangs == 20
    assert figures.agents == 23
    assert round(figures.occupancy * 100) == 87
    assert staffing.for_agents(22, **HUBERS).service_level < 0.8


# --- the arithmetic ------------------------------------------------------------------------


def test_erlang_c_stays_finite_where_factorials_overflow():
    # 360 erlangs: 400! is beyond a float, the recursion is not.
    big = dict(calls_per_hour=7200, aht_seconds=180, answer_within_seconds=20)
    figures = staffing.required(**big, service_level=0.9)
    assert figures.traffic_erlangs == 360 and figures.agents > 360
    assert 0 < figures.wait_probability < 1
    assert staffing.wait_probability(400, 360.0) == staffing.for_agents(400, **big).wait_probability


def test_no_spare_agent_is_an_unstable_queue():
    with pytest.raises(staffing.UnstableQueue) as caught:
        staffing.for_agents(48, **MITAN)
    assert caught.value.needed == 49
    assert "grows without end" in str(caught.value)
    with pytest.raises(staffing.UnstableQueue):
        staffing.wait_probability(10, 10.5)


def test_the_fewest_agents_are_the_fewest():
    figures = staffing.required(**MITAN, service_level=0.8)
    assert figures.service_level >= 0.8
    assert staffing.for_agents(figures.agents - 1, **MITAN).service_level < 0.8


def test_shrinkage_on_a_whole_number_is_not_pushed_up_by_rounding():
    # 21 / (1 - 0.3) is 30.000000000000004 in floating point; 30 it is.
    assert staffing.with_shrinkage(21, 0.3) == 30
    assert staffing.with_shrinkage(14, 0.3) == 20
    assert staffing.with_shrinkage(14, 0.0) == 14
    assert staffing.with_shrinkage(15, 0.3) == 22


def test_an_occupancy_on_the_cap_meets_it():
    # 22.1 erlangs over 0.85 is 26.000000000000004 in floating point: 26 agents are 85% busy.
    figures = staffing.required(
        calls_per_hour=442, aht_seconds=180, answer_within_seconds=60, service_level=0.5, max_occupancy=0.85
    )
    assert figures.traffic_erlangs == pytest.approx(22.1)
    assert figures.agents == 26


def test_the_result_cannot_be_changed():
    figures = staffing.for_agents(55, **MITAN)
    with pytest.raises(AttributeError):
        figures.agents = 1  # type: ignore[misc]


@given(
    calls=st.floats(min_value=1, max_value=5000),
    aht=st.floats(min_value=10, max_value=1800),
    within=st.floats(min_value=0, max_value=300),
    extra=st.integers(min_value=0, max_value=30),
)
def test_each_agent_added_raises_the_service_level_and_shortens_the_wait(calls, aht, within, extra):
    traffic = staffing.traffic_erlangs(calls, aht)
    agents = staffing.minimum_stable_agents(traffic) + extra
    fewer = staffing.for_agents(agents, calls_per_hour=calls, aht_seconds=aht, answer_within_seconds=within)
    more = staffing.for_agents(agents + 1, calls_per_hour=calls, aht_seconds=aht, answer_within_seconds=within)
    assert 0 <= fewer.service_level <= more.service_level <= 1
    assert more.asa_seconds <= fewer.asa_seconds
    assert more.wait_probability <= fewer.wait_probability
    assert more.occupancy < fewer.occupancy < 1


# --- the command ---------------------------------------------------------------------------


def run(*args):
    out = io.StringIO()
    call_command("staffing", *args, stdout=out)
    return out.getvalue()


CCH_ARGS = ["--calls-per-hour", "200", "--aht", "180", "--answer-within", "20", "--service-level", "0.8"]
MITAN_ARGS = ["--calls-per-hour", "720", "--aht", "240", "--answer-within", "15", "--service-level", "0.8"]


def test_the_command_prints_the_figures_as_json():
    answer = json.loads(run(*CCH_ARGS, "--max-occupancy", "0.85", "--shrinkage", "0.3", "--json"))
    assert list(answer) == [
        "agents",
        "agents_with_shrinkage",
        "service_level",
        "asa_seconds",
        "wait_probability",
        "occupancy",
        "traffic_erlangs",
    ]
    assert (answer["agents"], answer["agents_with_shrinkage"]) == (14, 20)
    assert isinstance(answer["agents"], int) and isinstance(answer["agents_with_shrinkage"], int)
    assert all(isinstance(answer[k], float) for k in list(answer)[2:])
    assert round(answer["service_level"], 3) == 0.888
    assert answer["traffic_erlangs"] == 10.0


def test_the_command_gives_the_figures_of_the_agents_named():
    answer = json.loads(run(*MITAN_ARGS, "--agents", "55", "--json"))
    assert answer["agents"] == 55 and answer["agents_with_shrinkage"] == 55
    assert round(answer["service_level"], 3) == 0.846
    assert round(answer["asa_seconds"], 1) == 8.2


def test_the_command_reads_well_without_json():
    text = run(*CCH_ARGS, "--shrinkage", "0.3")
    assert text.splitlines() == [
        "Agents needed: 14; 20 to schedule with 30% shrinkage",
        "Traffic: 10 erlangs (200 calls an hour, 180 s each)",
        "Service level: 88.8% answered within 20 s (target 80%: met)",
        "Average speed of answer: 7.8 s",
        "Calls that wait: 17.4%",
        "Occupancy: 71.4%",
    ]


def test_no_calls_need_no_agents():
    assert run("--calls-per-hour", "0", "--aht", "180", "--answer-within", "20", "--service-level", "0.8").splitlines()[
        :3
    ] == [
        "Agents needed: 0",
        "Traffic: 0 erlangs (0 calls an hour, 180 s each)",
        "Service level: 100.0% answered within 20 s (target 80%: met)",
    ]


def test_a_figure_beside_a_fine_target_shows_whether_it_is_met():
    """99.99996% is shown to one decimal more than the target, rounded down: never 100.0%."""
    args = ["--calls-per-hour", "100", "--aht", "180", "--answer-within", "20", "--service-level", "0.999999"]
    assert "Service level: 99.99996% answered within 20 s (target 99.9999%: met)" in run(*args)
    short = run(*args, "--agents", "18")  # one fewer than needed
    assert "(target 99.9999%: not met)" in short and "100.0" not in short


def test_the_command_says_whether_the_agents_named_meet_the_target():
    assert run(*MITAN_ARGS, "--agents", "55").startswith("Agents: 55 (target met)\n")
    assert run(*MITAN_ARGS, "--agents", "53").startswith("Agents: 53 (target not met)\n")


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (
            [*MITAN_ARGS, "--agents", "48"],
            "Unstable queue: 48 agents for 48 erlangs of traffic: calls arrive at least as fast as they are "
            "handled and the line grows without end (service level 0, no average speed of answer); at least 49 "
            "agents are needed.",
        ),
        ([*MITAN_ARGS, "--agents", "20", "--json"], "at least 49 agents are needed"),
        ([*MITAN_ARGS, "--agents", "55", "--max-occupancy", "0.9"], "--max-occupancy bounds the agents found"),
    ],
)
def test_the_command_refuses_what_cannot_be_answered(args, reason):
    out = io.StringIO()
    with pytest.raises(CommandError) as caught:
        call_command("staffing", *args, stdout=out)
    assert reason in str(caught.value)
    assert out.getvalue() == ""
