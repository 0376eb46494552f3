"""Supervisor actions from the pages: plain POST and htmx answers, confirmations, the
audit trail, viewers refused, CSRF, the API's trail source, and DynamoDB outages."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.audit.store import AuditTrail
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.local import free_port
from queues_app.models import ApiToken
from queues_app.shipments.queue import ShipmentQueue, ShipmentStatus
from tests.helpers.seen import shown, ticked, ticked_shipment

HTMX = {"HTTP_HX_REQUEST": "true"}
ACTOR = "sam-supervisor"


def agent(name="Ana", languages=("Spanish",), gender="F"):
    return Agents().create(name, {"language": list(languages), "gender": [gender]})


def attending_agent():
    return attending_agent_named("Ana")


def attending_agent_named(name, language="Spanish"):
    ana = agent(name, languages=(language,))
    router = CallCenter()
    router.make_available(ana.agent_id)
    call, _ = router.create_call({"language": language, "gender": "any"})
    assert call.agent_id == ana.agent_id
    return ana, call


def queued_shipment(data=None, priority=0):
    service = ShipmentQueue()
    shipment = service.create(data or {"destination": "Paris"}, priority=priority, ready=True)
    return service.enqueue(shipment.shipment_id)


def dlq_shipment(reason="address unknown"):
    shipment = queued_shipment()
    return ShipmentQueue().send_to_dlq(shipment.shipment_id, reason).item


def trail():
    return AuditTrail().recent().entries


def only_entry(action, target):
    entries = trail()
    assert len(entries) == 1, [e.action for e in entries]
    entry = entries[0]
    assert (entry.actor, entry.source, entry.action, entry.target) == (ACTOR, "page", action, target)
    return entry


def changed(entry):
    return {name: (old, new) for name, old, new in entry.changes}


def success_page(response, text, back):
    assert response.redirect_chain and response.redirect_chain[0][1] == 302
    assert response.redirect_chain[-1][0] == back
    assert response.status_code == 200
    html = response.content.decode()
    assert re.search(r'<li class="msg msg-success"[^>]*>[^<]*' + re.escape(text), html), html[-2000:]
    return html


# --- agent actions by plain POST ----------------------------------------------------------------


def test_make_available_by_plain_post_queues_the_agent_and_records_it(supervisor_client, moto_db):
    ana = agent()
    response = supervisor_client.post(reverse("agent-available", args=[ana.agent_id]), shown(ana.agent_id), follow=True)
    success_page(response, "Ana is queued.", reverse("agents"))
    assert Agents().get(ana.agent_id).status == AgentStatus.QUEUED
    entry = only_entry("agent.available", f"agent:{ana.agent_id}")
    assert changed(entry)["status"] == (AgentStatus.OFFLINE, AgentStatus.QUEUED)


@pytest.mark.parametrize(
    "then, status",
    [
        ("queue", AgentStatus.QUEUED),
        ("wrap_up", AgentStatus.WRAP_UP),
        ("offline", AgentStatus.OFFLINE),
    ],
)
def test_release_ends_the_call_then_queues_wraps_up_or_logs_off(supervisor_client, moto_db, then, status):
    ana, call = attending_agent()
    here = reverse("agent-detail", args=[ana.agent_id])
    response = supervisor_client.post(
        reverse("agent-release", args=[ana.agent_id]),
        shown(ana.agent_id, then=then, next=here, confirmed="1"),
        follow=True,
    )
    success_page(response, "Released Ana", here)
    assert Agents().get(ana.agent_id).status == status
    assert CallCenter().get_call(call.call_id).status == CallStatus.ENDED
    # The release is on the agent's history, and the call's end on the call's.
    ended, entry = trail()
    assert (ended.action, ended.target, ended.actor) == ("call.end", f"call:{call.call_id}", ACTOR)
    assert (entry.action, entry.target, entry.actor) == ("agent.release", f"agent:{ana.agent_id}", ACTOR)
    assert changed(entry)["status"] == (AgentStatus.ATTENDING, status)
    assert changed(entry)["call_id"] == (call.call_id, None)


def test_release_with_an_unknown_next_step_changes_nothing(supervisor_client, moto_db):
    ana, _ = attending_agent()
    response = supervisor_client.post(
        reverse("agent-release", args=[ana.agent_id]), shown(ana.agent_id, then="lunch", confirmed="1"), follow=True
    )
    assert "After the call: must be one of queue, wrap_up, offline" in response.content.decode()
    assert Agents().get(ana.agent_id).status == AgentStatus.ATTENDING
    assert trail() == []


def test_log_off_takes_a_queued_agent_out_and_records_it(supervisor_client, moto_db):
    ana = agent()
    CallCenter().make_available(ana.agent_id)
    response = supervisor_client.post(reverse("agent-offline", args=[ana.agent_id]), shown(ana.agent_id), follow=True)
    success_page(response, "Ana is offline.", reverse("agents"))
    assert Agents().get(ana.agent_id).status == AgentStatus.OFFLINE
    assert [q.depth for q in CallCenter().queues() if q.depth] == []
    entry = only_entry("agent.offline", f"agent:{ana.agent_id}")
    assert changed(entry)["status"] == (AgentStatus.QUEUED, AgentStatus.OFFLINE)


def test_an_off_site_next_is_ignored(supervisor_client, moto_db):
    ana = agent()
    for target in ("https://evil.example/", "//evil.example/agents/"):
        response = supervisor_client.post(
            reverse("agent-available", args=[ana.agent_id]), shown(ana.agent_id, next=target)
        )
        assert response.status_code == 302
        assert response["Location"] == reverse("agents")
        CallCenter().log_off(ana.agent_id)


# --- creating and editing agents --------------------------------------------------------------------


def test_creating_an_agent_redirects_to_it_and_records_it(supervisor_client, moto_db):
    response = supervisor_client.post(
        reverse("agent-create"),
        {
            "name": "Ines",
            "skill_language": ["English", "French"],
            "skill_gender": ["F"],
        },
        follow=True,
    )
    [created] = Agents().list().items
    success_page(response, "Created agent Ines.", reverse("agent-detail", args=[created.agent_id]))
    assert created.skills == {"language": ["English", "French"], "gender": ["F"]}
    entry = only_entry("agent.create", f"agent:{created.agent_id}")
    assert entry.before is None and entry.after["name"] == "Ines"


@pytest.mark.parametrize(
    "data, problem",
    [
        ({"name": "", "skill_language": ["English"], "skill_gender": ["F"]}, "This field is required."),
        ({"name": "Ines", "skill_language": ["Klingon"], "skill_gender": ["F"]}, "Klingon is not one of the available"),
    ],
)
def test_creating_an_invalid_agent_is_400_with_a_message_and_creates_nothing(supervisor_client, moto_db, data, problem):
    response = supervisor_client.post(reverse("agent-create"), data)
    assert response.status_code == 400
    assert problem in response.content.decode()
    assert 'class="field-error"' in response.content.decode()
    assert Agents().list().items == []
    assert trail() == []


def test_editing_an_agent_with_a_stale_version_says_so_and_changes_nothing(supervisor_client, moto_db):
    ana = agent()
    current = Agents().update(ana.agent_id, name="Ana Maria", skills=ana.skills, expected_version=ana.version)
    response = supervisor_client.post(
        reverse("agent-detail", args=[ana.agent_id]),
        {
            "name": "Ana B",
            "version": ana.version,
            "skill_language": ["Spanish"],
            "skill_gender": ["F"],
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "was changed by someone else" in html and f"you edited version {ana.version}" in html
    assert Agents().get(ana.agent_id) == current
    assert trail() == []


def test_editing_an_agent_with_the_current_version_saves_and_records_the_change(supervisor_client, moto_db):
    ana = agent()
    url = reverse("agent-detail", args=[ana.agent_id])
    response = supervisor_client.post(
        url,
        {
            "name": "Ana B",
            "version": ana.version,
            "skill_language": ["Spanish", "English"],
            "skill_gender": ["F"],
        },
        follow=True,
    )
    success_page(response, "Saved Ana B.", url)
    entry = only_entry("agent.update", f"agent:{ana.agent_id}")
    assert changed(entry)["name"] == ("Ana", "Ana B")
    assert changed(entry)["version"] == (ana.version, ana.version + 1)


# --- calls -----------------------------------------------------------------------------------------


def test_a_new_call_is_assigned_and_its_page_shows_why(supervisor_client, moto_db):
    ana = agent()
    CallCenter().make_available(ana.agent_id)
    response = supervisor_client.post(
        reverse("calls"),
        {
            "skill_language": "Spanish",
            "skill_gender": "any",
            "priority": 0,
            "order": "fifo",
        },
        follow=True,
    )
    [(location, status)] = response.redirect_chain
    call_id = location.rstrip("/").rsplit("/", 1)[1]
    assert (location, status) == (reverse("call-detail", args=[call_id]), 302)
    html = response.content.decode()
    assert f"Call {call_id} assigned to Ana." in html
    assert re.search(r'<tr class="why-chosen"><td><a href="[^"]+"><bdi>Ana</bdi></a>', html)
    # The call's creation on its history, and the matcher's assignment on Ana's.
    assigned, entry = trail()
    assert (entry.actor, entry.source, entry.action, entry.target) == (ACTOR, "page", "call.create", f"call:{call_id}")
    assert entry.before is None and entry.after["status"] == CallStatus.ASSIGNED
    assert (assigned.actor, assigned.source, assigned.action) == ("sam-supervisor", "page", "agent.assigned")
    assert assigned.after == {"status": "attending", "call_id": call_id}


def test_a_new_call_nobody_fits_waits_and_its_page_says_so(supervisor_client, moto_db):
    agent()  # offline
    response = supervisor_client.post(
        reverse("calls"),
        {
            "skill_language": "French",
            "skill_gender": "X",
            "priority": 2,
            "order": "fifo",
        },
        follow=True,
    )
    [(location, _)] = response.redirect_chain
    call_id = location.rstrip("/").rsplit("/", 1)[1]
    html = response.content.decode()
    assert f'<li class="msg msg-warning">No agent fits right now: call {call_id} is waiting.' in html
    assert "Not assigned yet." in html
    assert CallCenter().get_call(call_id).status == CallStatus.WAITING
    assert only_entry("call.create", f"call:{call_id}").after["status"] == CallStatus.WAITING


# --- shipments ---------------------------------------------------------------------------------------


def test_touch_sends_a_shipment_to_the_back_and_records_it(supervisor_client, moto_db):
    first, second = queued_shipment(), queued_shipment()
    response = supervisor_client.post(
        reverse("shipment-touch", args=[first.shipment_id]), {"version": first.version}, follow=True
    )
    success_page(response, f"Shipment {first.shipment_id} moved to the back", reverse("shipments"))
    order = [s.shipment_id for s in ShipmentQueue().list_queue().items]
    assert order == [second.shipment_id, first.shipment_id]
    entry = only_entry("shipment.touch", f"shipment:{first.shipment_id}")
    old, new = changed(entry)["enqueued_at"]
    assert new > old


def test_set_priority_changes_the_priority_and_records_it(supervisor_client, moto_db):
    shipment = queued_shipment()
    response = supervisor_client.post(
        reverse("shipment-priority", args=[shipment.shipment_id]),
        {"priority": 7, "version": shipment.version},
        follow=True,
    )
    success_page(response, "now has priority 7", reverse("shipments"))
    assert ShipmentQueue().get(shipment.shipment_id).priority == 7
    assert changed(only_entry("shipment.priority", f"shipment:{shipment.shipment_id}"))["priority"] == (0, 7)


def test_an_out_of_range_priority_is_refused_with_a_message(supervisor_client, moto_db):
    shipment = queued_shipment()
    response = supervisor_client.post(
        reverse("shipment-priority", args=[shipment.shipment_id]),
        {"priority": 12, "version": shipment.version},
        follow=True,
    )
    assert "Priority must be a whole number from 0 to 9." in response.content.decode()
    assert ShipmentQueue().get(shipment.shipment_id).priority == 0
    assert trail() == []


def test_send_to_dlq_asks_first_and_acts_only_when_confirmed(supervisor_client, moto_db):
    shipment = queued_shipment()
    url = reverse("shipment-dlq", args=[shipment.shipment_id])
    asked = supervisor_client.post(url, {"version": shipment.version, "reason": "carrier lost it"})
    assert asked.status_code == 200
    html = asked.content.decode()
    assert f"Send shipment {shipment.shipment_id} to the dead-letter queue?" in html
    assert "<strong data-count>1</strong>" in html
    assert '<input type="hidden" name="confirmed" value="1">' in html
    assert ShipmentQueue().get(shipment.shipment_id) == shipment
    assert trail() == []

    response = supervisor_client.post(
        url, {"version": shipment.version, "reason": "carrier lost it", "confirmed": "1"}, follow=True
    )
    success_page(response, "is in the DLQ", reverse("shipments"))
    after = ShipmentQueue().get(shipment.shipment_id)
    assert (after.status, after.dlq_reason) == (ShipmentStatus.IN_DLQ, "carrier lost it")
    entry = only_entry("shipment.dlq", f"shipment:{shipment.shipment_id}")
    assert changed(entry)["status"] == (ShipmentStatus.READY_TO_SHIP, ShipmentStatus.IN_DLQ)
    assert changed(entry)["dlq_reason"] == (None, "carrier lost it")


def test_restore_puts_a_dlq_shipment_back_in_the_queue_and_records_it(supervisor_client, moto_db):
    shipment = dlq_shipment()
    back = reverse("shipments") + "?view=dlq"
    response = supervisor_client.post(
        reverse("shipment-restore", args=[shipment.shipment_id]),
        {"version": shipment.version, "next": back},
        follow=True,
    )
    success_page(response, "restored from the DLQ", back)
    assert [s.shipment_id for s in ShipmentQueue().list_queue().items] == [shipment.shipment_id]
    entry = only_entry("shipment.restore", f"shipment:{shipment.shipment_id}")
    assert changed(entry)["status"] == (ShipmentStatus.IN_DLQ, ShipmentStatus.READY_TO_SHIP)


def test_remove_asks_first_and_acts_only_when_confirmed(supervisor_client, moto_db):
    shipment = queued_shipment()
    url = reverse("shipment-remove", args=[shipment.shipment_id])
    asked = supervisor_client.post(url, {"version": shipment.version})
    assert "<strong data-count>1</strong>" in asked.content.decode()
    assert f"Remove shipment {shipment.shipment_id} from its queue?" in asked.content.decode()
    assert ShipmentQueue().get(shipment.shipment_id) == shipment

    response = supervisor_client.post(url, {"version": shipment.version, "confirmed": "1"}, follow=True)
    success_page(response, "removed from the queue", reverse("shipments"))
    assert ShipmentQueue().list_queue().items == []
    entry = only_entry("shipment.remove", f"shipment:{shipment.shipment_id}")
    assert changed(entry)["ready_sk"][1] is None and changed(entry)["ready_sk"][0]


def test_bulk_restore_of_a_selection_asks_with_the_count_then_restores_them(supervisor_client, moto_db):
    chosen = [dlq_shipment().shipment_id for _ in range(2)]
    left = dlq_shipment().shipment_id
    asked = supervisor_client.post(
        reverse("shipment-bulk"), {"action": "restore", "ids": [ticked_shipment(i) for i in chosen]}
    )
    html = asked.content.decode()
    assert "Restore from the DLQ: 2 selected; 2 will be restored?" in html and "<strong data-count>2</strong>" in html
    assert ShipmentQueue().counts().dlq == 3
    assert trail() == []

    response = supervisor_client.post(
        reverse("shipment-bulk"),
        {"action": "restore", "ids": [ticked_shipment(i) for i in chosen], "confirmed": "1"},
        follow=True,
    )
    success_page(response, "Restore from the DLQ: 2 restored.", reverse("shipments") + "?view=dlq")
    assert [s.shipment_id for s in ShipmentQueue().list_dlq().items] == [left]
    entries = trail()
    assert sorted(e.target for e in entries) == sorted(f"shipment:{i}" for i in chosen)
    assert {(e.actor, e.source, e.action) for e in entries} == {(ACTOR, "page", "shipment.restore")}


def test_restore_matching_a_reason_asks_with_the_count_then_restores_only_those(supervisor_client, moto_db):
    timeouts = {dlq_shipment("carrier timeout").shipment_id for _ in range(2)}
    other = dlq_shipment("address unknown").shipment_id
    asked = supervisor_client.post(reverse("shipment-restore-matching"), {"reason_contains": "TIMEOUT"})
    html = asked.content.decode()
    assert "<strong data-count>2</strong>" in html
    assert "Restore 2 shipments from the DLQ (reason contains “TIMEOUT”)?" in html
    assert ShipmentQueue().counts().dlq == 3

    fields = dict(re.findall(r'<input type="hidden" name="(action|confirmed|next)" value="([^"]*)">', html))
    ids = re.findall(r'<input type="hidden" name="ids" value="([^"]*)">', html)
    assert {i.split("/")[0] for i in ids} == timeouts and fields["confirmed"] == "1"
    action = re.search(r'<form method="post" action="([^"]+)">', html).group(1)
    response = supervisor_client.post(action, {**fields, "ids": ids}, follow=True)
    success_page(response, "Restore from the DLQ: 2 restored.", reverse("shipments") + "?view=dlq")
    assert [s.shipment_id for s in ShipmentQueue().list_dlq().items] == [other]
    assert {e.target for e in trail()} == {f"shipment:{i}" for i in timeouts}


def test_restore_matching_nothing_says_so(supervisor_client, moto_db):
    dlq_shipment("address unknown")
    response = supervisor_client.post(reverse("shipment-restore-matching"), {"reason_contains": "timeout"}, follow=True)
    assert "No shipment in the DLQ matches (reason contains “timeout”)." in response.content.decode()
    assert ShipmentQueue().counts().dlq == 1


# --- htmx answers ------------------------------------------------------------------------------------


def assert_fragment(response, status, tag, text):
    assert response.status_code == status, response.content
    html = response.content.decode().strip()
    assert html.startswith(f'<li class="msg msg-{tag}"'), html
    assert "<html" not in html
    assert text in html
    return html


def test_htmx_actions_answer_a_message_fragment_and_tell_panels_to_refresh(supervisor_client, moto_db):
    ana = agent()
    shipment = queued_shipment()
    dead = dlq_shipment()
    sid = shipment.shipment_id

    def version(shipment_id):
        return {"version": ShipmentQueue().get(shipment_id).version}

    posts = [
        (reverse("agent-available", args=[ana.agent_id]), lambda: shown(ana.agent_id), "Ana is queued."),
        (reverse("agent-offline", args=[ana.agent_id]), lambda: shown(ana.agent_id), "Ana is offline."),
        (reverse("shipment-touch", args=[sid]), lambda: version(sid), "moved to the back"),
        (reverse("shipment-priority", args=[sid]), lambda: {"priority": 4, **version(sid)}, "now has priority 4"),
        (reverse("shipment-restore", args=[dead.shipment_id]), lambda: version(dead.shipment_id), "restored from"),
        (reverse("shipment-dlq", args=[sid]), lambda: {"confirmed": "1", "reason": "r", **version(sid)}, "in the DLQ"),
        (
            reverse("shipment-remove", args=[dead.shipment_id]),
            lambda: {"confirmed": "1", **version(dead.shipment_id)},
            "removed from the queue",
        ),
        (
            reverse("agent-bulk"),
            lambda: {"action": "available", "ids": [ticked(ana.agent_id)], "confirmed": "1"},
            "Make available: 1 made available.",
        ),
    ]
    for url, data, text in posts:
        response = supervisor_client.post(url, data(), **HTMX)
        assert_fragment(response, 200, "success", text)
        assert "queues-changed" in response["HX-Trigger"], url
    assert [e.action for e in reversed(trail())] == [
        "agent.available",
        "agent.offline",
        "shipment.touch",
        "shipment.priority",
        "shipment.restore",
        "shipment.dlq",
        "shipment.remove",
        "agent.available",
    ]


def test_htmx_release_answers_a_fragment(supervisor_client, moto_db):
    ana, _ = attending_agent()
    response = supervisor_client.post(
        reverse("agent-release", args=[ana.agent_id]), shown(ana.agent_id, then="wrap_up", confirmed="1"), **HTMX
    )
    assert_fragment(response, 200, "success", "Released Ana; now wrap-up.")
    assert "queues-changed" in response["HX-Trigger"]


def test_htmx_conflict_is_409_with_an_error_fragment_and_no_refresh(supervisor_client, moto_db):
    ana = agent()
    CallCenter().make_available(ana.agent_id)
    response = supervisor_client.post(reverse("agent-available", args=[ana.agent_id]), shown(ana.agent_id), **HTMX)
    assert_fragment(response, 409, "error", "Conflict: Ana is already queued.")
    assert "HX-Trigger" not in response
    assert trail() == []


def test_htmx_stale_shipment_version_is_409(supervisor_client, moto_db):
    shipment = queued_shipment()
    ShipmentQueue().touch(shipment.shipment_id)
    response = supervisor_client.post(
        reverse("shipment-priority", args=[shipment.shipment_id]), {"priority": 3, "version": shipment.version}, **HTMX
    )
    assert_fragment(response, 409, "error", "Conflict")
    assert "HX-Trigger" not in response
    assert ShipmentQueue().get(shipment.shipment_id).priority == 0


@pytest.mark.parametrize("name", ["agent-available", "agent-offline", "shipment-touch", "shipment-restore"])
def test_htmx_action_on_a_missing_item_is_a_404_fragment(supervisor_client, moto_db, name):
    response = supervisor_client.post(reverse(name, args=["no-such-id"]), {"version": 1}, **HTMX)
    assert_fragment(response, 404, "error", "Not found")
    assert "HX-Trigger" not in response


# --- viewers ---------------------------------------------------------------------------------------


def test_viewer_gets_403_on_every_action(viewer_client, moto_db):
    ana = agent()
    shipment = queued_shipment()
    dead = dlq_shipment()
    sid = shipment.shipment_id
    posts = [
        (reverse("agent-available", args=[ana.agent_id]), {"version": ana.version}),
        (reverse("agent-release", args=[ana.agent_id]), {"then": "queue", "call_id": "c1", "confirmed": "1"}),
        (reverse("agent-offline", args=[ana.agent_id]), {"version": ana.version}),
        (reverse("agent-bulk"), {"action": "available", "ids": [ticked(ana.agent_id)], "confirmed": "1"}),
        (reverse("agent-create"), {"name": "Ines", "skill_language": ["English"], "skill_gender": ["F"]}),
        (
            reverse("agent-detail", args=[ana.agent_id]),
            {"name": "Ana B", "version": ana.version, "skill_language": ["English"], "skill_gender": ["F"]},
        ),
        (reverse("calls"), {"skill_language": "Spanish", "skill_gender": "any", "priority": 0, "order": "fifo"}),
        (reverse("shipment-touch", args=[sid]), {"version": shipment.version}),
        (reverse("shipment-priority", args=[sid]), {"priority": 5, "version": shipment.version}),
        (reverse("shipment-restore", args=[dead.shipment_id]), {"version": dead.version}),
        (reverse("shipment-dlq", args=[sid]), {"confirmed": "1", "reason": "r", "version": shipment.version}),
        (reverse("shipment-remove", args=[sid]), {"confirmed": "1", "version": shipment.version}),
        (reverse("call-end", args=["c1"]), {"then": "queue", "confirmed": "1"}),
        (reverse("call-abandon", args=["c1"]), {"confirmed": "1"}),
        (
            reverse("shipment-bulk"),
            {"action": "restore", "ids": [ticked_shipment(dead.shipment_id)], "confirmed": "1"},
        ),
        (reverse("shipment-restore-matching"), {"reason_contains": "address"}),
    ]
    for url, data in posts:
        assert viewer_client.post(url, data).status_code == 403, url
        assert viewer_client.post(url, data, **HTMX).status_code == 403, url
    assert Agents().get(ana.agent_id) == ana
    assert len(Agents().list().items) == 1
    assert ShipmentQueue().get(sid) == shipment
    assert ShipmentQueue().get(dead.shipment_id) == dead
    assert CallCenter().line.waiting_calls()[0] == []
    assert trail() == []


def test_viewer_pages_offer_no_actions(viewer_client, moto_db):
    ana = agent()
    dead = dlq_shipment()
    shipment = queued_shipment()
    urls = [
        reverse("home"),
        reverse("agents"),
        reverse("agent-detail", args=[ana.agent_id]),
        reverse("calls"),
        reverse("shipment-detail", args=[dead.shipment_id]),
        reverse("shipment-detail", args=[shipment.shipment_id]),
    ]
    urls += [f"{reverse('shipments')}?view={view}" for view in ("queue", "in_flight", "delayed", "dlq")]
    for url in urls:
        response = viewer_client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        for offer in (
            "hx-post",
            "Make available",
            "New agent",
            "Log off",
            "Restore",
            "Touch",
            "Assign now",
            "Apply…",
            "Remove…",
            "Send to DLQ…",
        ):
            assert offer not in html, (url, offer)
        for form in re.findall(r'<form method="post".*?</form>', html, re.DOTALL):
            assert "Log out" in form, (url, form)  # the only form a viewer may post


def test_supervisor_pages_offer_the_actions(supervisor_client, moto_db):
    ana = agent()
    agents_html = supervisor_client.get(reverse("agents")).content.decode()
    assert "New agent" in agents_html and "Make available" in agents_html and "hx-post" in agents_html
    assert "Assign now" in supervisor_client.get(reverse("calls")).content.decode()
    assert "Save" in supervisor_client.get(reverse("agent-detail", args=[ana.agent_id])).content.decode()


# --- CSRF --------------------------------------------------------------------------------------------


def test_a_post_without_the_csrf_token_is_refused_and_with_the_header_it_works(supervisor, moto_db):
    client = Client(enforce_csrf_checks=True)
    client.force_login(supervisor)
    ana = agent()
    url = reverse("agent-available", args=[ana.agent_id])
    assert client.post(url, shown(ana.agent_id)).status_code == 403
    assert client.post(url, shown(ana.agent_id), **HTMX).status_code == 403
    assert Agents().get(ana.agent_id).status == AgentStatus.OFFLINE

    client.get(reverse("agents"))
    token = client.cookies["csrftoken"].value
    response = client.post(url, shown(ana.agent_id), HTTP_X_CSRFTOKEN=token, **HTMX)
    assert response.status_code == 200
    assert Agents().get(ana.agent_id).status == AgentStatus.QUEUED
    response = client.post(reverse("agent-offline", args=[ana.agent_id]), shown(ana.agent_id), HTTP_X_CSRFTOKEN=token)
    assert response.status_code == 302
    assert Agents().get(ana.agent_id).status == AgentStatus.OFFLINE


# --- the API -------------------------------------------------------------------------------------------


def test_api_actions_are_recorded_with_source_api(supervisor, moto_db):
    token = ApiToken.issue(supervisor, "phone system")[1]
    ana = agent()
    client = Client(enforce_csrf_checks=True)
    response = client.post(
        f"/api/agents/{ana.agent_id}/available",
        data='{"version": 1}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200, response.content
    [entry] = trail()
    token_prefix = ApiToken.objects.get(name="phone system").prefix
    assert (entry.actor, entry.source, entry.action, entry.target) == (
        f"{ACTOR} via token phone system ({token_prefix})",
        "api",
        "agent.available",
        f"agent:{ana.agent_id}",
    )
    assert changed(entry)["status"] == (AgentStatus.OFFLINE, AgentStatus.QUEUED)


# --- DynamoDB outage -----------------------------------------------------------------------------------


@pytest.fixture
def outage(settings, aws_credentials):
    from queues_app.ddb.client import reset_default

    settings.DYNAMODB_ENDPOINT_URL = f"http://127.0.0.1:{free_port()}"
    settings.DYNAMODB_MAX_ATTEMPTS = 1
    settings.DYNAMODB_CONNECT_TIMEOUT = 0.5
    reset_default()
    yield settings.DYNAMODB_ENDPOINT_URL
    reset_default()


@pytest.mark.parametrize("name", ["calls", "shipments", "tasks", "grid", "history", "capacity"])
def test_a_panel_shows_the_outage_in_its_own_section_and_keeps_polling(supervisor_client, outage, name):
    response = supervisor_client.get(reverse("home"), {"panel": name}, **HTMX)
    assert response.status_code == 503
    html = response.content.decode()
    assert re.findall(r'<section [^>]*id="(\w+)-panel"', html) == [name]
    section = re.search(r"<section [^>]*>", html).group(0)
    assert f'hx-get="/?panel={name}"' in section and re.search(r"every \d+s", section)
    assert "DynamoDB unavailable" in html and "Traceback" not in html
    assert outage not in html and "127.0.0.1" not in html  # the endpoint goes to the log only


def test_an_action_during_an_outage_answers_an_error_message(supervisor_client, outage):
    response = supervisor_client.post(reverse("agent-available", args=["a1"]), {"version": 1}, **HTMX)
    html = assert_fragment(response, 503, "error", "DynamoDB unavailable")
    assert "Traceback" not in html
    assert "HX-Trigger" not in response

    response = supervisor_client.post(reverse("shipment-touch", args=["s1"]), {"version": 1})
    assert response.status_code == 302
    page = supervisor_client.get(reverse("system"))
    assert '<li class="msg msg-error">DynamoDB unavailable' in page.content.decode()

    response = supervisor_client.post(
        reverse("agent-create"), {"name": "Ines", "skill_language": ["English"], "skill_gender": ["F"]}
    )
    assert response.status_code == 400  # shown on the form, which keeps what was typed
    assert "DynamoDB unavailable" in response.content.decode()
    assert "Traceback" not in response.content.decode()


# --- input checked before it reaches DynamoDB ---------------------------------------------------

HUGE_VERSION = "9" * 40


@pytest.mark.parametrize("version", [HUGE_VERSION, "-1", "1e3", "abc", str(2**63)])
def test_a_forged_version_on_agent_edit_is_a_400_on_the_form_and_changes_nothing(supervisor_client, moto_db, version):
    ana = agent()
    response = supervisor_client.post(
        reverse("agent-detail", args=[ana.agent_id]),
        {"name": "Ana B", "version": version, "skill_language": ["English"], "skill_gender": ["F"]},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "The version sent with the form is not valid; reload the page and try again." in html
    assert 'value="Ana B"' in html  # the form keeps what was typed
    assert Agents().get(ana.agent_id) == ana
    assert trail() == []


@pytest.mark.parametrize(
    "name, data",
    [
        ("shipment-touch", {"version": HUGE_VERSION}),
        ("shipment-priority", {"priority": "3", "version": HUGE_VERSION}),
        ("shipment-priority", {"priority": HUGE_VERSION}),
        ("shipment-restore", {"version": HUGE_VERSION}),
        ("shipment-remove", {"version": HUGE_VERSION, "confirmed": "1"}),
        ("shipment-dlq", {"version": HUGE_VERSION, "confirmed": "1"}),
        ("shipment-dlq", {"reason": "x" * 301, "confirmed": "1"}),
    ],
)
def test_a_forged_number_on_a_shipment_action_is_a_400_message_and_changes_nothing(
    supervisor_client, moto_db, name, data
):
    shipment = queued_shipment()
    url = reverse(name, args=[shipment.shipment_id])
    html = assert_fragment(supervisor_client.post(url, data, **HTMX), 400, "error", "Invalid request")
    assert "reload the page" in html or "Priority must be" in html or "at most 300 characters" in html
    response = supervisor_client.post(url, data, follow=True)
    assert response.redirect_chain[0][1] == 302
    assert '<li class="msg msg-error"' in response.content.decode()
    assert ShipmentQueue().get(shipment.shipment_id) == shipment
    assert trail() == []


def test_a_selection_of_things_that_are_not_ids_is_refused(supervisor_client, moto_db):
    ana = agent()
    mine = ticked(ana.agent_id)
    for ids in ([mine, "a b/1"], [mine, "x" * 500 + "/1"], [mine, "tab\there/1"], [mine, "a1/1/c d"]):
        response = supervisor_client.post(reverse("agent-bulk"), {"action": "offline", "ids": ids}, **HTMX)
        assert_fragment(response, 400, "error", "not an id")
    # A selection that does not say which version of each agent was shown: an older page.
    for ids in ([ana.agent_id], [f"{ana.agent_id}/v1"], [f"{ana.agent_id}/1/c/d"]):
        response = supervisor_client.post(reverse("agent-bulk"), {"action": "offline", "ids": ids}, **HTMX)
        assert_fragment(response, 400, "error", "reload the page")
    assert Agents().get(ana.agent_id) == ana
    too_many = [f"s{n}/1" for n in range(501)]
    response = supervisor_client.post(reverse("shipment-bulk"), {"action": "touch", "ids": too_many}, **HTMX)
    assert_fragment(response, 400, "error", "Select at most 500 items at a time (you sent 501).")


def test_an_id_in_the_url_that_no_item_can_have_is_a_404(supervisor_client, moto_db):
    long_id = "x" * 3000
    assert supervisor_client.get(f"/agents/{long_id}/").status_code == 404
    assert supervisor_client.get(f"/shipments/{long_id}/").status_code == 404
    assert supervisor_client.get(f"/calls/{long_id}/").status_code == 404
    response = supervisor_client.post(f"/agents/{long_id}/available", **HTMX)
    assert_fragment(response, 404, "error", "No agent has that id.")


@pytest.mark.parametrize(
    "url, problem",
    [
        ("/shipments/?view=everything", "There is no shipment list of that name"),
        ("/shipments/?queue=" + "q" * 65, "A queue name is 1 to 64 letters"),
        ("/shipments/?queue=live%00", "A queue name is 1 to 64 letters"),
        ("/tasks/?view=DELETED", "There is no task list of that name"),
        ("/audit/?target=" + "agent:" + "a" * 300, "Check the item"),
        ("/agents/?status=sleeping", "Check the filters"),
        ("/agents/?q=" + "a" * 101, "Check the filters"),
    ],
)
def test_a_bad_query_parameter_is_a_400_saying_what_is_wrong(supervisor_client, moto_db, url, problem):
    response = supervisor_client.get(url)
    assert response.status_code == 400
    assert problem in response.content.decode()


def test_task_views_are_read_whatever_their_case(supervisor_client, moto_db):
    assert supervisor_client.get("/tasks/?view=failure").status_code == 200


def test_restore_matching_refuses_an_age_beyond_any_shipment(supervisor_client, moto_db):
    dlq_shipment()
    for minutes in ("1e300", "inf", "nan", "-5"):
        response = supervisor_client.post(reverse("shipment-restore-matching"), {"older_than_minutes": minutes}, **HTMX)
        assert_fragment(response, 400, "error", "Check the filter")


# --- `next` and back links: only to this site -----------------------------------------------------

HOSTILE_NEXT = [
    "javascript:alert(1)",
    "JavaScript:alert(document.cookie)",
    " javascript:alert(1)",
    "//evil.example",
    "//evil.example/agents/",
    "https://evil.example/",
    "/\\evil.example",
    "0",
    "agents/",
]


def cancel_link(html):
    return re.search(r'<a href="([^"]*)">Cancel</a>', html).group(1)


def confirmation_pages(moto_db):
    """(url, data, where Cancel goes by default) of every page that asks first."""
    ana = agent()
    CallCenter().make_available(ana.agent_id)  # so that logging off would change something
    bea, call = attending_agent_named("Bea", "English")
    waiting, _ = CallCenter().create_call({"language": "French", "gender": "any"})
    shipment = queued_shipment()
    dead = dlq_shipment("carrier timeout")
    version = {"version": shipment.version}
    return [
        (reverse("agent-bulk"), {"action": "offline", "ids": [ticked(ana.agent_id)]}, reverse("agents")),
        (reverse("agent-release", args=[bea.agent_id]), shown(bea.agent_id, then="queue"), reverse("agents")),
        (reverse("call-end", args=[call.call_id]), {"then": "queue"}, reverse("call-detail", args=[call.call_id])),
        (reverse("call-abandon", args=[waiting.call_id]), {}, reverse("call-detail", args=[waiting.call_id])),
        (
            reverse("shipment-bulk"),
            {"action": "touch", "ids": [ticked_shipment(shipment.shipment_id)]},
            reverse("shipments"),
        ),
        (reverse("shipment-dlq", args=[shipment.shipment_id]), {"reason": "lost", **version}, reverse("shipments")),
        (reverse("shipment-remove", args=[shipment.shipment_id]), version, reverse("shipments")),
        (
            reverse("shipment-restore-matching"),
            {"reason_contains": "timeout"},
            reverse("shipments") + "?view=dlq",
        ),
        (reverse("shipment-restore", args=[dead.shipment_id]), None, None),  # acts at once: see the redirect test
    ]


@pytest.mark.parametrize("hostile", HOSTILE_NEXT)
def test_a_confirmation_never_links_or_returns_off_site(supervisor_client, moto_db, hostile):
    for url, data, default in confirmation_pages(moto_db):
        if data is None:
            continue
        response = supervisor_client.post(url, {**data, "next": hostile})
        assert response.status_code == 200, url
        html = response.content.decode()
        assert cancel_link(html) == html_escape(default), url
        assert f'name="next" value="{html_escape(default)}"' in html
        assert "javascript:" not in html.lower() and "evil.example" not in html
    assert trail() == []


def test_a_confirmation_keeps_a_next_on_this_site(supervisor_client, moto_db):
    ana = agent()
    CallCenter().make_available(ana.agent_id)
    back = "/agents/?status=offline&q=an"
    response = supervisor_client.post(
        reverse("agent-bulk"), {"action": "offline", "ids": [ticked(ana.agent_id)], "next": back}
    )
    assert cancel_link(response.content.decode()) == html_escape(back)


@pytest.mark.parametrize("hostile", HOSTILE_NEXT)
def test_after_an_action_an_off_site_next_is_never_followed(supervisor_client, moto_db, hostile):
    ana = agent()
    dead = dlq_shipment()
    for url, data, default in (
        (reverse("agent-available", args=[ana.agent_id]), lambda: shown(ana.agent_id), reverse("agents")),
        (
            reverse("shipment-restore", args=[dead.shipment_id]),
            lambda: {"version": ShipmentQueue().get(dead.shipment_id).version},
            reverse("shipments"),
        ),
        (reverse("agent-bulk"), dict, reverse("agents")),  # refused (nothing selected): back all the same
    ):
        response = supervisor_client.post(url, {**data(), "next": hostile})
        assert response.status_code == 302, url
        assert response["Location"] == default, url


def html_escape(text):
    from django.utils.html import escape

    return escape(text)
