"""Every change names the state it was decided on: a stale request (another tab, a page
left open) changes nothing and says what changed; the same request sent again after it
took effect (a retry whose answer was lost, a form posted twice) is answered as the first
was and changes nothing. On the API, the pages, the admin and the domain."""

import copy
import json
import re

import pytest
from django.test import Client
from django.urls import reverse

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.audit.store import AuditTrail
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.models import ApiToken
from queues_app.operations import Operations
from queues_app.operations.bulk import Seen
from queues_app.shipments.queue import ShipmentQueue, ShipmentState
from queues_app.shipments.records import ReceiptInvalid
from queues_app.tasks.queue import IllegalTransition, TaskQueue, TaskStatus
from tests.helpers.seen import shown, ticked, ticked_shipment

HTMX = {"HTTP_HX_REQUEST": "true"}
SPANISH = {"language": ["Spanish"], "gender": ["F"]}


@pytest.fixture
def api(supervisor, moto_db):
    token = ApiToken.issue(supervisor, "phone system")[1]
    client = Client()

    def post(path, body=None, **headers):
        data = "" if body is None else json.dumps(body)
        return client.post(
            path, data=data, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}", **headers
        )

    return post


def spanish_agent(name="Ana"):
    return Agents().create(name, SPANISH)


def on_a_call(name="Ana"):
    """An agent attending a Spanish caller: (agent as now, the call)."""
    agent = spanish_agent(name)
    CallCenter().make_available(agent.agent_id)
    call, _ = CallCenter().create_call({"language": "Spanish"})
    assert call.agent_id == agent.agent_id
    return Agents().get(agent.agent_id), call


def trail_of(kind, item_id):
    return [e.action for e in AuditTrail().for_target(f"{kind}:{item_id}").entries]


def snapshot():
    """Every agent, call and shipment as stored: what a refused request must leave as it was."""
    router = CallCenter()
    agents = {a.agent_id: a for a in Agents().list(limit=100).items}
    calls = {c.call_id: c for c in router.calls.in_progress(limit=100).items}
    calls.update({item["call_id"]: router.get_call(item["call_id"]) for item in router.line.waiting_calls()[0]})
    shipments = {s.shipment_id: s for s in ShipmentQueue().list_queue(limit=100).items}
    return agents, calls, shipments


# --- the two tabs of the walk: a stale Release never ends the agent's next call ----------------


def test_a_stale_release_from_a_second_tab_leaves_the_new_call_assigned(supervisor_client, moto_db):
    ana, first = on_a_call()
    tab_two = shown(ana.agent_id, then="queue", confirmed="1", list="agents", next="/agents/")
    CallCenter().create_call({"language": "Spanish"})  # the next caller waits
    # Tab 1 releases Ana, who takes the waiting caller at once.
    tab_one = supervisor_client.post(
        reverse("agent-release", args=[ana.agent_id]), shown(ana.agent_id, then="queue", confirmed="1"), **HTMX
    )
    assert tab_one.status_code == 200
    second = Agents().get(ana.agent_id).call_id
    assert second and second != first.call_id
    # Tab 2 still shows the first call: its Release is answered as done, and says so.
    stale = supervisor_client.post(reverse("agent-release", args=[ana.agent_id]), tab_two, **HTMX)
    html = stale.content.decode()
    assert stale.status_code == 200 and "HX-Trigger" in stale
    assert f"Call {first.call_id} had already ended" in html and f"on call {second}" in html
    assert "Nothing changed." in html and "row-changed-warning" in html
    assert CallCenter().get_call(second).status == CallStatus.ASSIGNED
    assert Agents().get(ana.agent_id).call_id == second
    # ...and with another next step, it is refused the same way: nothing ends.
    wrap_up = supervisor_client.post(
        reverse("agent-release", args=[ana.agent_id]), {**tab_two, "then": "wrap_up"}, **HTMX
    )
    assert wrap_up.status_code == 409
    assert f"Call {first.call_id} already ended" in wrap_up.content.decode()
    assert CallCenter().get_call(second).status == CallStatus.ASSIGNED


# --- the API: agents ---------------------------------------------------------------------------


def test_a_release_retried_after_its_answer_was_lost_is_answered_as_the_first(api, moto_db):
    ana, first = on_a_call()
    waiting, _ = CallCenter().create_call({"language": "Spanish"})
    body = {"call_id": first.call_id, "then": "queue"}
    answered = api(f"/api/agents/{ana.agent_id}/release", body)
    assert answered.status_code == 200 and answered["Idempotent-Replayed"] == "false"
    assert answered.json()["call"]["call_id"] == waiting.call_id
    before = snapshot()
    again = api(f"/api/agents/{ana.agent_id}/release", body)
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert again.json() == answered.json()
    assert snapshot() == before
    assert trail_of("agent", ana.agent_id).count("agent.release") == 1


def test_a_release_naming_a_call_that_ended_otherwise_is_a_409_saying_what_happened(api, moto_db):
    ana, first = on_a_call()
    api(f"/api/agents/{ana.agent_id}/release", {"call_id": first.call_id, "then": "wrap_up"})
    before = snapshot()
    refused = api(f"/api/agents/{ana.agent_id}/release", {"call_id": first.call_id, "then": "offline"})
    assert refused.status_code == 409
    body = refused.json()
    assert f"Call {first.call_id} already ended (Ana went to wrap-up)" in body["message"]
    assert body["current"]["agent"]["status"] == AgentStatus.WRAP_UP
    assert body["current"]["call"]["status"] == CallStatus.ENDED
    assert "Last change: ended: Ana released (sam-supervisor via token" in body["message"]  # who, where, when
    assert snapshot() == before


def test_a_release_needs_the_call_and_refuses_another_agents(api, moto_db):
    ana, mine = on_a_call("Ana")
    bea, hers = on_a_call("Bea")
    missing = api(f"/api/agents/{ana.agent_id}/release", {"then": "queue"})
    assert missing.status_code == 400 and set(missing.json()["fields"]) == {"call_id"}
    theirs = api(f"/api/agents/{ana.agent_id}/release", {"call_id": hers.call_id})
    assert theirs.status_code == 409 and "is not Ana's call: it is Bea's" in theirs.json()["message"]
    assert CallCenter().get_call(hers.call_id).status == CallStatus.ASSIGNED
    assert CallCenter().get_call(mine.call_id).status == CallStatus.ASSIGNED


def test_making_available_twice_with_the_same_version_is_one_change(api, moto_db):
    ana = spanish_agent()
    first = api(f"/api/agents/{ana.agent_id}/available", {"version": ana.version})
    again = api(f"/api/agents/{ana.agent_id}/available", {"version": ana.version})
    assert (first.status_code, again.status_code) == (200, 200)
    assert (first["Idempotent-Replayed"], again["Idempotent-Replayed"]) == ("false", "true")
    assert again.json() == first.json()
    assert trail_of("agent", ana.agent_id) == ["agent.available"]


def test_a_repeat_after_something_else_happened_is_a_409_naming_it(api, moto_db):
    ana = spanish_agent()
    api(f"/api/agents/{ana.agent_id}/available", {"version": ana.version})
    call, _ = CallCenter().create_call({"language": "Spanish"})  # she took a caller since
    refused = api(f"/api/agents/{ana.agent_id}/available", {"version": ana.version})
    assert refused.status_code == 409
    assert f"Ana is on call {call.call_id} now" in refused.json()["message"]
    assert refused.json()["current"]["agent"]["call_id"] == call.call_id


@pytest.mark.parametrize("action", ["available", "offline"])
def test_an_agent_change_from_an_old_version_is_a_409_with_the_agent_as_now(api, moto_db, action):
    ana = spanish_agent()
    CallCenter().make_available(ana.agent_id)
    CallCenter().log_off(ana.agent_id)
    if action == "offline":
        CallCenter().make_available(ana.agent_id)
    before = snapshot()
    refused = api(f"/api/agents/{ana.agent_id}/{action}", {"version": ana.version})
    assert refused.status_code == 409
    now = Agents().get(ana.agent_id)
    assert refused.json()["current"]["agent"]["version"] == now.version
    assert f"version {ana.version}, now {now.version}" in refused.json()["message"]
    assert snapshot() == before


def test_repeats_are_treated_alike_offline_on_an_offline_agent_is_a_409_like_available_on_a_queued_one(api, moto_db):
    ana = spanish_agent()
    offline = api(f"/api/agents/{ana.agent_id}/offline", {"version": ana.version})
    assert offline.status_code == 409 and "already offline" in offline.json()["message"]
    queued = api(f"/api/agents/{ana.agent_id}/available", {"version": ana.version}).json()["agent"]
    again = api(f"/api/agents/{ana.agent_id}/available", {"version": queued["version"]})
    assert again.status_code == 409 and "already queued" in again.json()["message"]
    # A log-off sent twice is one change, answered alike.
    first = api(f"/api/agents/{ana.agent_id}/offline", {"version": queued["version"]})
    second = api(f"/api/agents/{ana.agent_id}/offline", {"version": queued["version"]})
    assert (first.status_code, second.status_code) == (200, 200)
    assert second["Idempotent-Replayed"] == "true" and second.json() == first.json()


def test_the_agent_a_change_is_given_as_read_is_left_as_read(moto_db):
    # The audited operations give the change the agent they read and keep it as the audit's
    # `before`: queueing, ending the call to wrap-up, and ending it to the queue leave it alone.
    center, ana = CallCenter(), spanish_agent()
    read = Agents().get(ana.agent_id)
    kept = copy.deepcopy(read)
    queued = center.make_available(ana.agent_id, read=read).agent
    assert read == kept and queued.status == AgentStatus.QUEUED and queued.version == read.version + 1
    call, _ = center.create_call({"language": "Spanish"})
    for then in ("wrap_up", "queue"):
        read = Agents().get(ana.agent_id)
        kept = copy.deepcopy(read)
        after = center.release(ana.agent_id, then=then, read=read).agent
        assert read == kept and after.version > read.version and after.status != read.status
        if then == "wrap_up":
            center.make_available(ana.agent_id)
        call, _ = center.create_call({"language": "Spanish"})
    assert call.agent_id == ana.agent_id


# --- the API: calls ----------------------------------------------------------------------------


def test_a_call_is_ended_by_naming_it_and_the_end_sent_again_is_answered_as_the_first(api, moto_db):
    ana, call = on_a_call()
    ended = api(f"/api/calls/{call.call_id}/end", {"then": "wrap_up"})
    assert ended.status_code == 200 and ended["Idempotent-Replayed"] == "false"
    assert ended.json()["agent"]["status"] == AgentStatus.WRAP_UP and ended.json()["call"] is None
    again = api(f"/api/calls/{call.call_id}/end", {"then": "wrap_up"})
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    assert again.json() == ended.json()
    other = api(f"/api/calls/{call.call_id}/end", {"then": "queue"})
    assert other.status_code == 409 and "already ended" in other.json()["message"]
    assert Agents().get(ana.agent_id).status == AgentStatus.WRAP_UP


def test_ending_a_waiting_or_abandoned_call_is_a_409(api, moto_db):
    waiting, _ = CallCenter().create_call({"language": "French"})
    refused = api(f"/api/calls/{waiting.call_id}/end")
    assert refused.status_code == 409 and "still waiting" in refused.json()["message"]
    assert refused.json()["current"]["call"]["status"] == CallStatus.WAITING
    api(f"/api/calls/{waiting.call_id}/abandon")
    assert api(f"/api/calls/{waiting.call_id}/end").status_code == 409
    assert api("/api/calls/nosuchcall/end").status_code == 404


def test_an_idempotency_key_reused_with_another_body_is_422_never_the_first_call(api, moto_db):
    french = api("/api/calls", {"preferences": {"language": "French"}}, HTTP_IDEMPOTENCY_KEY="pbx-9")
    assert french.status_code == 201
    english = api("/api/calls", {"preferences": {"language": "English"}}, HTTP_IDEMPOTENCY_KEY="pbx-9")
    assert english.status_code == 422
    body = english.json()
    assert body["fields"] == {"Idempotency-Key": "was used for a different request"}
    assert "'pbx-9'" in body["message"] and french.json()["call_id"] not in json.dumps(body)
    # The same body again is still the first call.
    again = api("/api/calls", {"preferences": {"language": "French"}}, HTTP_IDEMPOTENCY_KEY="pbx-9")
    assert again.status_code == 200 and again.json()["call_id"] == french.json()["call_id"]
    assert len(CallCenter().line.waiting_calls()[0]) == 1


def test_a_shipment_key_reused_with_another_body_is_422(api, moto_db):
    first = api("/api/shipments", {"data": {"to": "Lyon"}}, HTTP_IDEMPOTENCY_KEY="order-1")
    assert first.status_code == 201
    assert api("/api/shipments", {"data": {"to": "Lyon"}}, HTTP_IDEMPOTENCY_KEY="order-1").status_code == 200
    other = api("/api/shipments", {"data": {"to": "Nice"}}, HTTP_IDEMPOTENCY_KEY="order-1")
    assert other.status_code == 422 and "Idempotency-Key" in other.json()["fields"]
    assert ShipmentQueue().count_queued() == 1


# --- pages: agents, calls, shipments --------------------------------------------------------------


def test_a_form_posted_twice_makes_one_change_and_the_second_says_so(supervisor_client, moto_db):
    ana = spanish_agent()
    form = shown(ana.agent_id)
    first = supervisor_client.post(reverse("agent-available", args=[ana.agent_id]), form, **HTMX)
    second = supervisor_client.post(reverse("agent-available", args=[ana.agent_id]), form, **HTMX)
    assert 'msg-success" role="status">Ana is queued.' in first.content.decode()
    assert "Ana was made available already; Ana is queued now. Nothing changed." in second.content.decode()
    assert 'msg-warning"' in second.content.decode()
    assert trail_of("agent", ana.agent_id) == ["agent.available"]


def test_a_stale_page_action_says_what_changed_in_place_and_changes_nothing(supervisor_client, moto_db):
    ana = spanish_agent()
    page = shown(ana.agent_id, list="agents", next="/agents/")
    Operations("bob-supervisor", "page").make_available(ana.agent_id)  # another supervisor, meanwhile
    before = snapshot()
    answer = supervisor_client.post(reverse("agent-offline", args=[ana.agent_id]), page, **HTMX)
    html = answer.content.decode()
    assert answer.status_code == 409
    assert re.search(rf'<tr data-agent="{ana.agent_id}" class="row-changed row-changed-error">', html)
    assert re.search(rf'<div class="row-note row-note-error" data-note-for="{ana.agent_id}" role="alert">', html)
    assert "Ana changed since you looked (version 1, now 2): Ana is queued now." in html
    assert "Last change: Ana queued (bob-supervisor, page" in html
    assert snapshot() == before


def test_the_add_a_caller_form_sent_twice_places_one_caller(supervisor_client, moto_db):
    html = supervisor_client.get(reverse("calls")).content.decode()
    key = re.search(r'name="request_key" value="([0-9a-f]{32})"', html).group(1)
    form = {"skill_language": "French", "skill_gender": "any", "priority": "0", "order": "fifo", "request_key": key}
    first = supervisor_client.post(reverse("calls"), form, follow=True)
    again = supervisor_client.post(reverse("calls"), form, follow=True)
    assert first.redirect_chain[-1][0] == again.redirect_chain[-1][0]
    assert "This form had placed call" in again.content.decode()
    assert len(CallCenter().line.waiting_calls()[0]) == 1
    other = supervisor_client.post(reverse("calls"), {**form, "skill_language": "English"})
    assert other.status_code == 400 and "other choices already" in other.content.decode()
    assert re.search(r'name="request_key" value="(?!' + key + r')[0-9a-f]{32}"', other.content.decode())


def test_hanging_up_twice_and_ending_a_call_from_its_page(supervisor_client, moto_db):
    waiting, _ = CallCenter().create_call({"language": "French"})
    url = reverse("call-abandon", args=[waiting.call_id])
    assert "ended as abandoned" in supervisor_client.post(url, {"confirmed": "1"}, follow=True).content.decode()
    again = supervisor_client.post(url, {"confirmed": "1"}, follow=True).content.decode()
    assert "had ended as abandoned already. Nothing changed." in again
    assert trail_of("call", waiting.call_id).count("call.abandoned") == 1
    ana, call = on_a_call()
    page = supervisor_client.get(reverse("call-detail", args=[call.call_id])).content.decode()
    assert f'data-confirm="End call {call.call_id} of Ana?"' in page
    ended = supervisor_client.post(
        reverse("call-end", args=[call.call_id]), {"then": "offline", "confirmed": "1"}, follow=True
    )
    assert f"Call {call.call_id} ended; Ana is offline now." in ended.content.decode()


@pytest.mark.parametrize(
    "name, data",
    [
        ("shipment-touch", {}),
        ("shipment-priority", {"priority": "8"}),
        ("shipment-dlq", {"reason": "lost", "confirmed": "1"}),
        ("shipment-remove", {"confirmed": "1"}),
    ],
)
def test_a_shipment_action_sent_twice_is_one_change_and_from_a_stale_page_none(supervisor_client, moto_db, name, data):
    queue = ShipmentQueue()
    queue.create({"to": "Lyon"}, shipment_id="s-1", ready=True)
    seen = queue.enqueue("s-1")
    form = {**data, "version": seen.version}
    first = supervisor_client.post(reverse(name, args=["s-1"]), form, **HTMX)
    again = supervisor_client.post(reverse(name, args=["s-1"]), form, **HTMX)
    assert (first.status_code, again.status_code) == (200, 200)
    assert 'msg-warning"' in again.content.decode() and "Nothing changed." in again.content.decode()
    assert len(trail_of("shipment", "s-1")) == 1
    # From a page that showed an older version after some other change: refused, unchanged.
    queue.create({"to": "Nice"}, shipment_id="s-2", ready=True)
    old = queue.enqueue("s-2")
    queue.set_priority("s-2", 5)
    after = queue.get("s-2")
    stale = supervisor_client.post(reverse(name, args=["s-2"]), {**data, "version": old.version}, **HTMX)
    assert stale.status_code == 409 and "changed since you saw it" in stale.content.decode()
    assert queue.get("s-2") == after


def test_a_stale_restore_is_refused(supervisor_client, moto_db):
    queue = ShipmentQueue()
    queue.create({}, shipment_id="s-1", ready=True)
    queue.enqueue("s-1")
    dead = queue.send_to_dlq("s-1", "lost").item
    queue.restore("s-1")
    queue.send_to_dlq("s-1", "lost again")
    refused = supervisor_client.post(reverse("shipment-restore", args=["s-1"]), {"version": dead.version}, **HTMX)
    assert refused.status_code == 409
    assert queue.get("s-1").state == ShipmentState.IN_DLQ


# --- bulk: items changed since are skipped and named ---------------------------------------------


def test_a_bulk_action_skips_agents_changed_since_and_names_them(supervisor_client, moto_db):
    agents = [spanish_agent(name) for name in ("Ana", "Bea", "Cy")]
    selection = [ticked(a.agent_id) for a in agents]
    CallCenter().make_available(agents[1].agent_id)  # Bea, meanwhile
    call, _ = CallCenter().create_call({"language": "Spanish"})
    done = supervisor_client.post(
        reverse("agent-bulk"), {"action": "available", "ids": selection, "confirmed": "1"}, follow=True
    )
    html = done.content.decode()
    assert f"2 made available, 1 changed since you looked (Bea: on call {call.call_id})" in html
    assert Agents().get(agents[1].agent_id).call_id == call.call_id
    # The same bulk action confirmed twice: the second time, each is done already.
    again = supervisor_client.post(
        reverse("agent-bulk"), {"action": "available", "ids": selection, "confirmed": "1"}, follow=True
    )
    assert "0 made available, 2 were done already (by this same request), 1 changed since you looked" in (
        again.content.decode()
    )


def test_an_admin_bulk_action_skips_shipments_changed_since(staff, client, moto_db):
    client.force_login(staff)
    queue = ShipmentQueue()
    for sid in ("s-1", "s-2"):
        queue.create({}, shipment_id=sid, ready=True)
        queue.enqueue(sid)
    selection = [ticked_shipment("s-1"), ticked_shipment("s-2")]
    queue.set_priority("s-2", 4)
    url = reverse("admin:queues_app_shipmententry_changelist")
    done = client.post(url, {"action": "touch", "ids": selection, "confirmed": "1"}, follow=True)
    assert "1 sent to the back, 1 changed since you looked (s-2: queued)" in done.content.decode()
    assert queue.get("s-2").priority == 4


def test_a_bulk_release_ends_only_the_calls_shown(moto_db):
    ana, first = on_a_call()
    shown_then = Seen(ana.agent_id, ana.version, first.call_id)
    ops = Operations("sam", "page")
    ops.release(ana.agent_id, call_id=first.call_id)
    CallCenter().create_call({"language": "Spanish"})
    now = Agents().get(ana.agent_id)
    report = ops.on_agents("release", [shown_then])
    assert report.done == [] and Agents().get(ana.agent_id) == now


# --- the domain: tasks and shipment receipts ------------------------------------------------------


def test_a_task_is_finished_only_by_the_take_that_holds_it_and_a_repeat_is_done(moto_db):
    tasks = TaskQueue()
    tasks.create({"n": 1}, task_id="t1")
    first = tasks.take("t1")
    tasks.release("t1", take=first.attempts)  # given back: another processor takes it
    second = tasks.take("t1")
    with pytest.raises(IllegalTransition, match="taken again since take 1"):
        tasks.succeed("t1", "late", take=first.attempts)
    assert tasks.get("t1").status == TaskStatus.TAKEN
    done = tasks.succeed("t1", "ok", take=second.attempts)
    assert tasks.succeed("t1", "ok", take=second.attempts) == done  # sent again: answered as done
    with pytest.raises(IllegalTransition):
        tasks.fail("t1", "no", take=second.attempts)


def test_a_shipment_completed_or_failed_twice_with_its_receipt_is_one_change(moto_db):
    queue = ShipmentQueue()
    queue.create({}, shipment_id="s-1", ready=True)
    queue.enqueue("s-1")
    lease = queue.receive()
    failed = queue.fail("s-1", lease.receipt, "printer jam")
    assert queue.fail("s-1", lease.receipt, "printer jam") == failed
    assert len(queue.get("s-1").failure_reasons) == 1
    with pytest.raises(errors.Conflict):
        queue.complete("s-1", lease.receipt)  # failed is not completed: the receipt is spent
    with pytest.raises(ReceiptInvalid):
        queue.heartbeat("s-1", lease.receipt)


def test_an_audited_release_and_making_available_read_the_agent_once(moto_db):
    """The audit's `before` is the read the change is decided on: no second GetItem of the
    agent (a copy is given to the change, so the audit still says what it was)."""
    agent, call = on_a_call()
    reads = []

    def note(params, model, **kwargs):
        if model.name == "GetItem" and params["Key"]["pk"]["S"].startswith("AGENT"):
            reads.append(model.name)

    moto_db.client.meta.events.register("provide-client-params.dynamodb", note)
    try:
        released = Operations("sam", "api").release(agent.agent_id, "wrap_up", call_id=call.call_id).agent
        assert len(reads) == 1
        reads.clear()
        Operations("sam", "api").make_available(agent.agent_id, expected_version=released.version)
        assert len(reads) == 1  # nobody waiting: queued, from the one read
    finally:
        moto_db.client.meta.events.unregister("provide-client-params.dynamodb", note)
    assert trail_of("agent", agent.agent_id)[:2] == ["agent.available", "agent.release"]  # newest first
    entry = AuditTrail().for_target(f"agent:{agent.agent_id}").entries[0]
    assert (entry.before or {}).get("status") == AgentStatus.WRAP_UP and entry.after["status"] == AgentStatus.QUEUED
