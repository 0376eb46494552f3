"""The matching dispatcher's process reuses the queues' heads it read a moment ago for its
next new callers' first look (`matching.remember_heads`): fewer Queries, the same order;
an agent taken by another process since is found out by its conditioned write and the
queues read again, in order; and every other process reads each time."""

from contextlib import contextmanager
from types import SimpleNamespace

import pytest

from queues_app.calls.records import CallStatus
from queues_app.centre import keys
from queues_app.routing import matching
from queues_app.routing import queues as queues_module
from tests.helpers.clock import Moments
from tests.unit.test_sub_queues import make_router, queue_agents, violations

ENGLISH_F = {"language": "English", "gender": "F"}


@pytest.fixture
def remembering(monkeypatch):
    clock = Moments()
    monkeypatch.setattr(queues_module, "time", SimpleNamespace(monotonic=clock.monotonic))
    matching.remember_heads()
    yield clock
    matching.remember_heads(0)


@contextmanager
def queue_reads(db):
    """The Queries of the agents' queues (their sub-queues) made in the block."""
    read: list[str] = []

    def note(params, model, **kwargs):
        values = params.get("ExpressionAttributeValues") or {}
        if model.name == "Query" and values.get(":pk", {}).get("S", "").startswith(keys.QUEUE_PREFIX):
            read.append(values[":pk"]["S"])

    db.client.meta.events.register("provide-client-params.dynamodb", note)
    try:
        yield read
    finally:
        db.client.meta.events.unregister("provide-client-params.dynamodb", note)


def test_callers_within_the_period_reuse_the_heads_read_and_keep_the_queue_order(moto_db, clock, remembering):
    router = make_router(moto_db, clock)
    queued = queue_agents(router, 6)
    with queue_reads(moto_db) as seen:
        first, _ = router.create_call(ENGLISH_F)
    assert first.agent_id == queued[0].agent_id and len(seen) == keys.QUEUE_SPLIT
    for expected in queued[1:]:
        with queue_reads(moto_db) as seen:
            call, _ = router.create_call(ENGLISH_F)
        assert call.agent_id == expected.agent_id  # the next in line, from the heads remembered
        assert len(seen) == 0
    # Nobody left in what was read: the queue is read again, and the caller waits.
    with queue_reads(moto_db) as seen:
        waiting, _ = router.create_call(ENGLISH_F)
    assert waiting.status == CallStatus.WAITING and len(seen) > 0
    assert violations(router) == []


def test_heads_older_than_the_period_are_read_again(moto_db, clock, remembering):
    router = make_router(moto_db, clock)
    queued = queue_agents(router, 3)
    router.create_call(ENGLISH_F)
    remembering.advance(matching.SHARED_READ_AGE + 0.1)
    with queue_reads(moto_db) as seen:
        call, _ = router.create_call(ENGLISH_F)
    assert call.agent_id == queued[1].agent_id and len(seen) == keys.QUEUE_SPLIT


def test_an_agent_taken_by_another_process_is_found_out_and_the_queues_read_again_in_order(moto_db, clock, remembering):
    router = make_router(moto_db, clock)
    queued = queue_agents(router, 4)
    router.create_call(ENGLISH_F)  # queued[0]; the others remembered
    router.log_off(queued[1].agent_id)  # out of the queue behind this process's back (a supervisor)
    contended = matching._contention.contended
    with queue_reads(moto_db) as seen:
        call, _ = router.create_call(ENGLISH_F)
    assert call.agent_id == queued[2].agent_id  # the next in line, not a shuffled one
    assert len(seen) == keys.QUEUE_SPLIT  # read again once the remembered one failed
    assert [w["outcome"] for w in call.why][:2] == ["chosen", "taken"]
    assert matching._contention.contended == contended  # not counted as a race lost here
    assert violations(router) == []


def test_a_process_that_does_not_remember_reads_the_queues_for_every_caller(moto_db, clock):
    router = make_router(moto_db, clock)
    queue_agents(router, 3)
    for _ in range(2):
        with queue_reads(moto_db) as seen:
            router.create_call(ENGLISH_F)
        assert len(seen) == keys.QUEUE_SPLIT
