"""`manage.py demo_load` (what `make demo` adds): callers arrive, calls end after their
handle time and the agents queue again, shipments and tasks come in; DynamoDB trouble
pauses it longer each time, never a traceback; bad options are refused."""

import io
import threading
from types import SimpleNamespace

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.management.commands import demo_load
from queues_app.shipments.queue import ShipmentQueue
from queues_app.tasks.queue import TaskQueue, TaskStatus


class VirtualSeconds:
    """The demo load's clock in a test: its waits move it on instead of sleeping, so that
    a run of a few seconds does as much however fast the machine is."""

    def __init__(self):
        self.now = 0.0

    def monotonic(self):
        return self.now


@pytest.fixture
def virtual_seconds(monkeypatch):
    seconds = VirtualSeconds()

    class Tick(threading.Event):
        def wait(self, timeout=None):
            seconds.now += timeout or 0.0
            return self.is_set()

    class OnTheVirtualClock(demo_load.Traffic):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, clock=seconds.monotonic, **kwargs)

    monkeypatch.setattr(demo_load, "time", SimpleNamespace(monotonic=seconds.monotonic))  # --max-seconds
    monkeypatch.setattr(demo_load, "threading", SimpleNamespace(Event=Tick))  # the load's stop event only
    monkeypatch.setattr(demo_load, "Traffic", OnTheVirtualClock)  # arrivals and handle times
    return seconds


def test_a_short_run_brings_callers_ends_calls_and_queues_the_agents_again(moto_db, virtual_seconds):
    router = CallCenter()
    every_skill = {name: list(values) for name, values in router.catalog.dimensions}
    anyone = {name: None for name, _ in router.catalog.dimensions}
    busy = Agents().create("Ada", every_skill)
    router.make_available(busy.agent_id)
    earlier, _ = router.create_call(anyone)  # on a call before the load starts
    assert earlier.agent_id == busy.agent_id
    free = Agents().create("Bo", every_skill)
    router.make_available(free.agent_id)

    out = io.StringIO()
    # Per minute, on the load's clock: each arrival is made however long it takes.
    call_command(
        "demo_load",
        *["--rate", "120", "--handle-seconds", "0.1", "0.3", "--shipment-rate", "60", "--task-rate", "60"],
        *["--seed", "7", "--max-seconds", "3"],
        stdout=out,
    )

    trail = AuditTrail().recent(limit=500, max_reads=50).entries
    earlier_target = target("call", earlier.call_id)
    new = {e.target for e in trail if e.target.startswith("call:") and e.target != earlier_target}
    assert len(new) >= 2  # callers arrived
    # A call the load saw assigned ended after its handle time; so did the one it found on.
    ended = {e.target for e in trail if e.action == "call.end" and e.target != earlier_target}
    assert ended
    assert {router.get_call(t.removeprefix("call:")).status for t in ended} == {CallStatus.ENDED}
    assert router.get_call(earlier.call_id).status == CallStatus.ENDED
    # Ended through the audited operations, by the demo's system actor.
    history = AuditTrail().for_target(target("call", earlier.call_id)).entries
    assert [(e.action, e.actor, e.source) for e in history if e.action == "call.end"] == [
        ("call.end", "demo load", "system")
    ]
    # Released agents queue again (or took the next caller): none left out of work.
    for agent in Agents().get_many([busy.agent_id, free.agent_id]):
        assert agent.status in (AgentStatus.QUEUED, AgentStatus.ATTENDING)
    assert ShipmentQueue().counts().queued >= 1
    assert TaskQueue().count(TaskStatus.PENDING)[0] >= 1
    assert "Demo load stopped:" in out.getvalue()
    assert virtual_seconds.now == pytest.approx(3.0)  # three seconds of the load, on its clock


def test_at_rate_0_no_caller_comes_and_a_simulated_days_agent_is_left_to_its_player(moto_db, virtual_seconds):
    router = CallCenter()
    every_skill = {name: list(values) for name, values in router.catalog.dimensions}
    anyone = {name: None for name, _ in router.catalog.dimensions}
    simulated = Agents().create("Simulated agent 1", every_skill, agent_id="sim-1")
    router.make_available(simulated.agent_id)
    theirs, _ = router.create_call(anyone)  # the simulated day's player ends it, not the load
    ours = Agents().create("Ada", every_skill)
    router.make_available(ours.agent_id)
    mine, _ = router.create_call(anyone)
    call_command(
        "demo_load",
        *["--rate", "0", "--handle-seconds", "0.1", "0.3", "--shipment-rate", "0", "--task-rate", "0"],
        *["--seed", "7", "--max-seconds", "30"],
        stdout=io.StringIO(),
    )
    assert router.get_call(theirs.call_id).status == CallStatus.ASSIGNED
    assert router.get_call(mine.call_id).status == CallStatus.ENDED
    calls = {e.target for e in AuditTrail().recent(limit=500, max_reads=50).entries if e.action == "call.create"}
    assert calls == set()  # no caller placed by the load


def test_with_offers_on_the_load_picks_up_each_call_after_a_ring_or_two(moto_db, virtual_seconds, settings):
    settings.ANSWER_TIMEOUT_SECONDS = 10
    router = CallCenter()
    every_skill = {name: list(values) for name, values in router.catalog.dimensions}
    anyone = {name: None for name, _ in router.catalog.dimensions}
    seeded = Agents().create("Ada", every_skill)
    router.make_available(seeded.agent_id)
    earlier, _ = router.create_call(anyone)  # offered before the load starts: it finds it ringing
    assert Agents().get(seeded.agent_id).status == AgentStatus.RINGING
    for name in ("Bo", "Cy"):
        router.make_available(Agents().create(name, every_skill).agent_id)
    call_command(
        "demo_load",
        *["--rate", "60", "--handle-seconds", "30", "40", "--shipment-rate", "0", "--task-rate", "0"],
        *["--seed", "3", "--max-seconds", "8"],
        stdout=io.StringIO(),
    )
    assert router.get_call(earlier.call_id).answered_at is not None
    answered = [e for e in AuditTrail().recent(limit=500, max_reads=50).entries if e.action == "call.answered"]
    assert len(answered) >= 2 and {e.actor for e in answered} == {"demo load"}
    statuses = {a.status for a in Agents().list(limit=10).items}
    assert AgentStatus.NOT_READY not in statuses  # no offer missed: nobody "Not ready: missed"


class Waits(threading.Event):
    """Stands in for the stop event: records each wait, returns at once, and stops the
    load after `Waits.limit` of them."""

    limit = 7
    seen: list[float] = []

    def wait(self, timeout=None):
        Waits.seen.append(timeout)
        if len(Waits.seen) >= Waits.limit:
            self.set()
        return self.is_set()


@pytest.fixture
def waits(monkeypatch):
    Waits.seen = []
    # Only the load's own stop event: every thread start waits on a threading.Event too,
    # and the load's reads of a status's partitions run on threads.
    monkeypatch.setattr(demo_load, "threading", SimpleNamespace(Event=Waits))
    return Waits.seen


def test_without_tables_it_says_so_and_waits_longer_each_time_up_to_30_seconds(moto_empty, waits):
    out, err = io.StringIO(), io.StringIO()
    call_command("demo_load", "--max-seconds", "3600", stdout=out, stderr=err)
    assert waits == [1, 2, 4, 8, 16, 30, 30]
    lines = err.getvalue().splitlines()
    assert len(lines) == 7
    assert lines[0].startswith("demo load: DynamoDB table 'test-callcenter' does not exist")
    assert lines[0].endswith("; create the tables with `python manage.py dynamo_tables create`; trying again in 1 s")
    assert lines[-1].endswith("trying again in 30 s")
    assert "Traceback" not in err.getvalue() + out.getvalue()
    assert "Demo load stopped: 0 callers" in out.getvalue()


def test_the_pause_starts_over_once_dynamodb_answers(moto_db, waits, monkeypatch):
    outage = errors.Unavailable("DynamoDB request failed: connection refused")
    script = [outage, outage, 5.0, outage, errors.Throttled("slow down"), 2.5, outage]

    def step(self):
        result = script.pop(0)
        if isinstance(result, Exception):
            raise result
        return result

    monkeypatch.setattr(demo_load.Traffic, "step", step)
    err = io.StringIO()
    call_command("demo_load", "--max-seconds", "3600", stdout=io.StringIO(), stderr=err)
    assert waits == [1, 2, 5.0, 1, 2, 2.5, 1]
    assert "demo load: slow down (endpoint: " in err.getvalue()


def test_an_agent_released_elsewhere_is_left_alone(moto_db, waits, monkeypatch):
    """A supervisor ended the call first: the load's release meets a Conflict, drops the
    agent and goes on (no pause, nothing on stderr)."""
    router = CallCenter()
    every_skill = {name: list(values) for name, values in router.catalog.dimensions}
    ada = Agents().create("Ada", every_skill)
    router.make_available(ada.agent_id)
    call, _ = router.create_call({name: None for name, _ in router.catalog.dimensions})
    out, err = io.StringIO(), io.StringIO()
    Waits.limit = 3
    try:
        original = demo_load.Traffic._look_for_calls

        def look_then_release_elsewhere(self, now):
            original(self, now)
            if ada.agent_id in self.on_call:
                router.release(ada.agent_id, then="wrap_up")  # the supervisor's release
                self.on_call[ada.agent_id] = now  # due at once

        monkeypatch.setattr(demo_load.Traffic, "_look_for_calls", look_then_release_elsewhere)
        call_command(
            "demo_load",
            *["--rate", "0.001", "--shipment-rate", "0", "--task-rate", "0", "--max-seconds", "3600", "-v", "2"],
            stdout=out,
            stderr=err,
        )
    finally:
        Waits.limit = 7
    assert f"agent {ada.agent_id} left alone: Ada is not on a call." in out.getvalue()
    assert err.getvalue() == ""
    assert Agents().get(ada.agent_id).status == AgentStatus.WRAP_UP  # not queued by the load
    assert router.get_call(call.call_id).status == CallStatus.ENDED


BAD = [
    (["--rate", "-1"], "argument --rate: expected a number from 0 to 6000, got '-1'"),
    (["--rate", "many"], "argument --rate: expected a number from 0"),
    (["--handle-seconds", "5", "1"], "--handle-seconds 5 1: LOW must not be above HIGH."),
    (["--handle-seconds", "-1", "3"], "argument --handle-seconds: expected a number of at least 0, got '-1'"),
    (["--handle-seconds", "1"], "argument --handle-seconds: expected 2 arguments"),
    (["--shipment-rate", "-1"], "argument --shipment-rate: expected a number from 0 to 6000, got '-1'"),
    (["--task-rate", "nan"], "argument --task-rate: expected a number from 0 to 6000, got 'nan'"),
    (["--seed", "abc"], "argument --seed: expected a whole number, got 'abc'"),
    (["--max-seconds", "0"], "argument --max-seconds: expected a number above 0"),
]


@pytest.mark.parametrize(("args", "reason"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_a_bad_option_is_refused_with_its_reason(moto_db, waits, args, reason):
    # Were the check to go, the run would end at once (one wait) and the test fail.
    Waits.limit = 1
    try:
        with pytest.raises(CommandError) as caught:
            call_command("demo_load", *args, stdout=io.StringIO(), stderr=io.StringIO())
    finally:
        Waits.limit = 7
    assert reason in str(caught.value)
    assert waits == []  # refused before anything ran


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"handle_seconds": [3, 1]}, "LOW must not be above HIGH"),
        ({"handle_seconds": [1]}, "--handle-seconds takes two numbers: LOW HIGH."),
        ({"handle_seconds": [1, -2]}, "argument --handle-seconds: expected a number of at least 0"),
        ({"rate": -1}, "argument --rate"),
    ],
)
def test_keyword_options_get_the_same_checks(moto_db, waits, options, reason):
    Waits.limit = 1
    try:
        with pytest.raises(CommandError, match=reason):
            call_command("demo_load", stdout=io.StringIO(), **options)
    finally:
        Waits.limit = 7
    assert waits == []


def test_with_presence_on_the_demo_agents_clients_send_heartbeats(moto_db, virtual_seconds, settings):
    settings.AGENT_PRESENCE_SECONDS = 30
    every_skill = {name: list(values) for name, values in CallCenter().catalog.dimensions}
    queued = Agents().create("Ada", every_skill)
    CallCenter().make_available(queued.agent_id)
    resting = Agents().create("Bo", every_skill)  # logged off: no client to hear from
    call_command("demo_load", *["--rate", "0.1", "--seed", "3", "--max-seconds", "25"], stdout=io.StringIO())
    assert Agents().get(queued.agent_id).seen_at is not None
    assert Agents().get(resting.agent_id).seen_at is None
