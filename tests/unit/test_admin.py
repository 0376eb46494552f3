"""The admin lists agents, lines, queues, shipments and tasks from DynamoDB and acts on them."""

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.audit.store import AuditTrail
from queues_app.centre.call_center import CallCenter
from queues_app.shipments.queue import ShipmentQueue, ShipmentState
from queues_app.tasks.queue import TaskQueue
from tests.helpers.seen import ticked, ticked_shipment

SKILLS = {"language": ["English"], "gender": ["F"]}
CHANGELISTS = ("agententry", "lineentry", "queueentry", "shipmententry", "taskentry")


@pytest.fixture
def staff_client(client, staff):
    client.force_login(staff)
    return client


def changelist(model: str) -> str:
    return reverse(f"admin:queues_app_{model}_changelist")


def test_admin_index_lists_the_dynamodb_entries(staff_client, moto_db):
    html = staff_client.get(reverse("admin:index")).content.decode()
    for plural in ("Agents", "Lines", "Agent queues", "Shipments", "Tasks"):
        assert plural in html


@pytest.mark.parametrize("model", CHANGELISTS)
def test_every_changelist_reads_dynamodb(staff_client, moto_db, model):
    Agents().create("Ada Admin", SKILLS)
    ShipmentQueue().create({"destination": "Lyon"}, shipment_id="s-admin", ready=True)
    ShipmentQueue().enqueue("s-admin")
    TaskQueue().create({"job": "admin-task"})
    CallCenter().lines.put({"line_id": "support", "name": "Support desk"})
    response = staff_client.get(changelist(model))
    assert response.status_code == 200
    html = response.content.decode()
    expected = {
        "agententry": "Ada Admin",
        "lineentry": "Support desk",
        "queueentry": "Q#English#F",
        "shipmententry": "s-admin",
        "taskentry": "admin-task",
    }[model]
    assert expected in html


def test_agent_changelist_searches_and_filters_by_status(staff_client, moto_db):
    ada = Agents().create("Ada Admin", SKILLS)
    Agents().create("Bob Builder", SKILLS)
    CallCenter().make_available(ada.agent_id)
    html = staff_client.get(changelist("agententry"), {"q": "bob"}).content.decode()
    assert "Bob Builder" in html and "Ada Admin" not in html
    html = staff_client.get(changelist("agententry"), {"status": AgentStatus.QUEUED}).content.decode()
    assert "Ada Admin" in html and "Bob Builder" not in html


def test_enqueue_action_confirms_with_a_count_then_acts_and_is_audited(staff_client, moto_db):
    agents = [Agents().create(f"Agent {n}", SKILLS) for n in range(3)]
    ids = [a.agent_id for a in agents[:2]]
    # The rows' checkboxes carry each agent as shown: id and version.
    listed = staff_client.get(changelist("agententry")).content.decode()
    assert all(f'value="{ticked(i)}"' in listed for i in ids)
    confirm = staff_client.post(changelist("agententry"), {"action": "enqueue", "ids": [ticked(i) for i in ids]})
    assert confirm.status_code == 200
    assert b"data-count>2<" in confirm.content
    assert all(Agents().get(i).status == AgentStatus.OFFLINE for i in ids)  # nothing happened yet

    done = staff_client.post(
        changelist("agententry"), {"action": "enqueue", "ids": [ticked(i) for i in ids], "confirmed": "1"}, follow=True
    )
    assert "2 made available" in done.content.decode()
    assert [Agents().get(i).status for i in ids] == [AgentStatus.QUEUED] * 2
    assert Agents().get(agents[2].agent_id).status == AgentStatus.OFFLINE
    entries = AuditTrail().for_target(f"agent:{ids[0]}").entries
    assert [(e.action, e.source, e.actor) for e in entries] == [("agent.available", "admin", "stella-staff")]


def test_shipment_actions_touch_send_to_dlq_and_restore(staff_client, moto_db):
    queue = ShipmentQueue()
    for sid in ("s-1", "s-2"):
        queue.create({"n": sid}, shipment_id=sid, ready=True)
        queue.enqueue(sid)
    staff_client.post(changelist("shipmententry"), {"action": "dlq", "ids": [ticked_shipment("s-1")], "confirmed": "1"})
    assert queue.get("s-1").state == ShipmentState.IN_DLQ
    html = staff_client.get(changelist("shipmententry"), {"view": "dlq"}).content.decode()
    assert "s-1" in html and "Sent to the DLQ from the admin" in html
    staff_client.post(
        changelist("shipmententry"),
        {"action": "restore", "ids": [ticked_shipment("s-1"), ticked_shipment("s-2")], "confirmed": "1"},
    )
    assert queue.get("s-1").state == ShipmentState.QUEUED
    before = queue.get("s-2").version
    staff_client.post(
        changelist("shipmententry"), {"action": "touch", "ids": [ticked_shipment("s-2")], "confirmed": "1"}
    )
    assert queue.get("s-2").version == before + 1


def test_restore_of_a_shipment_not_in_the_dlq_is_reported_as_skipped(staff_client, moto_db):
    queue = ShipmentQueue()
    queue.create({}, shipment_id="s-ok", ready=True)
    queue.enqueue("s-ok")
    response = staff_client.post(
        changelist("shipmententry"),
        {"action": "restore", "ids": [ticked_shipment("s-ok")], "confirmed": "1"},
        follow=True,
    )
    assert "0 restored, 1 is queued" in response.content.decode()


def test_admin_is_for_staff_only(client, supervisor, moto_db):
    client.force_login(supervisor)  # a supervisor, but not staff
    response = client.get(changelist("agententry"))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_staff_without_the_permission_cannot_see_queues(client, django_user_model, moto_db):
    user = django_user_model.objects.create_user("plain-staff", password="x", is_staff=True)
    client.force_login(user)
    assert client.get(changelist("agententry")).status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="view_queues"))
    client.force_login(django_user_model.objects.get(pk=user.pk))
    assert client.get(changelist("agententry")).status_code == 200


def test_staff_who_is_not_a_supervisor_sees_no_actions_and_cannot_post_one(client, django_user_model, moto_db):
    user = django_user_model.objects.create_user("watcher", password="x", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_queues"))
    client.force_login(user)
    agent = Agents().create("Ada Admin", SKILLS)
    html = client.get(changelist("agententry")).content.decode()
    assert "Enqueue the selected agents" not in html
    response = client.post(
        changelist("agententry"), {"action": "enqueue", "ids": [ticked(agent.agent_id)], "confirmed": "1"}
    )
    assert response.status_code == 403
    assert Agents().get(agent.agent_id).status == AgentStatus.OFFLINE


def test_admin_escapes_names(staff_client, moto_db):
    Agents().create("<script>alert(1)</script>", SKILLS)
    html = staff_client.get(changelist("agententry")).content.decode()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_not_ready_action_sets_the_selected_agents_not_ready_for_its_reason(staff_client, moto_db):
    ada = Agents().create("Ada Admin", SKILLS)
    CallCenter().make_available(ada.agent_id)
    listed = staff_client.get(changelist("agententry")).content.decode()
    assert "Set the selected agents not ready: lunch" in listed
    done = staff_client.post(
        changelist("agententry"),
        {"action": "not-ready:lunch", "ids": [ticked(ada.agent_id)], "confirmed": "1"},
        follow=True,
    )
    assert "1 set not ready (lunch)" in done.content.decode()
    now = Agents().get(ada.agent_id)
    assert (now.status, now.reason) == (AgentStatus.NOT_READY, "lunch")
    entries = AuditTrail().for_target(f"agent:{ada.agent_id}").entries
    assert entries[0].action == "agent.not_ready" and entries[0].source == "admin"


def test_the_lines_are_listed_as_they_stand_and_removed_from_the_version_shown(staff_client, moto_db):
    center = CallCenter()
    center.lines.put({"line_id": "general", "name": "General", "service_level_seconds": 60})
    center.lines.put({"line_id": "vip", "name": "VIP", "max_waiting": 5, "overflow": {"to_line": "general"}})
    center.lines.put({"line_id": "spare", "name": "Spare"})
    center.create_call({}, line="vip")
    listed = staff_client.get(changelist("lineentry")).content.decode()
    vip = listed.split(">vip<", 1)[1].split("</tr>", 1)[0]
    assert "to general" in vip and ">1<" in vip and 'href="/lines/vip/"' in listed  # one waiting; edited on its page
    assert "80% in 60 s" in listed.split(">general<", 1)[1].split("</tr>", 1)[0]

    center.lines.put({"line_id": "spare", "name": "Spare line", "version": 1})  # changed since it was shown
    answer = staff_client.post(
        changelist("lineentry"),
        {"action": "remove", "ids": ["vip/1", "general/1", "spare/1"], "confirmed": "1"},
        follow=True,
    ).content.decode()
    assert "0 removed, 3 failed" in answer and "wait" in answer  # vip: a caller waits; general: vip overflows to it
    assert [line.line_id for line in center.lines.configured()] == ["general", "spare", "vip"]
    staff_client.post(changelist("lineentry"), {"action": "remove", "ids": ["spare/2"], "confirmed": "1"})
    assert [line.line_id for line in center.lines.configured()] == ["general", "vip"]
    assert AuditTrail().for_target("line:spare").entries[0].action == "line.delete"
