"""Routing profiles: an agent serves lines with a priority and a delay (their own, or a named
profile shared by many); a new caller is offered only agents who serve their line and whose
delay they have waited; an agent who frees up takes their highest-priority line's caller
first. An agent with no profile serves every line."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.routing.escalation import EscalationPolicy
from tests.helpers.api import assert_problem

FRENCH = {"language": ["French"], "gender": ["F"]}


@pytest.fixture
def centre(moto_db, clock):
    centre = CallCenter(clock=clock, escalation=EscalationPolicy(after_seconds=10**6))
    for line_id in ("support", "sales"):
        centre.lines.put({"line_id": line_id, "name": line_id.title()})
    return centre


def agent(centre, clock, name, **serving):
    made = Agents().create(name, FRENCH, **serving)
    centre.make_available(made.agent_id)
    clock.advance(1)  # each queued a second after the last
    return made


def test_a_new_caller_is_offered_only_agents_who_serve_their_line(centre, clock):
    sales_only = agent(centre, clock, "Sales only", lines={"sales": {"priority": 1}})
    anyone = agent(centre, clock, "Anyone")  # no profile: every line
    call, _ = centre.create_call({}, line="support")
    assert call.agent_id == anyone.agent_id  # the earlier-queued agent does not serve support
    sale, _ = centre.create_call({}, line="sales")
    assert sale.agent_id == sales_only.agent_id


def test_a_lines_delay_offers_its_callers_to_the_agent_once_they_have_waited_it(centre, clock):
    late = agent(
        centre, clock, "Blended", lines={"support": {"priority": 1}, "sales": {"priority": 2, "delay_seconds": 30}}
    )
    call, _ = centre.create_call({}, line="sales")
    assert call.status == CallStatus.WAITING
    clock.advance(29)
    centre.escalate()
    assert centre.get_call(call.call_id).status == CallStatus.WAITING
    clock.advance(1)
    centre.escalate()  # waited 30 s: the delay admits the agent
    assert centre.get_call(call.call_id).agent_id == late.agent_id


def test_an_agent_coming_back_takes_their_first_lines_caller_before_an_earlier_one(centre, clock):
    sale, _ = centre.create_call({}, line="sales")
    clock.advance(5)
    support, _ = centre.create_call({}, line="support")  # arrived later, on the first line
    blended = Agents().create("Blended", FRENCH, lines={"support": {"priority": 1}, "sales": {"priority": 2}})
    assert centre.make_available(blended.agent_id).call.call_id == support.call_id
    plain = Agents().create("Plain", FRENCH)  # no profile: the longest-waiting caller
    assert centre.make_available(plain.agent_id).call.call_id == sale.call_id


def test_an_agent_coming_back_passes_a_line_they_do_not_serve_and_a_delay_not_yet_waited(centre, clock):
    sale, _ = centre.create_call({}, line="sales")
    delayed = Agents().create("Delayed", FRENCH, lines={"support": {"priority": 1}, "sales": {"delay_seconds": 60}})
    assert centre.make_available(delayed.agent_id).call is None  # queued: the sales caller waited 0 s
    other = Agents().create("Support only", FRENCH, lines={"support": {"priority": 1}})
    assert centre.make_available(other.agent_id).call is None
    clock.advance(60)
    centre.escalate()
    assert centre.get_call(sale.call_id).agent_id == delayed.agent_id


def test_a_named_profile_is_shared_and_its_change_reaches_queued_agents(centre, clock, api):
    made = api.put("/api/profiles/support-first", {"name": "Support first", "lines": {"support": {"priority": 1}}})
    assert made.status_code == 201, made.json()
    one = agent(centre, clock, "One", profile="support-first")
    two = agent(centre, clock, "Two", profile="support-first")
    sale, _ = centre.create_call({}, line="sales")
    assert sale.status == CallStatus.WAITING  # neither serves sales
    changed = api.put(
        "/api/profiles/support-first",
        {"name": "Support first", "lines": {"support": {"priority": 1}, "sales": {"priority": 2}}, "version": 1},
    )
    assert changed.status_code == 200 and changed.json()["version"] == 2
    call, _ = centre.create_call({}, line="sales")
    assert call.agent_id == one.agent_id  # the queued agents serve sales now
    used = assert_problem(api.delete("/api/profiles/support-first?version=2"), 409)
    assert "One" in used["message"] and "Two" in used["message"], used
    assert "Last change" not in used["message"]  # in use, not changed: its last change is beside the point
    assert two.profile == "support-first"


def test_profiles_and_agents_lines_through_the_api(moto_db, api):
    api.put("/api/lines/support", {"name": "Support"})
    api.put("/api/lines/sales", {"name": "Sales"})
    lines = {"support": {"priority": 1}, "sales": {"priority": 2, "delay_seconds": 30}}
    body = {"name": "Blended", "lines": lines}
    made = api.put("/api/profiles/blended", body)
    assert made.status_code == 201
    assert made.json()["lines"] == {
        "support": {"priority": 1, "delay_seconds": 0},
        "sales": {"priority": 2, "delay_seconds": 30},
    }
    again = api.put("/api/profiles/blended", body)  # sent again after a timeout: answered as made
    assert (again.status_code, again["Idempotent-Replayed"]) == (200, "true")
    other = assert_problem(api.put("/api/profiles/blended", {"name": "Other", "lines": lines}), 409)
    assert "version" in other["message"], other
    assert [p["profile_id"] for p in api.get("/api/profiles").json()["profiles"]] == ["blended"]
    for bad, named in [
        ({"name": "X", "lines": {"nowhere": {}}}, "nowhere"),
        ({"name": "X", "lines": {"sales": {"priority": 0}}}, "priority"),
        ({"name": "X", "lines": {"sales": {"delay_seconds": 3601}}}, "delay_seconds"),
        ({"name": "X", "lines": {"sales": {"colour": 1}}}, "colour"),
        ({"name": "X", "lines": {}}, "lines"),
    ]:
        problem = assert_problem(api.put("/api/profiles/other", bad), 400)
        assert named in problem["message"] or named in str(problem.get("fields")), (bad, problem)
    agent = api.post("/api/agents", {"name": "Ana", "skills": FRENCH, "profile": "blended"}).json()
    assert (agent["profile"], agent["lines"]) == ("blended", {})
    own = api.post("/api/agents", {"name": "Bo", "skills": FRENCH, "lines": {"sales": {"priority": 1}}}).json()
    assert own["lines"] == {"sales": {"priority": 1, "delay_seconds": 0}}
    unknown = assert_problem(api.post("/api/agents", {"name": "Cy", "skills": FRENCH, "profile": "x"}), 400)
    assert "No routing profile 'x'" in unknown["message"], unknown
    both = {"name": "Cy", "skills": FRENCH, "profile": "blended", "lines": lines}
    assert "not both" in assert_problem(api.post("/api/agents", both), 400)["message"]
    renamed = api.patch(f"/api/agents/{agent['agent_id']}", {"name": "Ana Lima", "version": 1}).json()
    assert renamed["profile"] == "blended"  # left out: kept
    moved = api.patch(f"/api/agents/{agent['agent_id']}", {"lines": {"support": {}}, "version": 2}).json()
    assert (moved["profile"], moved["lines"]) == (None, {"support": {"priority": 1, "delay_seconds": 0}})
    cleared = api.patch(f"/api/agents/{agent['agent_id']}", {"lines": None, "version": 3}).json()
    assert (cleared["profile"], cleared["lines"]) == (None, {})
    assert api.delete("/api/profiles/blended?version=1").status_code == 200
    assert api.get("/api/profiles/blended").status_code == 404


# --- the chosen agent and caller are the ones the rules choose, on generated floors ---------

LINES = ("support", "sales")
TERMS = st.fixed_dictionaries({"priority": st.integers(1, 3), "delay_seconds": st.sampled_from([0, 0, 10, 30])})
PROFILE = st.one_of(st.none(), st.dictionaries(st.sampled_from(LINES), TERMS, min_size=1))


def admits(profile, line, waited):
    return profile is None or (line in profile and waited >= profile[line]["delay_seconds"])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    floor=st.lists(PROFILE, min_size=1, max_size=4),
    callers=st.lists(st.tuples(st.sampled_from(LINES), st.integers(0, 40)), min_size=1, max_size=4),
    returning=PROFILE,
    wait=st.integers(0, 40),
)
def test_the_agent_and_the_caller_chosen_are_the_ones_the_rules_choose(centre, clock, floor, callers, returning, wait):
    """New callers, one by one, each given the earliest-queued agent whose profile admits
    them (or waiting); then an agent coming back takes, among the callers left, the first of
    their highest-priority line they have waited the delay of, else waits queued."""
    agents = [agent(centre, clock, f"Agent {n}", **({"lines": p} if p else {})) for n, p in enumerate(floor)]
    free = list(range(len(floor)))
    waiting = []  # (line, arrival offset, call)
    start = clock.moment
    for line, gap in callers:
        clock.advance(gap)
        call, _ = centre.create_call({}, line=line)
        chosen = next((n for n in free if admits(floor[n], line, 0)), None)
        if chosen is None:
            assert call.status == CallStatus.WAITING, (floor, callers)
            waiting.append((line, round((clock.moment - start).total_seconds()), call))
        else:
            assert call.agent_id == agents[chosen].agent_id, (floor, callers)
            free.remove(chosen)
    for n in free:  # the floor empties, so the agent coming back is alone
        centre.log_off(agents[n].agent_id)
    clock.advance(wait)
    now = round((clock.moment - start).total_seconds())
    back = Agents().create("Back", FRENCH, **({"lines": returning} if returning else {}))
    taken = centre.make_available(back.agent_id).call
    admitted = [(line, at, call) for line, at, call in waiting if admits(returning, line, now - at)]
    if returning:
        admitted.sort(key=lambda c: (returning[c[0]]["priority"], c[2].arrived_at))
    want = admitted[0][2].call_id if admitted else None
    assert (taken.call_id if taken else None) == want, (floor, callers, returning, wait)
    for _line, _at, call in waiting:  # the next example starts from an empty line
        if centre.get_call(call.call_id).status == CallStatus.WAITING:
            centre.abandon(call.call_id)
    for made in [*agents, back]:
        if Agents().get(made.agent_id).status in ("queued", "attending"):
            current = Agents().get(made.agent_id)
            if current.status == "attending":
                centre.end_call(current.call_id, then="offline")
            else:
                centre.log_off(made.agent_id)


def test_the_audit_trail_says_the_lines_served_and_the_levels_in_words(centre, clock):
    from queues_app.audit.readable import readable_changes
    from queues_app.operations import Operations

    ops = Operations("sam-supervisor", "page")
    made = ops.create_agent("Ana", {"language": {"French": 5}, "gender": ["F"]})
    lines = {"support": {"priority": 1}, "sales": {"priority": 2, "delay_seconds": 30}}
    ops.update_agent(made.agent_id, name="Ana", skills=made.skills_with_levels, expected_version=1, lines=lines)
    entry = next(e for e in history(made.agent_id) if e.action == "agent.update")
    assert ("own lines", "–", "support (1), sales (2, after 30 s)") in readable_changes(
        "agent", entry.before, entry.after
    )
    created = next(e for e in history(made.agent_id) if e.action == "agent.create")
    assert ("levels", "–", "French 5") in readable_changes("agent", created.before, created.after)


def history(agent_id):
    from queues_app.audit.records import target
    from queues_app.audit.store import AuditTrail

    return AuditTrail().for_target(target("agent", agent_id)).entries


def test_an_escalation_pass_reads_the_line_for_a_delay_only_when_it_is_new(centre, clock, monkeypatch):
    agent(centre, clock, "Delayed", lines={"sales": {"delay_seconds": 30}})
    centre.create_call({}, line="sales")
    centre.escalate()  # this process sees the delay for the first time: the sales callers are offered again

    def read_again(*args, **kwargs):
        raise AssertionError("the line was read for a delay seen already")

    monkeypatch.setattr(centre.line, "waited_past", read_again)
    centre.escalate()


def test_a_line_a_profile_serves_is_not_removed_and_a_profile_made_elsewhere_is_found_at_once(centre, clock, api):
    from queues_app.lines.profiles import _READ, ProfileStore, Read

    ProfileStore(centre.db).current()  # this process read the profiles: none yet
    ProfileStore(centre.db).put(
        {"profile_id": "sales-desk", "name": "Sales desk", "lines": {"sales": {}}}, known={"sales"}
    )
    _READ.keep(centre.db, Read({}, {}))  # as if made by another process since this one read them
    assert Agents().create("Ana", FRENCH, profile="sales-desk").profile == "sales-desk"
    version = api.get("/api/lines/sales").json()["version"]
    refused = assert_problem(api.delete(f"/api/lines/sales?version={version}"), 409)
    assert "Sales desk" in refused["message"], refused
