"""switchboard_client against the real API on moto: each request goes through Django's
test client (an httpx transport over it), so paths, bodies, content types, answers and
typed errors are those of the application itself."""

import base64

import pytest

import switchboard_client as sc
from queues_app.admission import BackpressureGate
from queues_app.centre.call_center import CallCenter
from queues_app.models import ApiToken
from queues_app.shipments.queue import ShipmentQueue
from tests.helpers.api import agent
from tests.helpers.transport import DjangoTransport


@pytest.fixture
def waits():
    return []


@pytest.fixture
def switchboard(moto_db, supervisor, waits):
    token = ApiToken.issue(supervisor, "phone system")[1]
    with sc.Switchboard(
        "http://testserver", token, transport=DjangoTransport(), sleep=waits.append, jitter=lambda: 1.0
    ) as client:
        yield client


@pytest.fixture(autouse=True)
def fresh_gate():
    BackpressureGate.forget()
    yield
    BackpressureGate.forget()


def test_a_call_is_placed_assigned_and_the_agent_released(switchboard):
    ana = agent("Ana", ["French"], "F")
    assert switchboard.make_available(ana.agent_id, ana.version)["call"] is None
    call = switchboard.create_call({"language": "French"})
    assert (call["status"], call["agent_id"]) == ("assigned", ana.agent_id)
    assert switchboard.get_call(call["call_id"])["agent_id"] == ana.agent_id
    assert [c["call_id"] for c in switchboard.iter_calls("assigned")] == [call["call_id"]]
    released = switchboard.release(ana.agent_id, call["call_id"], then="wrap_up")
    assert released["agent"]["status"] == "wrap_up"
    assert switchboard.get_call(call["call_id"])["status"] == "ended"
    # Sent again (its answer lost on the way back): answered as it was; nothing changes.
    assert switchboard.release(ana.agent_id, call["call_id"], then="wrap_up") == released
    # Made available, she takes the next caller; ending that call by its id queues her again.
    again = switchboard.make_available(ana.agent_id, released["agent"]["version"])
    assert again["agent"]["status"] == "queued"
    second = switchboard.create_call({"language": "French"})
    ended = switchboard.end_call(second["call_id"])
    assert (ended["agent"]["status"], ended["call"]) == ("queued", None)


def test_not_ready_an_offer_picked_up_and_a_transfer(switchboard, settings):
    settings.ANSWER_TIMEOUT_SECONDS = 20
    ana, bea = agent("Ana", ["French"], "F"), agent("Bea", ["English"], "F")
    away = switchboard.set_not_ready(ana.agent_id, ana.version, "break")["agent"]
    assert (away["status"], away["reason"]) == ("not_ready", "break")
    beat = switchboard.heartbeat(ana.agent_id)
    assert (beat["agent_id"], beat["status"], beat["presence_seconds"]) == (ana.agent_id, "not_ready", None)
    switchboard.make_available(ana.agent_id, away["version"])
    switchboard.make_available(bea.agent_id, bea.version)
    call = switchboard.create_call({"language": "French"})
    assert call["answer_by"] and call["answered_at"] is None
    with pytest.raises(sc.Conflict, match="not to that agent: an offer to them ran out or was never made"):
        switchboard.answered(call["call_id"], agent_id=bea.agent_id)  # it rings for Ana
    assert switchboard.answered(call["call_id"], agent_id=ana.agent_id)["answered_at"]
    moved = switchboard.transfer(
        call["call_id"], from_agent_id=ana.agent_id, preferences={"language": "English"}, then="wrap_up"
    )
    assert (moved["agent"]["status"], moved["call"]["agent_name"]) == ("wrap_up", "Bea")
    with pytest.raises(ValueError):
        switchboard.transfer(call["call_id"], from_agent_id=ana.agent_id)


def test_a_waiting_caller_is_called_back_at_their_turn(switchboard):
    call = switchboard.create_call({"language": "French"})
    asked = switchboard.request_callback(call["call_id"], "+33612345678")
    assert asked["status"] == "callback_waiting" and asked["callback"]["number"] == "+33612345678"
    again = switchboard.request_callback(call["call_id"], "+33612345678")  # sent again: as it was
    assert {**again, "waited_seconds": None} == {**asked, "waited_seconds": None}
    with pytest.raises(sc.Conflict):
        switchboard.callback_result(call["call_id"], "busy")  # no agent reserved yet
    ana = agent("Ana", ["French"], "F")
    switchboard.make_available(ana.agent_id, ana.version)
    due = switchboard.get_call(call["call_id"])
    assert (due["status"], due["agent_id"]) == ("callback_due", ana.agent_id)
    reached = switchboard.callback_result(call["call_id"], "connected", attempt=1, agent_id=ana.agent_id)
    assert (reached["status"], reached["agent_id"]) == ("assigned", ana.agent_id)


def test_the_waiting_line_is_read_page_after_page(switchboard):
    placed = [switchboard.create_call({"language": "Spanish"})["call_id"] for _ in range(3)]
    page = switchboard.list_calls("waiting", limit=2)
    assert len(page["calls"]) == 2 and page["next_cursor"]
    assert [c["call_id"] for c in switchboard.iter_calls("waiting", limit=2)] == placed


def test_a_callback_is_set_read_and_removed_and_hears_of_the_calls(switchboard, settings):
    settings.SWITCHBOARD_CALLBACK_ALLOW_HTTP = False
    with pytest.raises(sc.InvalidInput) as refused:
        switchboard.set_callback("http://phones.example.com/events")
    assert "url" in refused.value.fields
    mine = "whsec_" + base64.b64encode(b"k" * 24).decode()
    assert switchboard.set_callback("https://phones.example.com/events", secret=mine)["secret"] == mine
    rotated = switchboard.set_callback("https://phones.example.com/events", rotate=True)
    assert rotated["secret"] != mine and rotated["previous_secret_until"]
    assert switchboard.get_callback()["url"] == "https://phones.example.com/events"
    call = switchboard.create_call({"language": "Spanish"})
    switchboard.abandon_call(call["call_id"])
    [event] = ShipmentQueue().list_queue("callbacks").items
    assert (event.data["event"]["type"], event.data["event"]["call"]["call_id"]) == ("call.abandoned", call["call_id"])
    assert switchboard.remove_callback()["url"] is None


def test_a_given_idempotency_key_makes_one_call(switchboard):
    first = switchboard.create_call({}, idempotency_key="pbx-7")
    again = switchboard.create_call({}, idempotency_key="pbx-7")
    assert first["call_id"] == again["call_id"]
    assert len(CallCenter().line.waiting_calls()[0]) == 1


def test_refusals_arrive_as_typed_errors_with_the_problem(switchboard):
    with pytest.raises(sc.NotFound):
        switchboard.get_agent("nobody")
    with pytest.raises(sc.InvalidInput) as raised:
        switchboard.create_call({"language": "Klingon"})
    assert set(raised.value.fields) == {"language"}
    ana = agent("Ana", ["French"], "F")
    queued = switchboard.make_available(ana.agent_id, ana.version)["agent"]
    switchboard.log_off(ana.agent_id, queued["version"])
    with pytest.raises(sc.Conflict) as stale:
        switchboard.make_available(ana.agent_id, ana.version)  # she changed since that version
    assert stale.value.current["agent"]["status"] == "offline"
    with pytest.raises(sc.KeyReused) as reused:
        switchboard.create_call({}, idempotency_key="pbx-1")
        switchboard.create_call({"language": "French"}, idempotency_key="pbx-1")
    assert "Idempotency-Key" in reused.value.fields
    with pytest.raises(sc.InvalidInput) as raised:
        switchboard.list_agents(skill="language:Klingon")
    assert "English, French, Spanish" in raised.value.fields["skill"]


def test_backpressure_is_retried_after_retry_after_then_raised(switchboard, waits, settings):
    switchboard.create_call({})
    settings.SWITCHBOARD_FAIRNESS = {
        **settings.SWITCHBOARD_FAIRNESS,
        "depth_cache_seconds": 0,
        "backlog_bounds": {"calls": 0, "live": 100},
        "retry_after_seconds": 3,
    }
    switchboard.max_retries = 2
    with pytest.raises(sc.Backpressure):
        switchboard.create_call({"language": "French"})
    assert waits == [3.0, 3.0]


def test_agents_are_listed_by_status_and_read_one_by_one(switchboard):
    ana, bob = agent("Ana", ["French"], "F"), agent("Bob", ["English"], "M")
    queued = switchboard.make_available(ana.agent_id, ana.version)["agent"]
    assert [a["agent_id"] for a in switchboard.iter_agents(status="queued")] == [ana.agent_id]
    assert switchboard.get_agent(bob.agent_id)["name"] == "Bob"
    assert switchboard.log_off(ana.agent_id, queued["version"])["agent"]["status"] == "offline"


def test_an_agent_is_added_once_under_its_own_id_and_changed_from_its_version(switchboard):
    skills = {"language": ["French"], "gender": ["X"]}
    made = switchboard.create_agent("Cy", skills, agent_id="cy-1")
    assert (made["agent_id"], made["status"], made["version"]) == ("cy-1", "offline", 1)
    assert switchboard.create_agent("Cy", skills, agent_id="cy-1") == made  # a retry
    with pytest.raises(sc.Conflict):
        switchboard.create_agent("Someone else", skills, agent_id="cy-1")
    changed = switchboard.change_agent("cy-1", 1, skills={"language": ["French", "Spanish"], "gender": ["X"]})
    assert changed["skills"]["language"] == ["French", "Spanish"] and changed["version"] == 2
    with pytest.raises(sc.Conflict):
        switchboard.change_agent("cy-1", 1, name="Stale")


def test_a_shipment_is_enqueued_and_read_with_its_failures(switchboard):
    created = switchboard.create_shipment({"to": "Porto"}, tenant="acme", priority=2)
    queue = ShipmentQueue()
    queue.fail(created["shipment_id"], queue.receive().receipt, "label printer offline")
    shipment = switchboard.get_shipment(created["shipment_id"])
    assert shipment["receive_count"] == 1
    assert [f["reason"] for f in shipment["failures"]] == ["label printer offline"]


def load_example():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "phone_system.py"
    spec = importlib.util.spec_from_file_location("phone_system_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_phone_system_example_places_a_caller_and_releases_the_agent(moto_db, supervisor, capsys, monkeypatch):
    example = load_example()
    monkeypatch.setattr(
        example, "Switchboard", lambda url, token: sc.Switchboard(url, token, transport=DjangoTransport())
    )
    token = ApiToken.issue(supervisor, "phone system")[1]
    ana = agent("Ana", ["Spanish"], "F")
    CallCenter().make_available(ana.agent_id)
    code = example.main(
        ["--url", "http://testserver", "--token", token, "--language", "Spanish", "--talk-seconds", "0"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "agent Ana" in out and "Ana is queued" in out
    assert CallCenter().agents.get(ana.agent_id).status == "queued"


def test_the_phone_system_example_says_when_the_api_refuses(moto_db, supervisor, capsys, monkeypatch):
    example = load_example()
    monkeypatch.setattr(
        example, "Switchboard", lambda url, token: sc.Switchboard(url, token, transport=DjangoTransport())
    )
    token = ApiToken.issue(supervisor, "phone system")[1]
    assert example.main(["--url", "http://testserver", "--token", token, "--language", "Klingon"]) == 2
    assert "language" in capsys.readouterr().err
