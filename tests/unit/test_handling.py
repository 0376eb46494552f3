"""Not ready with a reason, ring-no-answer (offers picked up in time or missed) and
transfers, in the call center's domain. The answer-against-timeout race from several
processes runs on DynamoDB Local: tests/integration/test_offer_race.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from queues_app.agents.records import MISSED, AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.calls.transfers import Transfer
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.figures.counters import MetricsStore
from queues_app.figures.service_level import ServiceLevelReader
from queues_app.routing.escalation import EscalationPolicy

SPANISH_F = {"language": "Spanish", "gender": "F"}
ENGLISH_ANY = {"language": "English", "gender": None}


@pytest.fixture
def router(moto_db, clock):
    clock.moment = datetime(2026, 11, 25, 14, 0, tzinfo=UTC)
    return CallCenter(moto_db, clock=clock, escalation=EscalationPolicy(after_seconds=600))


@pytest.fixture
def offers(settings):
    settings.ANSWER_TIMEOUT_SECONDS = 20


def agent(router, name, language="Spanish", gender="F"):
    return Agents(router.db, router.catalog).create(name, {"language": [language], "gender": [gender]})


def today(router):
    MetricsStore(router.db).flush()
    return ServiceLevelReader(router.db, clock=router.clock).read().today.overall


# --- not ready --------------------------------------------------------------------------


def test_a_not_ready_agent_leaves_the_queue_and_is_offered_no_call(router, clock):
    ana = agent(router, "Ana")
    router.make_available(ana.agent_id)
    clock.advance(5)
    outcome = router.set_not_ready(ana.agent_id, "break")
    assert outcome.agent.status == AgentStatus.NOT_READY and outcome.agent.reason == "break"
    assert outcome.agent.status_since.startswith("2026-11-25T14:00:05.")
    assert outcome.agent.status_label == "Not ready: break"
    assert [q.depth for q in router.queues() if q.combination == ("Spanish", "F")] == [0]
    call, _ = router.create_call(SPANISH_F)
    assert call.status == CallStatus.WAITING  # never offered to Ana

    back = router.make_available(ana.agent_id)  # from not ready, she takes the caller
    assert back.call.call_id == call.call_id and back.agent.reason is None


def test_not_ready_from_offline_logs_in_and_a_new_reason_replaces_the_old(router):
    ana = agent(router, "Ana")
    assert router.set_not_ready(ana.agent_id, "training").agent.reason == "training"
    assert router.set_not_ready(ana.agent_id, "lunch").agent.reason == "lunch"


def test_not_ready_is_refused_without_a_reason_and_on_a_call_is_the_next_status(router):
    ana = agent(router, "Ana")
    with pytest.raises(errors.InvalidRequest, match="why"):
        router.set_not_ready(ana.agent_id, "")
    router.make_available(ana.agent_id)
    router.create_call(SPANISH_F)
    later = router.set_not_ready(ana.agent_id, "break").agent
    assert (later.status, later.next_status, later.next_reason) == (AgentStatus.ATTENDING, "not_ready", "break")


def test_a_stale_not_ready_names_the_version_it_saw(router):
    ana = agent(router, "Ana")
    seen = ana.version
    router.set_not_ready(ana.agent_id, "break", expected_version=seen)
    again = router.set_not_ready(ana.agent_id, "break", expected_version=seen)
    assert again.replayed  # the same request, retried
    with pytest.raises(errors.Conflict):
        router.set_not_ready(ana.agent_id, "lunch", expected_version=seen)  # another, from an old page


# --- offers: answered in time, or missed -------------------------------------------------


def test_without_offers_an_assignment_is_the_answer(router):
    router.make_available(agent(router, "Ana").agent_id)
    call, _ = router.create_call(SPANISH_F)
    assert call.answered_at == call.assigned_at and call.offer_sk is None
    assert router.answered(call.call_id).replayed  # nothing to confirm: answered as done
    assert today(router).answered == 1


def test_an_offer_answered_in_time_is_answered_once(router, clock, offers):
    router.make_available(agent(router, "Ana").agent_id)
    call, _ = router.create_call(SPANISH_F)
    assert call.status == CallStatus.ASSIGNED and call.offer_sk and call.answered_at is None
    assert today(router).answered == 0  # offered, not answered yet
    clock.advance(4)
    answered = router.answered(call.call_id)
    assert answered.call.answered_at.startswith("2026-11-25T14:00:04.") and not answered.replayed
    assert router.answered(call.call_id).replayed  # the phone system's retry
    clock.advance(30)
    assert router.miss_expired_offers() == []  # nothing to miss
    figures = today(router)
    assert figures.answered == 1 and round(figures.wait_sum) == 4


def test_an_offer_not_answered_in_time_goes_back_to_its_place_and_on_to_the_next_agent(router, clock, offers):
    ana, bea = agent(router, "Ana"), agent(router, "Bea")
    router.make_available(ana.agent_id)
    first, _ = router.create_call(SPANISH_F)  # offered to Ana
    clock.advance(1)
    second, _ = router.create_call(SPANISH_F)  # waits behind
    clock.advance(20)
    router.make_available(bea.agent_id)  # takes the second (the first is Ana's offer)
    assert router.get_call(second.call_id).agent_id == bea.agent_id
    router.answered(second.call_id)
    clock.advance(1)

    missed = router.miss_expired_offers()
    assert [c.call_id for c in missed] == [first.call_id]
    back = router.get_call(first.call_id)
    assert back.status == CallStatus.WAITING and back.offer_sk is None
    assert back.wait_sk is not None and back.wait_sk.endswith(f"{first.arrived_at}#{first.call_id}")
    assert back.legs[-1]["agent_id"] == ana.agent_id and back.legs[-1]["how"] == "missed"
    assert back.why == []  # Ana is not "chosen" any more while it waits again
    ana_now = router.agents.get(ana.agent_id)
    assert (ana_now.status, ana_now.reason) == (AgentStatus.NOT_READY, MISSED)
    with pytest.raises(errors.Conflict, match="not answered in time"):
        router.answered(first.call_id)  # too late

    # The next fitting agent takes it, offered again.
    cid = agent(router, "Cid")
    taken = router.make_available(cid.agent_id)
    assert taken.call.call_id == first.call_id and taken.call.offer_sk
    router.answered(first.call_id)
    assert today(router).answered == 2


def test_an_offered_call_that_ends_while_it_rings_is_abandoned_and_leaves_no_offer_behind(router, clock, offers):
    """The caller hung up before the agent picked up: abandoned, as in the line (Amazon
    Connect counts a contact that leaves before it is connected to an agent so), never a
    call taken or talked."""
    ana = agent(router, "Ana")
    router.make_available(ana.agent_id)
    call, _ = router.create_call(SPANISH_F)
    assert router.agents.get(ana.agent_id).status == AgentStatus.RINGING
    clock.advance(7)
    outcome = router.end_call(call.call_id, then="offline")
    assert outcome.agent.status == AgentStatus.OFFLINE
    left = router.get_call(call.call_id)
    assert (left.status, left.agent_id, left.offer_sk, left.answered_at) == (CallStatus.ABANDONED, None, None, None)
    assert [(part["agent_name"], part["how"]) for part in left.legs] == [("Ana", "rang")]
    assert 7 <= left.waited_seconds < 8  # it waited until the caller hung up, ringing included
    assert router.end_call(call.call_id, then="offline").replayed  # the hang-up sent again
    clock.advance(30)
    assert router.miss_expired_offers() == []
    figures = today(router)
    assert (figures.answered, figures.abandoned, figures.handled) == (0, 1, 0)


def test_a_ringing_agent_is_attending_once_they_pick_up(router, clock, offers):
    ana = agent(router, "Ana")
    router.make_available(ana.agent_id)
    call, _ = router.create_call(SPANISH_F)
    ringing = router.agents.get(ana.agent_id)
    assert (ringing.status, ringing.call_id, ringing.status_label) == (AgentStatus.RINGING, call.call_id, "Ringing")
    assert router.get_call(call.call_id).state == CallStatus.OFFERED
    assert router.set_not_ready(ana.agent_id, "break").agent.next_status == "not_ready"  # kept for the call's end
    clock.advance(4)
    router.answered(call.call_id)
    picked = router.agents.get(ana.agent_id)
    assert (picked.status, picked.call_id, picked.next_label) == (
        AgentStatus.ATTENDING,
        call.call_id,
        "Break after this call",
    )
    assert picked.status_since.startswith("2026-11-25T14:00:04.")  # attending since the answer
    assert router.get_call(call.call_id).state == CallStatus.ASSIGNED


# --- transfers ----------------------------------------------------------------------------


def test_a_transfer_to_new_preferences_keeps_the_arrival_and_each_leg(router, clock):
    ana, bea = agent(router, "Ana"), agent(router, "Bea", "English", "M")
    router.make_available(ana.agent_id)
    router.make_available(bea.agent_id)
    call, _ = router.create_call(SPANISH_F)
    assert call.agent_id == ana.agent_id
    clock.advance(60)
    outcome = router.transfer(Transfer(call.call_id, preferences=ENGLISH_ANY, then="wrap_up"))
    assert outcome.agent.status == AgentStatus.WRAP_UP
    moved = outcome.call
    assert (moved.status, moved.agent_id, moved.arrived_at) == (CallStatus.ASSIGNED, bea.agent_id, call.arrived_at)
    assert [(leg["agent_name"], leg["how"]) for leg in moved.legs] == [("Ana", "transferred")]
    assert moved.legs[0]["from"] == call.assigned_at and moved.legs[0]["to"].startswith("2026-11-25T14:01:00.")
    assert moved.asked_for == SPANISH_F  # what the caller first asked for
    # Its wait ended when Ana answered it: a minute with her is not waiting.
    assert moved.waited_seconds < 1 and moved.answered_at == call.assigned_at
    clock.advance(30)
    router.release(bea.agent_id, then="offline")
    ended = router.get_call(call.call_id)
    assert [(leg["agent_name"], leg["how"]) for leg in ended.legs] == [("Ana", "transferred"), ("Bea", "ended")]
    figures = today(router)
    assert (figures.answered, figures.handled, round(figures.handle_sum)) == (1, 1, 90)  # answered once, 90 s in all


def test_a_transfer_with_nobody_free_waits_at_its_original_place(router, clock):
    ana = agent(router, "Ana")
    router.make_available(ana.agent_id)
    call, _ = router.create_call(SPANISH_F)
    clock.advance(10)
    outcome = router.transfer(Transfer(call.call_id, preferences={"language": "French", "gender": "X"}, then="queue"))
    assert outcome.agent.status == AgentStatus.QUEUED
    waiting = router.get_call(call.call_id)
    assert waiting.status == CallStatus.WAITING and waiting.wait_sk.endswith(f"{call.arrived_at}#{call.call_id}")


def test_a_transfer_to_a_named_agent_needs_them_queued(router):
    ana, bea, cid = agent(router, "Ana"), agent(router, "Bea"), agent(router, "Cid")
    router.make_available(ana.agent_id)
    call, _ = router.create_call(SPANISH_F)
    with pytest.raises(errors.Conflict, match="queued agent"):
        router.transfer(Transfer(call.call_id, agent_id=bea.agent_id))  # offline
    router.make_available(bea.agent_id)
    router.make_available(cid.agent_id)
    outcome = router.transfer(
        Transfer(call.call_id, agent_id=cid.agent_id, then="offline")
    )  # Cid, not Bea ahead of him
    assert outcome.call.agent_id == cid.agent_id
    with pytest.raises(errors.InvalidRequest):
        router.transfer(Transfer(call.call_id, agent_id=cid.agent_id, preferences=SPANISH_F))
    waiting, _ = router.create_call(SPANISH_F)  # Bea takes it: nobody is left
    router.release(bea.agent_id, then="offline")
    with pytest.raises(errors.Conflict, match="in progress"):
        router.transfer(Transfer(waiting.call_id, preferences=SPANISH_F))  # ended


def test_a_call_assigned_before_answers_were_kept_is_not_answered_again_when_transferred(router):
    ana, bea = agent(router, "Ana"), agent(router, "Bea", "English", "M")
    router.make_available(ana.agent_id)
    router.make_available(bea.agent_id)
    call, _ = router.create_call(SPANISH_F)
    # As an earlier version left it: no answered_at on the record.
    router.db.call(
        "update_item",
        TableName=router.db.table("callcenter"),
        Key={"pk": {"S": f"CALL#{call.call_id}"}, "sk": {"S": "CALL"}},
        UpdateExpression="REMOVE answered_at",
    )
    moved = router.transfer(Transfer(call.call_id, preferences=ENGLISH_ANY)).call
    assert moved.agent_id == bea.agent_id and moved.answered_at == call.assigned_at
    assert today(router).answered == 1  # the first assignment's, not the transfer's
