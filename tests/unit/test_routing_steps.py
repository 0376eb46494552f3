"""Proficiency levels and routing steps: agents carry levels 1-5 per skill value (a plain
list is level 1), a caller's steps admit only agents at their levels while each runs,
widen as they expire, and the call says which step it was matched at."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.routing.escalation import EscalationPolicy
from tests.helpers.api import assert_problem

STEPS = [{"min_level": {"language": 4}, "seconds": 20}, {"min_level": {"language": 2}, "seconds": 40}]


@pytest.fixture
def centre(moto_db, clock):
    # No preference relaxed here: the steps alone widen who may take a caller.
    return CallCenter(clock=clock, escalation=EscalationPolicy(after_seconds=10**6))


def queued(centre, name, french_level, clock):
    agent = Agents().create(name, {"language": {"French": french_level}, "gender": ["F"]})
    centre.make_available(agent.agent_id)
    clock.advance(1)  # each queued a second after the last
    return agent


def test_levels_are_kept_a_plain_list_is_level_one_and_a_bad_level_is_a_400(moto_db, api):
    made = api.post(
        "/api/agents", {"name": "Ana", "skills": {"language": {"French": 5, "English": 2}, "gender": ["F"]}}
    )
    assert made.status_code == 201, made.json()
    assert made.json()["levels"] == {"language": {"English": 2, "French": 5}, "gender": {"F": 1}}
    assert made.json()["skills"]["language"] == ["English", "French"]  # as before: lists
    plain = api.post("/api/agents", {"name": "Bo", "skills": {"language": ["French"], "gender": ["M"]}}).json()
    assert plain["levels"] == {"language": {"French": 1}, "gender": {"M": 1}}
    for level in (6, 0, "5", True, 2.5):
        skills = {"language": {"French": level}, "gender": ["F"]}
        problem = assert_problem(api.post("/api/agents", {"name": "Cy", "skills": skills}), 400)
        assert "skills" in problem["message"] or "language" in problem["message"], (level, problem)
    # A rename keeps the levels: skills left out stay as they are, levels too.
    renamed = api.patch(f"/api/agents/{made.json()['agent_id']}", {"name": "Ana Lima", "version": 1})
    assert renamed.json()["levels"]["language"] == {"English": 2, "French": 5}


def test_the_first_step_skips_agents_below_its_level_and_the_call_names_the_step(centre, clock):
    junior = queued(centre, "Junior", 2, clock)
    expert = queued(centre, "Expert", 5, clock)
    call, _ = centre.create_call({"language": "French"}, steps=STEPS)
    assert (call.status, call.agent_id) == (CallStatus.ASSIGNED, expert.agent_id)
    assert call.matched_step == "step 1 (language 4 or above)"
    assert Agents().get(junior.agent_id).status == "queued"


def test_a_caller_nobody_meets_waits_and_is_widened_to_as_each_step_expires(centre, clock):
    junior = queued(centre, "Junior", 1, clock)
    middle = queued(centre, "Middle", 3, clock)
    call, _ = centre.create_call({"language": "French"}, steps=STEPS)
    assert call.status == CallStatus.WAITING
    centre.escalate()
    assert centre.get_call(call.call_id).status == CallStatus.WAITING  # step 1 runs for 20 s
    clock.advance(20)
    centre.escalate()  # step 2 (level 2) admits Middle, queued after Junior
    matched = centre.get_call(call.call_id)
    assert (matched.agent_id, matched.matched_step) == (middle.agent_id, "step 2 (language 2 or above)")
    second, _ = centre.create_call({"language": "French"}, steps=STEPS)
    clock.advance(60)
    centre.escalate()  # after the last step: any agent who fits
    taken = centre.get_call(second.call_id)
    assert (taken.agent_id, taken.matched_step) == (junior.agent_id, "after the last step (any agent who fits)")


def test_an_agent_coming_back_takes_the_first_caller_whose_step_they_meet(centre, clock):
    hard, _ = centre.create_call({"language": "French"}, steps=STEPS)
    easy, _ = centre.create_call({"language": "French"})  # behind, in the same part of the line
    agent = Agents().create("Junior", {"language": {"French": 2}, "gender": ["M"]})
    outcome = centre.make_available(agent.agent_id)
    assert outcome.call is not None and outcome.call.call_id == easy.call_id
    assert centre.get_call(hard.call_id).status == CallStatus.WAITING
    expert = Agents().create("Expert", {"language": {"French": 4}, "gender": ["F"]})
    taken = centre.make_available(expert.agent_id).call
    assert taken.call_id == hard.call_id
    assert taken.matched_step == "step 1 (language 4 or above)"  # an agent coming back says it too


def test_bad_steps_are_a_400_naming_the_step(moto_db, api):
    cases = [
        ([{"min_level": {"planet": 3}, "seconds": 5}], "planet"),
        ([{"min_level": {"language": 7}, "seconds": 5}], "steps"),
        ([{"min_level": {"language": 3}, "seconds": 0}], "seconds"),
        ([{"min_level": {}, "seconds": 5}], "min_level"),
        ([{"min_level": {"language": 3}, "seconds": 5}] * 6, "steps"),
        ("fast", "steps"),
        ([{"min_level": {"language": "4"}, "seconds": 5}], "steps"),  # a level is a number, not text
        ([{"min_level": {"language": 4}, "seconds": 5, "colour": "red"}], "steps[0].colour"),
    ]
    for steps, named in cases:
        problem = assert_problem(api.post("/api/calls", {"preferences": {}, "steps": steps}), 400)
        assert named in problem["message"] or named in str(problem.get("fields")), (steps, problem)
    unknown = api.post(
        "/api/calls", {"preferences": {}, "steps": [{"min_level": {"language": 4}, "seconds": 5, "x": 1}]}
    )
    assert assert_problem(unknown, 400)["fields"] == {"steps[0].x": "unknown field; allowed: min_level, seconds"}
    long_name = assert_problem(
        api.post("/api/agents", {"name": "A" * 200_000, "skills": {"language": ["French"]}}), 400
    )
    assert long_name["fields"] == {"name": "An agent's name is at most 100 characters."}, long_name
    expert = {"name": "Expert", "skills": {"language": {"French": 5}, "gender": ["F"]}}
    made = api.post("/api/agents", expert).json()
    api.post(f"/api/agents/{made['agent_id']}/available", {"version": 1})
    placed = api.post("/api/calls", {"preferences": {"language": "French"}, "steps": STEPS})
    assert placed.status_code == 201 and placed.json()["steps"] == STEPS
    assert placed.json()["why"][0]["step"] == "step 1 (language 4 or above)"


# --- the chosen agent is the one the rules choose, on generated floors -------------------

LEVEL = st.integers(min_value=1, max_value=5)
AGENT = st.fixed_dictionaries(
    {
        "languages": st.dictionaries(st.sampled_from(["French", "English"]), LEVEL, min_size=1),
        "gender": st.sampled_from(["F", "M"]),
    }
)
STEP = st.fixed_dictionaries(
    {"min_level": st.dictionaries(st.just("language"), st.integers(2, 5), min_size=1), "seconds": st.integers(1, 30)}
)


def expected(floor, wanted, steps, elapsed):
    """Brute force: the earliest-queued agent who fits the preferences and meets the step in
    force `elapsed` seconds after arrival (their level in the language asked, or their best)."""
    total, minimum = 0, 1
    for step in steps:
        total += step["seconds"]
        if elapsed < total:
            minimum = step["min_level"].get("language", 1)
            break
    for n, agent in enumerate(floor):
        languages = agent["languages"]
        if wanted["language"] is not None and wanted["language"] not in languages:
            continue
        if wanted["gender"] is not None and wanted["gender"] != agent["gender"]:
            continue
        level = languages[wanted["language"]] if wanted["language"] else max(languages.values())
        if level >= minimum:
            return n
    return None


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    floor=st.lists(AGENT, min_size=1, max_size=5),
    language=st.sampled_from(["French", "English", None]),
    gender=st.sampled_from(["F", "M", None]),
    steps=st.lists(STEP, max_size=2),
    wait=st.integers(0, 70),
)
def test_the_agent_chosen_is_the_one_the_rules_choose(centre, clock, floor, language, gender, steps, wait):
    agents = []
    for n, spec in enumerate(floor):
        made = Agents().create(f"Agent {n}", {"language": spec["languages"], "gender": [spec["gender"]]})
        centre.make_available(made.agent_id)
        clock.advance(1)
        agents.append(made)
    wanted = {"language": language, "gender": gender}
    call, _ = centre.create_call({k: v or "any" for k, v in wanted.items()}, steps=steps)
    at_once = expected(floor, wanted, steps, 0)
    if at_once is not None:
        assert call.agent_id == agents[at_once].agent_id
    else:
        assert call.status == CallStatus.WAITING
        clock.advance(wait)
        centre.escalate()
        later = expected(floor, wanted, steps, wait)
        after = centre.get_call(call.call_id)
        assert after.agent_id == (agents[later].agent_id if later is not None else None), (floor, steps, wait)
        if after.status == CallStatus.WAITING:
            centre.abandon(call.call_id)
    for agent in agents:  # the next example starts from an empty floor
        if Agents().get(agent.agent_id).status == "queued":
            centre.log_off(agent.agent_id)


# --- the preferred agent -----------------------------------------------------------------


def test_a_caller_kept_for_a_busy_agent_waits_for_them_then_goes_to_anyone(centre, clock):
    owner = Agents().create("Owner", {"language": ["French"], "gender": ["F"]})
    other = queued(centre, "Other", 1, clock)
    first, _ = centre.create_call({"language": "French"})  # Other takes it
    assert first.agent_id == other.agent_id
    centre.make_available(owner.agent_id)
    busy, _ = centre.create_call({"language": "French"})  # the owner takes this one: busy now
    assert busy.agent_id == owner.agent_id
    centre.end_call(first.call_id, then="queue")  # Other is free again
    kept, _ = centre.create_call({"language": "French"}, preferred=(owner.agent_id, 60))
    assert kept.status == CallStatus.WAITING  # not given to Other: kept for the owner
    plain, _ = centre.create_call({"language": "French"})
    assert plain.agent_id == other.agent_id  # Other, queued, was never offered the kept caller
    outcome = centre.end_call(busy.call_id, then="queue")  # the owner frees up: their caller first
    assert outcome.call.call_id == kept.call_id
    assert centre.get_call(kept.call_id).why[0]["outcome"] == "preferred"


def test_the_time_kept_runs_out_and_a_logged_off_agent_holds_no_one(centre, clock):
    owner = Agents().create("Owner", {"language": ["French"], "gender": ["F"]})
    centre.set_not_ready(owner.agent_id, "break")  # logged in, not taking calls
    kept, _ = centre.create_call({"language": "French"}, preferred=(owner.agent_id, 30))
    other = queued(centre, "Other", 1, clock)
    assert centre.get_call(kept.call_id).status == CallStatus.WAITING  # Other came back and passed it
    clock.advance(30)
    centre.escalate()  # the time kept ran out: as any caller
    assert centre.get_call(kept.call_id).agent_id == other.agent_id
    gone = Agents().create("Gone", {"language": ["French"], "gender": ["F"]})  # logged off
    spare = queued(centre, "Spare", 1, clock)
    call, _ = centre.create_call({"language": "French"}, preferred=(gone.agent_id, 60))
    assert call.agent_id == spare.agent_id


def test_the_preferred_agent_through_the_api(moto_db, api):
    owner = api.post("/api/agents", {"name": "Owner", "skills": {"language": ["French"], "gender": ["F"]}}).json()
    api.post(f"/api/agents/{owner['agent_id']}/available", {"version": 1})
    placed = api.post(
        "/api/calls", {"preferences": {}, "preferred_agent_id": owner["agent_id"], "preferred_for_seconds": 90}
    )
    body = placed.json()
    assert (placed.status_code, body["agent_id"], body["why"][0]["outcome"]) == (201, owner["agent_id"], "preferred")
    assert body["preferred_agent_id"] == owner["agent_id"] and body["preferred_until"]
    alone = assert_problem(api.post("/api/calls", {"preferences": {}, "preferred_for_seconds": 5}), 400)
    assert "preferred_agent_id" in alone["message"]
    long = assert_problem(
        api.post("/api/calls", {"preferences": {}, "preferred_agent_id": "x", "preferred_for_seconds": 99999}), 400
    )
    assert "preferred_for_seconds" in long["message"]


# --- a line's default steps ----------------------------------------------------------------


def test_a_lines_steps_are_its_callers_own_unless_they_bring_some(moto_db, api, supervisor_client):
    line = {"name": "Support", "steps": [{"min_level": {"language": 4}, "seconds": 30}], "priority_aging_seconds": 60}
    assert api.put("/api/lines/support", line).status_code == 201
    assert api.get("/api/lines/support").json()["steps"] == line["steps"]
    placed = api.post("/api/calls", {"preferences": {}, "line": "support"}).json()
    assert placed["steps"] == line["steps"]
    own = [{"min_level": {"language": 2}, "seconds": 5}]
    assert api.post("/api/calls", {"preferences": {}, "line": "support", "steps": own}).json()["steps"] == own
    bad = assert_problem(
        api.put("/api/lines/sales", {"name": "Sales", "steps": [{"min_level": {"x": 3}, "seconds": 5}]}), 400
    )
    assert "steps" in bad["message"], bad
    # Saved from the Lines page, which shows neither, the steps and the aging stay.
    form = {"name": "Support desk", "service_level_seconds": "20", "service_level_target": "80", "version": "1"}
    form.update(short_abandon_seconds="0", hours="", holidays="", overflow_kind="")
    assert supervisor_client.post("/lines/support/", form).status_code == 302
    kept = api.get("/api/lines/support").json()
    assert (kept["name"], kept["steps"], kept["priority_aging_seconds"]) == ("Support desk", line["steps"], 60)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(others=st.integers(0, 3), state=st.sampled_from(["queued", "offline", "busy", "not_ready"]))
def test_a_preferred_caller_goes_where_the_rules_say(centre, clock, others, state):
    """Brute force: kept for a queued agent, they take the caller; for one logged in but busy
    or not ready, the caller waits until the time kept runs out; for one logged off, the
    caller goes to the earliest-queued other agent. After the time kept, as any caller."""
    owner = Agents().create("Owner", {"language": ["French"], "gender": ["F"]})
    made = [owner]
    if state == "busy":
        centre.make_available(owner.agent_id)
        centre.create_call({"language": "French"})  # the owner, alone, takes it
    elif state == "not_ready":
        centre.set_not_ready(owner.agent_id, "break")
    rest = [queued(centre, f"Other {n}", 1, clock) for n in range(others)]
    made += rest
    if state == "queued":
        centre.make_available(owner.agent_id)
    call, _ = centre.create_call({"language": "French"}, preferred=(owner.agent_id, 30))
    if state == "queued":
        assert call.agent_id == owner.agent_id
    elif state == "offline" or not rest:
        assert call.agent_id == (rest[0].agent_id if rest and state == "offline" else None), (state, others)
    else:
        assert call.status == CallStatus.WAITING
        clock.advance(30)
        centre.escalate()  # the time kept ran out: the earliest-queued other agent
        assert centre.get_call(call.call_id).agent_id == rest[0].agent_id
    for agent in made:  # the next example starts from an empty floor
        current = Agents().get(agent.agent_id)
        if current.status in ("attending", "ringing"):
            centre.end_call(current.call_id, then="offline")
        elif current.status in ("queued", "not_ready"):
            centre.log_off(agent.agent_id)
    for waiting in centre.line.everyone():
        centre.abandon(waiting["call_id"])
