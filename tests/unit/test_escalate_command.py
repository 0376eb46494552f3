import io
import time

from django.core.management import call_command

from queues_app.agents.records import CallStatus
from queues_app.agents.roster import Agents
from queues_app.agents.router import Router


def test_it_relaxes_long_waiting_callers_and_assigns_them(moto_db, settings):
    settings.SWITCHBOARD_ESCALATION = {"after_seconds": 0.01, "order": ["gender"]}
    router = Router()
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
    router = Router()
    call, _ = router.create_call({"language": "Spanish", "gender": "F"})
    out = io.StringIO()
    call_command("escalate_callers", stdout=out)
    assert out.getvalue() == ""
    assert router.get_call(call.call_id).preferences == {"language": "Spanish", "gender": "F"}
