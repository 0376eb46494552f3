"""Every dashboard page renders for supervisors and viewers; the overview panels show
the right figures; looking never changes anything; names and data are escaped."""

import re

import pytest
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.operations import Operations
from queues_app.shipments.queue import ShipmentQueue
from queues_app.tasks.queue import TaskQueue
from tests.helpers.pages import figure

SCRIPT = "<script>alert(1)</script>"
ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;"
HTMX = {"HTTP_HX_REQUEST": "true"}


def agent(name, languages, gender):
    return Agents().create(name, {"language": languages, "gender": [gender]})


@pytest.fixture
def world(moto_db):
    """Something in every list: agents in each status, a call in progress, two callers
    waiting, shipments queued, in flight, delayed and in the DLQ, tasks in each status."""
    router = CallCenter()
    ana = agent("Ana", ["Spanish"], "F")
    router.make_available(ana.agent_id)
    call, _ = router.create_call({"language": "Spanish", "gender": "any"})
    bea = agent("Bea", ["English"], "M")
    router.make_available(bea.agent_id)
    cid = agent("Cid", ["English"], "M")
    waiting = [router.create_call({"language": "French", "gender": "X"})[0] for _ in range(2)]

    shipments = ShipmentQueue()
    flying = shipments.create({"destination": "Lyon"}, priority=5, ready=True)
    shipments.enqueue(flying.shipment_id)
    lease = shipments.receive()
    assert lease is not None
    queued = shipments.create({"destination": "Paris"}, priority=3, ready=True)
    shipments.enqueue(queued.shipment_id)
    delayed = shipments.create({"destination": "Nice"}, ready=True)
    shipments.enqueue(delayed.shipment_id, delay_seconds=600)
    dead = shipments.create({"destination": "Oslo"}, ready=True)
    shipments.enqueue(dead.shipment_id)
    shipments.send_to_dlq(dead.shipment_id, "address unknown")

    tasks = TaskQueue()
    ids = [tasks.create({"n": n}).task_id for n in range(4)]
    tasks.take(ids[1])
    tasks.take(ids[2])
    tasks.succeed(ids[2])
    tasks.take(ids[3])
    tasks.fail(ids[3], "downstream refused")

    Operations("sam-supervisor", "page").log_off(bea.agent_id)
    router.make_available(bea.agent_id)
    return {
        "agents": {"ana": ana, "bea": bea, "cid": cid},
        "call": call,
        "waiting": waiting,
        "shipments": {"in_flight": flying, "queue": queued, "delayed": delayed, "dlq": dead},
        "tasks": ids,
    }


def page_urls(world):
    urls = [
        reverse("home"),
        reverse("agents"),
        reverse("agent-create"),
        reverse("agent-detail", args=[world["agents"]["ana"].agent_id]),
        reverse("calls"),
        reverse("call-detail", args=[world["call"].call_id]),
        reverse("call-detail", args=[world["waiting"][0].call_id]),
        reverse("queues"),
        reverse("audit"),
        reverse("audit") + f"?target=agent:{world['agents']['bea'].agent_id}",
    ]
    urls += [f"{reverse('shipments')}?view={view}" for view in ("queue", "in_flight", "delayed", "dlq")]
    urls += [reverse("shipment-detail", args=[s.shipment_id]) for s in world["shipments"].values()]
    urls += [f"{reverse('tasks')}?view={view}" for view in ("PENDING", "TAKEN", "SUCCESS", "FAILURE")]
    return urls


# --- every page ---------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["supervisor_client", "viewer_client"])
def test_every_page_renders_with_data_for_supervisors_and_viewers(request, who, world):
    client = request.getfixturevalue(who)
    for url in page_urls(world):
        if who == "viewer_client" and url == reverse("agent-create"):
            continue  # a form the viewer could not send: refused (tests/unit/test_error_pages.py)
        response = client.get(url)
        assert response.status_code == 200, url
        assert b"Traceback" not in response.content, url
        assert_no_template_text(response.content.decode(), url)


TEMPLATE_TEXT = re.compile(r"\{[#%{]|[#%}]\}")


def assert_no_template_text(html: str, url: str) -> None:
    """Template syntax that reaches the page (a `{# #}` comment over two lines, a typo)."""
    leaked = TEMPLATE_TEXT.search(html)
    assert leaked is None, f"{url} shows template text: {html[max(0, leaked.start() - 60) : leaked.end() + 60]!r}"


def test_login_system_and_admin_pages_show_no_template_text(client, staff, moto_db):
    assert_no_template_text(client.get(reverse("login")).content.decode(), "login")
    client.force_login(staff)
    for url in (
        reverse("system"),
        reverse("admin:index"),
        reverse("admin:queues_app_agententry_changelist"),
        reverse("admin:queues_app_shipmententry_changelist"),
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        assert_no_template_text(response.content.decode(), url)


def test_lists_show_the_items_of_their_view(supervisor_client, world):
    shipments = world["shipments"]
    for view, shipment in shipments.items():
        html = supervisor_client.get(reverse("shipments"), {"view": view}).content.decode()
        shown = set(re.findall(r'data-shipment="([^"]+)"', html))
        assert shown == {shipment.shipment_id}, view
    agents_html = supervisor_client.get(reverse("agents")).content.decode()
    for name in ("Ana", "Bea", "Cid"):
        assert f"><bdi>{name}</bdi></a>" in agents_html
    calls_html = supervisor_client.get(reverse("calls")).content.decode()
    assert set(re.findall(r'<tr data-call="([^"]+)"', calls_html)) == {c.call_id for c in world["waiting"]}
    assert world["call"].call_id[:9] in calls_html  # in progress
    for view, task_id in zip(("PENDING", "TAKEN", "SUCCESS", "FAILURE"), world["tasks"], strict=True):
        html = supervisor_client.get(reverse("tasks"), {"view": view}).content.decode()
        assert re.findall(r'data-task="([^"]+)"', html) == [task_id], view


# --- overview panels ------------------------------------------------------------------------


def panel(client, name):
    return client.get(reverse("home"), {"panel": name}, **HTMX)


def figure_link(html, name):
    match = re.search(rf'data-figure="{name}"[^>]*><a href="([^"]*)">', html)
    return match.group(1) if match else None


@pytest.mark.parametrize("name", ["calls", "shipments", "tasks", "grid", "history", "capacity", "service_level"])
def test_a_panel_fragment_renders_only_its_own_section(supervisor_client, world, name):
    response = panel(supervisor_client, name)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith(f'<section class="card panel" id="{name}-panel"')
    assert re.findall(r'id="(\w+)-panel"', html) == [name]
    assert html.count("<section") == 1
    assert "<html" not in html and 'id="messages"' not in html


def test_panels_show_the_figures_of_the_queues(supervisor_client, world):
    calls = panel(supervisor_client, "calls").content.decode()
    assert figure(calls, "callers-waiting") == "2"
    assert figure(calls, "agents-queued") == "1"  # Bea
    assert figure(calls, "agents-attending") == "1"  # Ana
    assert figure(calls, "agents-offline") == "1"  # Cid
    shipments = panel(supervisor_client, "shipments").content.decode()
    assert figure(shipments, "shipments-queued") == "1"
    assert figure(shipments, "shipments-in-flight") == "1"
    assert figure(shipments, "shipments-delayed") == "1"
    assert figure(shipments, "shipments-dlq") == "1"
    tasks = panel(supervisor_client, "tasks").content.decode()
    assert figure(tasks, "tasks-pending") == "1"
    assert figure(tasks, "tasks-taken") == "1"
    assert figure(tasks, "tasks-failed") == "1"
    grid = panel(supervisor_client, "grid").content.decode()
    cell = re.search(r'data-cell="French · X">(.*?)</td>', grid, re.DOTALL).group(1)
    assert "2 waiting" in cell and "0 queued · 0 ready · 0 logged in" in cell
    english_m = re.search(r'data-cell="English · M">(.*?)</td>', grid, re.DOTALL).group(1)
    assert "1 queued · 1 ready · 1 logged in" in english_m


def test_the_full_overview_shows_every_panel(supervisor_client, world):
    html = supervisor_client.get(reverse("home")).content.decode()
    assert re.findall(r'id="(\w+)-panel"', html) == [
        "calls",
        "lines",  # hidden while no line is configured
        "service_level",
        "grid",
        "shipments",
        "tasks",
        "history",
    ]
    assert figure(html, "callers-waiting") == "2"


def test_an_unknown_panel_is_404(supervisor_client, moto_db):
    assert panel(supervisor_client, "nonsense").status_code == 404


# --- supply and demand ---------------------------------------------------------------------------


def warnings(client):
    return re.findall(r'data-warning="([^"]+)"', panel(client, "grid").content.decode())


def test_a_caller_no_agent_fits_is_warned_of_until_a_fitting_agent_takes_the_call(supervisor_client, moto_db):
    router = CallCenter()
    agent("Eve", ["English"], "F")
    call, _ = router.create_call({"language": "French", "gender": "X"})
    assert call.status == CallStatus.WAITING
    assert warnings(supervisor_client) == ["French · X"]
    assert "1 caller waiting for French · X" in panel(supervisor_client, "grid").content.decode()

    zoe = agent("Zoé", ["French", "English"], "X")
    assert warnings(supervisor_client) == ["French · X"]  # created, but not logged in
    _, taken = router.make_available(zoe.agent_id)
    assert taken.call_id == call.call_id
    assert router.get_call(call.call_id).status == CallStatus.ASSIGNED
    assert warnings(supervisor_client) == []


def test_the_warning_goes_once_a_fitting_agent_is_logged_in_even_if_busy(supervisor_client, moto_db):
    router = CallCenter()
    first, _ = router.create_call({"language": "French", "gender": "X"})
    second, _ = router.create_call({"language": "French", "gender": "X"})
    assert "2 callers waiting for French · X" in panel(supervisor_client, "grid").content.decode()

    zoe = agent("Zoé", ["French"], "X")
    router.make_available(zoe.agent_id)  # takes the first caller; the second still waits
    assert router.get_call(first.call_id).status == CallStatus.ASSIGNED
    assert router.get_call(second.call_id).status == CallStatus.WAITING
    grid = panel(supervisor_client, "grid").content.decode()
    assert "data-warning" not in grid
    cell = re.search(r'data-cell="French · X">(.*?)</td>', grid, re.DOTALL).group(1)
    assert "1 waiting" in cell and "0 queued · 1 ready · 1 logged in" in cell  # on a call: ready, busy


# --- looking changes nothing -------------------------------------------------------------------


def test_rendering_shipments_in_every_view_changes_no_shipment(supervisor_client, world):
    service = ShipmentQueue()
    ids = [s.shipment_id for s in world["shipments"].values()]
    before = {s.shipment_id: (s.version, s.receive_count, s.status, s.visible_at) for s in service.get_many(ids)}
    for view in ("queue", "in_flight", "delayed", "dlq"):
        assert supervisor_client.get(reverse("shipments"), {"view": view}).status_code == 200
    for shipment_id in ids:
        assert supervisor_client.get(reverse("shipment-detail", args=[shipment_id])).status_code == 200
    panel(supervisor_client, "shipments")
    after = {s.shipment_id: (s.version, s.receive_count, s.status, s.visible_at) for s in service.get_many(ids)}
    assert after == before


# --- escaping ---------------------------------------------------------------------------------------


@pytest.fixture
def hostile(moto_db):
    """An agent whose name is a script, in a call; a shipment whose data and DLQ reason are scripts."""
    ops = Operations("sam-supervisor", "page")
    evil = ops.create_agent(SCRIPT, {"language": ["Spanish"], "gender": ["M"]})
    ops.make_available(evil.agent_id)
    call, _ = ops.create_call({"language": "Spanish", "gender": "M"})
    ops.create_call({"language": "French", "gender": "X"})
    shipments = ShipmentQueue()
    shipment = shipments.create({"destination": SCRIPT, "note": SCRIPT}, ready=True)
    shipments.enqueue(shipment.shipment_id)
    ops.send_to_dlq(shipment.shipment_id, f"bad {SCRIPT}")
    return {"agent": evil, "call": call, "shipment": shipment}


def assert_escaped(html, *, shown=True):
    assert "<script>" not in html
    if shown:
        assert ESCAPED in html


def test_a_hostile_agent_name_is_escaped_wherever_it_is_shown(supervisor_client, hostile):
    agent_id = hostile["agent"].agent_id
    for url in (
        reverse("agents"),
        reverse("agent-detail", args=[agent_id]),
        reverse("calls"),
        reverse("call-detail", args=[hostile["call"].call_id]),
        reverse("audit"),
        reverse("audit") + f"?target=agent:{agent_id}",
    ):
        response = supervisor_client.get(url)
        assert response.status_code == 200, url
        assert_escaped(response.content.decode())


def test_the_overview_and_its_panels_carry_no_raw_script(supervisor_client, hostile):
    assert_escaped(supervisor_client.get(reverse("home")).content.decode(), shown=False)
    for name in ("calls", "shipments", "tasks", "grid"):
        assert_escaped(panel(supervisor_client, name).content.decode(), shown=False)


def test_hostile_shipment_data_is_escaped_on_its_list_detail_and_trail(supervisor_client, hostile):
    shipment_id = hostile["shipment"].shipment_id
    for url in (
        f"{reverse('shipments')}?view=dlq",
        reverse("shipment-detail", args=[shipment_id]),
        reverse("audit") + f"?target=shipment:{shipment_id}",
    ):
        html = supervisor_client.get(url).content.decode()
        assert_escaped(html)
    detail = supervisor_client.get(reverse("shipment-detail", args=[shipment_id])).content.decode()
    assert f"<dd>{ESCAPED}</dd>" in detail  # the data fields
    assert f"bad {ESCAPED}" in detail  # the DLQ reason


# --- finding a call ------------------------------------------------------------------------------------


def test_finding_a_call_by_id_opens_its_page(supervisor_client, world):
    call_id = world["call"].call_id
    response = supervisor_client.get(reverse("call-lookup"), {"call_id": f"  {call_id} "})
    assert response.status_code == 302
    assert response["Location"] == reverse("call-detail", args=[call_id])


def test_finding_a_call_by_an_id_with_a_slash_is_not_a_server_error(supervisor_client, moto_db):
    supervisor_client.raise_request_exception = False
    response = supervisor_client.get(reverse("call-lookup"), {"call_id": "a/b"}, follow=True)
    assert response.status_code == 400  # a message on the search page: ids are letters, digits, - and _
    assert "a/b" in response.content.decode()


def test_figures_open_the_lists_behind_them(supervisor_client, moto_db):
    """From the overview a figure is one click from its list (an offline agent made
    available in two clicks: the Offline figure, then the row's button)."""
    html = supervisor_client.get(reverse("home")).content.decode()
    assert figure_link(html, "callers-waiting") == reverse("calls")
    assert figure_link(html, "agents-offline") == reverse("agents") + "?status=offline"
    assert figure_link(html, "agents-queued") == reverse("agents") + "?status=queued"
    assert figure_link(html, "shipments-dlq") == reverse("shipments") + "?view=dlq"
    assert figure_link(html, "shipments-in-flight") == reverse("shipments") + "?view=in_flight"
    assert figure_link(html, "shipments-spillover") == reverse("shipments") + "?queue=spillover"
