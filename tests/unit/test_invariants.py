"""`check_invariants`: the invariant checks, on moto, after real operations and after
corrupting the table by hand in each way the audit must catch."""

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre import keys
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import now
from queues_app.ddb.codec import marshal
from queues_app.monitoring import invariants
from queues_app.routing.escalation import EscalationPolicy


class Clock:
    def __init__(self):
        self.moment = now()

    def __call__(self):
        self.moment += timedelta(microseconds=1)
        return self.moment


@pytest.fixture
def router(moto_db):
    return CallCenter(moto_db, clock=Clock(), escalation=EscalationPolicy(after_seconds=60))


@pytest.fixture
def busy(router):
    """A table after some ordinary operations: agents queued, attending, released,
    logged off; callers assigned, waiting and ended."""
    agents = Agents(router.db, router.catalog)
    ana = agents.create("Ana", {"language": ["English", "Spanish"], "gender": ["F"]})
    bo = agents.create("Bo", {"language": ["French"], "gender": ["M"]})
    cy = agents.create("Cy", {"language": ["English"], "gender": ["X"]})
    dee = agents.create("Dee", {"language": ["Spanish"], "gender": ["F"]})
    agents.create("Eve", {"language": ["French"], "gender": ["F"]})  # stays offline
    for who in (ana, bo, cy, dee):
        router.make_available(who.agent_id)
    first, _ = router.create_call({"language": "English", "gender": "F"})  # Ana
    second, _ = router.create_call({"language": "French"})  # Bo
    router.release(bo.agent_id, then="queue")
    router.create_call({"language": "Spanish"})  # Dee
    waiting, _ = router.create_call({"language": "French", "gender": "X"})  # nobody fits: waits
    router.log_off(cy.agent_id)
    assert first.status == second.status == CallStatus.ASSIGNED
    assert waiting.status == CallStatus.WAITING
    return {"ana": ana, "bo": bo, "cy": cy, "dee": dee, "first": first, "second": second, "waiting": waiting}


def table(router):
    return router.table.name


def put(router, item):
    router.db.call("put_item", TableName=table(router), Item=marshal(item))


def update(router, key, expression, values, names=None):
    params = {
        "TableName": table(router),
        "Key": marshal(key),
        "UpdateExpression": expression,
        "ExpressionAttributeValues": marshal(values),
    }
    if names:
        params["ExpressionAttributeNames"] = names
    router.db.call("update_item", **params)


def delete(router, key):
    router.db.call("delete_item", TableName=table(router), Key=marshal(key))


def checks(router):
    return {v.check for v in invariants.check(router.db, router.catalog, passes=1).violations}


def violations(router):
    return [str(v) for v in invariants.check(router.db, router.catalog, passes=1).violations]


def assert_command_fails():
    with pytest.raises(CommandError) as caught:
        call_command("check_invariants", "--once")
    assert "violation" in str(caught.value)
    return caught


def test_a_clean_table_after_operations_has_no_violations(router, busy, capsys):
    report = invariants.check(router.db, router.catalog)
    assert report.violations == []
    assert report.passes == 1
    assert report.counts["agents"] == 5
    assert report.counts["agents_queued"] == 1  # Bo, back in the queue after his call
    assert report.counts["agents_attending"] == 2  # Ana and Dee
    assert report.counts["calls_waiting"] == 1
    call_command("check_invariants")
    out = capsys.readouterr().out
    assert out.startswith("OK: no violations; 5 agents (1 queued, 2 attending)")
    assert "4 calls (1 waiting, 2 assigned, 1 ended)" in out


def test_an_empty_table_is_clean(moto_db, capsys):
    call_command("check_invariants", "--once")
    assert "OK: no violations; 0 agents" in capsys.readouterr().out


def test_wrong_depth_is_reported(router, busy, capsys):
    update(router, keys.queue_meta(("French", "M")), "ADD #d :one", {":one": 1}, {"#d": "depth"})
    assert violations(router) == ["[depth] Q#French#M: metadata depth 2 but 1 message item(s) in the queue (off by +1)"]
    assert_command_fails()
    assert "[depth] Q#French#M" in capsys.readouterr().out


def test_an_orphan_message_is_reported(router, busy, capsys):
    cy = busy["cy"]  # logged off
    put(
        router,
        {
            **keys.queue_message(("English", "X"), keys.queue_token("2020-01-01T00:00:00.000000Z", cy.agent_id)),
            "type": "message",
            "agent_id": cy.agent_id,
            "name": "Cy",
            "skills": cy.skills,
        },
    )
    update(router, keys.queue_meta(("English", "X")), "ADD #d :one", {":one": 1}, {"#d": "depth"})
    found = violations(router)
    assert len(found) == 1
    token = keys.queue_token("2020-01-01T00:00:00.000000Z", cy.agent_id)
    assert found[0].startswith(f"[orphan] message {keys.queue_message(('English', 'X'), token)['pk']} / {token}")
    assert "is offline, not queued" in found[0]
    assert_command_fails()
    assert "[orphan]" in capsys.readouterr().out


def test_a_message_of_an_unknown_agent_or_stale_token_is_an_orphan(router, busy):
    bo = Agents(router.db, router.catalog).get(busy["bo"].agent_id)
    assert bo.status == AgentStatus.QUEUED
    put(
        router,
        {
            **keys.queue_message(("French", "M"), keys.queue_token("2020-01-01T00:00:00.000000Z", bo.agent_id)),
            "type": "message",
            "agent_id": bo.agent_id,
        },
    )
    put(
        router,
        {
            **keys.queue_message(("French", "M"), "2020-01-01T00:00:00.000001Z#ghost"),
            "type": "message",
            "agent_id": "ghost",
        },
    )
    found = violations(router)
    assert any("queued with another token" in v for v in found)
    assert any("agent ghost does not exist" in v for v in found)
    assert any(v.startswith("[depth] Q#French#M: metadata depth 1 but 3") for v in found)


def test_a_missing_message_of_a_queued_agent_is_reported(router, busy, capsys):
    ana_free = busy["ana"]
    router.release(ana_free.agent_id, then="queue")  # Ana: queued in English#F and Spanish#F
    ana = Agents(router.db, router.catalog).get(ana_free.agent_id)
    assert ana.status == AgentStatus.QUEUED
    assert invariants.find_violations(router.db, router.catalog, passes=1) == []
    delete(router, keys.queue_message(("Spanish", "F"), ana.queue_token))
    update(router, keys.queue_meta(("Spanish", "F")), "ADD #d :minus", {":minus": -1}, {"#d": "depth"})
    expected = (
        f"[messages] agent {ana.agent_id} in Q#Spanish#F: queued with token {ana.queue_token} "
        "but has no message item there"
    )
    assert violations(router) == [expected]
    assert_command_fails()
    assert f"[messages] agent {ana.agent_id}" in capsys.readouterr().out


def test_an_attending_agent_with_a_message_is_reported(router, busy):
    ana = Agents(router.db, router.catalog).get(busy["ana"].agent_id)
    assert ana.status == AgentStatus.ATTENDING
    token = keys.queue_token("2020-01-01T00:00:00.000000Z", ana.agent_id)
    put(router, {**keys.queue_message(("English", "F"), token), "type": "message", "agent_id": ana.agent_id})
    update(router, keys.queue_meta(("English", "F")), "ADD #d :one", {":one": 1}, {"#d": "depth"})
    found = violations(router)
    where = keys.queue_message(("English", "F"), token)["pk"]
    assert f"[attending] agent {ana.agent_id}: attending but still has 1 message item(s) ({where} / {token})" in found
    assert any(v.startswith("[orphan]") and "is attending, not queued" in v for v in found)
    assert checks(router) == {"attending", "orphan"}
    assert_command_fails()


def test_an_attending_agent_without_a_call_is_reported(router, busy):
    router.db.call(
        "update_item",
        TableName=table(router),
        Key=marshal(keys.agent(busy["ana"].agent_id)),
        UpdateExpression="REMOVE call_id",
    )
    found = violations(router)
    assert f"[attending] agent {busy['ana'].agent_id}: attending without a call_id" in found
    assert any(v.startswith(f"[holder] call {busy['first'].call_id}") for v in found)


def place_in_line(router, call):
    return keys.waiting_caller(router.table.wanted(call.preferences), call.wait_sk)


def test_a_waiting_call_without_its_waiting_item_is_reported(router, busy, capsys):
    waiting = busy["waiting"]
    delete(router, place_in_line(router, waiting))
    partition = place_in_line(router, waiting)["pk"]
    assert violations(router) == [
        f"[line] {partition}: count says 1, 0 caller(s) wait there",
        f"[line] {partition}: count copy 1 says 1, 0 caller(s) wait there",
        f"[calls] call {waiting.call_id}: waiting under {waiting.wait_sk} but has 0 WAITING item(s)",
    ]
    assert_command_fails()
    assert f"[calls] call {waiting.call_id}" in capsys.readouterr().out


def test_an_assigned_call_still_waiting_is_reported(router, busy):
    first = busy["first"]
    put(
        router,
        {
            "pk": keys.WAIT_PREFIX + "English#F",
            "sk": "9#2020-01-01T00:00:00.000000Z#" + first.call_id,
            "type": "waiting",
            "call_id": first.call_id,
        },
    )
    found = violations(router)
    assert f"[calls] call {first.call_id}: assigned but still has 1 WAITING item(s)" in found
    assert any(v.startswith("[calls] WAITING 9#2020") and "which is assigned" in v for v in found)


def test_a_waiting_call_with_an_agent_is_reported(router, busy):
    waiting = busy["waiting"]
    update(router, keys.call(waiting.call_id), "SET agent_id = :a", {":a": busy["bo"].agent_id})
    assert violations(router) == [f"[calls] call {waiting.call_id}: waiting but has agent {busy['bo'].agent_id}"]


def test_two_calls_assigned_to_the_same_agent_are_reported(router, busy, capsys):
    ana, first = busy["ana"], busy["first"]
    # A second call, assigned to Ana as well (the double assignment the audit exists for).
    extra = router.create_call({"language": "English", "gender": "F"})[0]
    assert extra.status == CallStatus.WAITING
    delete(router, place_in_line(router, extra))
    for copy in range(keys.WAIT_COUNT_COPIES):
        update(router, keys.waiting_count(("English", "F"), copy), "ADD waiting :minus", {":minus": -1})
    update(router, keys.line_waiting(extra.line or ""), "ADD waiting :minus", {":minus": -1})
    update(
        router,
        keys.call(extra.call_id),
        "SET #s = :assigned, agent_id = :a REMOVE wait_sk",
        {":assigned": CallStatus.ASSIGNED, ":a": ana.agent_id},
        {"#s": "status"},
    )
    found = violations(router)
    held = sorted([first.call_id, extra.call_id])
    assert f"[holder] agent {ana.agent_id}: holds 2 assigned calls: {', '.join(held)}" in found
    assert any(
        v.startswith(
            f"[holder] call {extra.call_id}: assigned to agent {ana.agent_id}, "
            f"who is attending with call_id {first.call_id}"
        )
        for v in found
    )
    assert checks(router) == {"holder"}
    caught = assert_command_fails()
    assert "2 violation(s) found" in str(caught.value)
    out = capsys.readouterr().out
    assert f"[holder] agent {ana.agent_id}" in out


def test_every_violation_is_listed_at_once(router, busy):
    update(router, keys.queue_meta(("French", "M")), "ADD #d :one", {":one": 1}, {"#d": "depth"})
    delete(router, place_in_line(router, busy["waiting"]))
    assert checks(router) == {"depth", "calls", "line"}


def test_the_command_exits_non_zero_from_the_shell(router, busy):
    from django.core.management import ManagementUtility

    delete(router, place_in_line(router, busy["waiting"]))
    with pytest.raises(SystemExit) as caught:
        ManagementUtility(["manage.py", "check_invariants", "--once"]).execute()
    assert caught.value.code == 1


def test_violations_are_reported_only_when_they_persist_across_passes(router, busy):
    meta = keys.queue_meta(("French", "M"))
    update(router, meta, "ADD #d :one", {":one": 1}, {"#d": "depth"})
    pauses = []

    def heal_after_first_pass(seconds):  # a transient inconsistency: gone by the second pass
        pauses.append(seconds)
        update(router, meta, "ADD #d :minus", {":minus": -1}, {"#d": "depth"})

    report = invariants.check(router.db, router.catalog, pause=0.01, sleep=heal_after_first_pass)
    assert report.violations == []
    assert report.passes == 2
    assert pauses == [0.01]

    update(router, meta, "ADD #d :one", {":one": 1}, {"#d": "depth"})
    report = invariants.check(router.db, router.catalog, pause=0.01, sleep=lambda s: None)
    assert [v.key for v in report.violations] == [("depth", "Q#French#M")]
    assert report.passes == 3
