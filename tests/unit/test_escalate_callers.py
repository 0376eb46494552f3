import io
import threading
import time
from types import SimpleNamespace

from django.core.management import call_command

from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.figures.heartbeats import workers
from queues_app.management import loops
from queues_app.routing.escalation import Escalator


def test_it_relaxes_long_waiting_callers_and_assigns_them(moto_db, settings):
    settings.SWITCHBOARD_ESCALATION = {"after_seconds": 0.01, "order": ["gender"]}
    router = CallCenter()
    call, _ = router.create_call({"language": "Spanish", "gender": "F"})
    assert call.status == CallStatus.WAITING
    carlos = Agents().create("Carlos", {"language": ["Spanish"], "gender": ["M"]})
    router.make_available(carlos.agent_id)
    time.sleep(0.05)
    out = io.StringIO()
    call_command("escalate_callers", stdout=out)
    assert (
        f"call {call.call_id}: relaxed gender; now language: Spanish, gender: any; assigned to Carlos" in out.getvalue()
    )
    assert router.get_call(call.call_id).agent_id == carlos.agent_id


def test_it_leaves_callers_who_have_not_waited_long(moto_db, settings):
    settings.SWITCHBOARD_ESCALATION = {"after_seconds": 3600, "order": ["gender"]}
    router = CallCenter()
    call, _ = router.create_call({"language": "Spanish", "gender": "F"})
    out = io.StringIO()
    call_command("escalate_callers", stdout=out)
    assert out.getvalue() == ""
    assert router.get_call(call.call_id).preferences == {"language": "Spanish", "gender": "F"}


class OnePass(threading.Event):
    def wait(self, timeout=None):
        self.set()
        return True


def test_once_is_a_single_pass(moto_db, settings, monkeypatch):
    settings.SWITCHBOARD_ESCALATION = {"after_seconds": 0.01, "order": ["gender"]}
    router = CallCenter()
    call, _ = router.create_call({"language": "Spanish", "gender": "F"})
    time.sleep(0.05)
    passes, waits = [], []
    escalate = Escalator.escalate
    monkeypatch.setattr(Escalator, "escalate", lambda self: passes.append(1) or escalate(self))

    class Counted(OnePass):  # a loop would wait here after its first pass, and then stop
        def wait(self, timeout=None):
            waits.append(timeout)
            return super().wait(timeout)

    monkeypatch.setattr(loops, "threading", SimpleNamespace(Event=Counted))  # the loop's Event only
    out = io.StringIO()
    # A repeat given by keyword (as a caller of call_command may) does not outweigh --once.
    call_command("escalate_callers", "--once", every=5, stdout=out)
    assert f"call {call.call_id}: relaxed gender; now language: Spanish, gender: any; still waiting" in out.getvalue()
    assert (len(passes), waits) == (1, [])  # one pass, and no wait for a next one
    assert workers(moto_db) == []  # nor the heartbeat of a loop


def test_a_failed_pass_in_a_loop_is_reported_and_the_loop_goes_on(moto_empty, monkeypatch):
    # No tables: every pass fails. Looping (--every), it says so and waits for the next
    # pass; a single pass would exit non-zero instead (tests/unit/test_commands_outcomes.py).
    waits = []

    class Counted(OnePass):
        def wait(self, timeout=None):
            waits.append(timeout)
            return super().wait(timeout)

    # The loop's own Event only: every thread pool made meanwhile keeps threading's.
    monkeypatch.setattr("queues_app.management.loops.threading", SimpleNamespace(Event=Counted))
    err = io.StringIO()
    call_command("escalate_callers", "--every", "2.5", stdout=io.StringIO(), stderr=err)
    assert "escalation pass failed: DynamoDB table 'test-callcenter' does not exist." in err.getvalue()
    assert waits == [2.5]
