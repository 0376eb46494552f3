"""Matching past one process (SWITCHBOARD_MATCHING_SHARDS): each shard of new callers has
a lease of its own; a matcher answers only for the shards whose lease it holds, and a web
worker asks each caller's shard's holder."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.calls.records import Call
from queues_app.calls.store import call_to_item
from queues_app.routing import dispatch


def caller(call_id: str = "c1", *, line: str | None = None, language: str = "English") -> Call:
    return Call(
        call_id=call_id,
        status="waiting",
        preferences={"language": language, "gender": None},
        arrived_at="2026-11-29T10:00:00+00:00",
        line=line,
    )


def signed(call: Call) -> bytes:
    return dispatch.signer().sign(json.dumps(call_to_item(call), default=str)).encode()


def line_in_shard(shard: int, shards: int = 2) -> str:
    return next(f"line-{n}" for n in range(100) if dispatch.shard_of(caller(line=f"line-{n}"), shards) == shard)


def test_a_line_and_a_set_of_preferences_are_always_in_one_shard():
    assert {dispatch.shard_of(caller(line=f"line-{n}"), 1) for n in range(20)} == {0}
    assert {dispatch.shard_of(caller(line=f"line-{n}"), 4) for n in range(40)} == {0, 1, 2, 3}
    assert dispatch.shard_of(caller("a", line="sales"), 4) == dispatch.shard_of(caller("b", line="sales"), 4)
    # A centre of one line (every caller on `main`) still spreads, by the callers' preferences.
    languages = [f"language-{n}" for n in range(40)]
    assert {dispatch.shard_of(caller(line="main", language=language), 4) for language in languages} == {0, 1, 2, 3}
    french = [dispatch.shard_of(caller(c, line="main", language="French"), 4) for c in ("a", "b")]
    assert french[0] == french[1]
    assert dispatch.lease_name(0) == dispatch.LEASE_NAME and dispatch.lease_name(3) == f"{dispatch.LEASE_NAME}-3"


def test_a_matcher_answers_only_for_the_shards_it_holds(moto_db):
    matched: list[str] = []
    first = dispatch.Dispatcher(moto_db, lambda call: matched.append(call.call_id) or call, shards=[0], shard_count=2)
    second = dispatch.Dispatcher(moto_db, lambda call: call, shards=[1], shard_count=2)
    first.keep_lease(), second.keep_lease()
    assert first.held_shards == [0] and second.held_shards == [1]

    assert first.answer(signed(caller("mine", line=line_in_shard(0))))["call"]["call_id"] == "mine"
    assert first.answer(signed(caller("theirs", line=line_in_shard(1)))) == {"here": True}
    assert matched == ["mine"]
    assert dispatch.current_holder(moto_db, 1).holder == second.lease.holder


def test_a_matcher_of_every_shard_stands_by_and_takes_a_lease_given_up(moto_db):
    pinned = [dispatch.Dispatcher(moto_db, lambda call: call, shards=[k], shard_count=2) for k in (0, 1)]
    for matcher in pinned:
        matcher.keep_lease()
    clock = [100.0]
    spare = dispatch.Dispatcher(moto_db, lambda call: call, shard_count=2, clock=lambda: clock[0])
    pause = spare.keep_lease()
    assert spare.held_shards == [] and not spare.holding
    assert pause >= 0.5  # it tries again when the leases it saw run out, not at every turn

    pinned[1].stop()  # gives shard 1's lease up
    assert spare.keep_lease() > 0 and spare.held_shards == []  # not its turn yet
    clock[0] += 4.0  # past the 3 s lease it saw
    spare.keep_lease()
    assert spare.held_shards == [1]
    assert spare.answer(signed(caller("c", line=line_in_shard(1))))["call"]["call_id"] == "c"
    assert spare.answer(signed(caller("d", line=line_in_shard(0)))) == {"here": True}


def test_a_web_worker_asks_each_callers_shards_holder(moto_db):
    for shard, port in ((0, 4000), (1, 5000)):
        lease = dispatch.matching_lease(moto_db, holder=f"h{shard}", address=f"10.0.0.{shard + 1}:{port}", shard=shard)
        assert lease.acquire()
    client = dispatch.DispatchClient(moto_db, shards=2)
    assert client._holder_address(0) == "10.0.0.1:4000" and client._holder_address(1) == "10.0.0.2:5000"
    assert dispatch.DispatchClient(moto_db, shards=3)._holder_address(2) is None  # nobody holds it: matched here


def test_shards_not_of_the_deployment_are_refused(moto_db, settings):
    with pytest.raises(ValueError, match="not among"):
        dispatch.Dispatcher(moto_db, lambda call: call, shards=[2], shard_count=2)
    settings.SWITCHBOARD_MATCHING_SHARDS = 2
    with pytest.raises(CommandError, match=r"--shard 2: the deployment's callers are in 2 shards"):
        call_command("run_matcher", "--shard", "2", "--max-seconds", "1", stdout=io.StringIO())


def test_the_system_page_says_which_shards_a_matcher_holds(moto_db):
    from queues_app.management.commands.run_matcher import heartbeat_state

    one = dispatch.Dispatcher(moto_db, lambda call: call, shard_count=1)
    assert heartbeat_state(one) == "standing by"
    one.keep_lease()
    assert heartbeat_state(one) == "holding the lease"
    one.stop()  # shard 0's lease is the single one: given up

    pinned = dispatch.Dispatcher(moto_db, lambda call: call, shards=[1], shard_count=3)
    spare = dispatch.Dispatcher(moto_db, lambda call: call, shard_count=3)
    pinned.keep_lease()
    assert heartbeat_state(pinned) == "holding the lease of shard 1 (of 3)"
    assert heartbeat_state(spare) == "standing by for shards 0, 1, 2 (of 3)"
    spare.keep_lease()
    assert heartbeat_state(spare) == "holding the leases of shards 0, 2 (of 3)"
