"""The list pages: an action on a row answers the whole list as it is now, read again
with the filters it showed (so it re-sorts), the message under the row (or above the
list when the item left it), with the tabs' counts out of band; bulk confirmations count what would happen to
each item; shipment filters and the spillover tab; calls found by an id prefix; agents in
name order with previous and next pages and a capped total."""

import re

import pytest
from django.urls import reverse

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.shipments.listing import ShipmentFilter
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.records import SPILLOVER_QUEUE
from tests.helpers.seen import shipment_version, shown, ticked, ticked_shipment

HTMX = {"HTTP_HX_REQUEST": "true"}
SKILLS = {"language": ["Spanish"], "gender": ["F"]}


def queued(shipment_id, priority=0, tenant=None, queue="live"):
    service = ShipmentQueue()
    service.create(
        {"destination": "Paris"}, shipment_id=shipment_id, priority=priority, ready=True, tenant=tenant, queue=queue
    )
    return service.enqueue(shipment_id)


def in_dlq(shipment_id):
    queued(shipment_id)
    return ShipmentQueue().send_to_dlq(shipment_id, "address unknown").item


def tab_count(html, tab):
    match = re.search(rf'data-tab="{tab}">[^<]*<span class="count[^"]*">([^<]*)</span>', html)
    assert match, html
    return match.group(1)


def note_of(html, item_id):
    """The message about an item: its class, role and text."""
    match = re.search(
        rf'<div class="row-note row-note-(\w+)" data-note-for="{item_id}" role="(\w+)">(.*?)</div>', html, re.S
    )
    assert match, html
    return match.group(1), match.group(2), " ".join(match.group(3).split())


def row_of(html, attribute, item_id):
    match = re.search(rf'<tr data-{attribute}="{item_id}"[^>]*>.*?</tr>', html, re.S)
    return match.group(0) if match else None


def listed(html, attribute):
    """The items of the list in the answer, in its order."""
    return re.findall(rf'<tr data-{attribute}="([^"]+)"', html)


def oob_tabs(html, nav_id):
    match = re.search(rf'<nav class="tabs" id="{nav_id}"[^>]*hx-swap-oob="true"', html)
    assert match, html
    return html[match.start() :]


# --- row answers: shipments -----------------------------------------------------------------


def test_restoring_from_the_dlq_list_answers_the_row_gone_and_the_counts_now(supervisor_client, moto_db):
    dead = [in_dlq(f"s-{n}") for n in range(3)]
    response = supervisor_client.post(
        reverse("shipment-restore", args=["s-0"]),
        {"version": dead[0].version, "list": "dlq", "queue": "live", "next": "/shipments/?view=dlq"},
        **HTMX,
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert listed(html, "shipment") == ["s-1", "s-2"]  # the list as it is now
    tag, role, text = note_of(html, "s-0")  # above the list: s-0 left it
    assert (tag, role) == ("success", "status")
    assert "restored from the DLQ" in text and "It is queued now, so no longer in this list." in text
    tabs = oob_tabs(html, "shipment-tabs")
    assert tab_count(tabs, "dlq") == "2" and tab_count(tabs, "queue") == "1"
    assert "queues-changed" in response["HX-Trigger"]


def test_setting_a_priority_in_the_queue_list_answers_the_row_with_its_new_priority(supervisor_client, moto_db):
    shipment = queued("s-a")
    response = supervisor_client.post(
        reverse("shipment-priority", args=["s-a"]),
        {"priority": 6, "version": shipment.version, "list": "queue", "queue": "live", "next": "/shipments/"},
        **HTMX,
    )
    html = response.content.decode()
    row = row_of(html, "shipment", "s-a")
    assert 'class="row-changed row-changed-success"' in row and '<td data-cell="priority">6</td>' in row
    # The message is in the row under it, not over any cell.
    assert re.search(
        r'</tr>\s*<tr class="row-note-row"><td colspan="20">\s*'
        r'<div class="row-note row-note-success" data-note-for="s-a"',
        html,
    )
    assert "now has priority 6" in note_of(html, "s-a")[2]
    assert tab_count(oob_tabs(html, "shipment-tabs"), "queue") == "1"


@pytest.mark.parametrize(
    "action, data, order",
    [
        ("shipment-priority", {"priority": 9}, ["s-3", "s-1", "s-2"]),  # to the front, at once
        ("shipment-touch", {}, ["s-2", "s-3", "s-1"]),  # to the back of its priority
    ],
)
def test_after_an_action_the_list_is_in_its_new_order(supervisor_client, moto_db, action, data, order):
    shipments = {sid: queued(sid, priority=3) for sid in ("s-1", "s-2", "s-3")}
    target = "s-3" if action == "shipment-priority" else "s-1"
    response = supervisor_client.post(
        reverse(action, args=[target]),
        {**data, "version": shipments[target].version, "list": "queue", "queue": "live", "next": "/shipments/"},
        **HTMX,
    )
    html = response.content.decode()
    assert listed(html, "shipment") == order
    assert note_of(html, target)[0] == "success"


def test_a_row_that_no_longer_matches_the_filter_says_so(supervisor_client, moto_db):
    shipment = queued("s-a", priority=2)
    response = supervisor_client.post(
        reverse("shipment-priority", args=["s-a"]),
        {
            "priority": 5,
            "version": shipment.version,
            "list": "queue",
            "queue": "live",
            "next": "/shipments/?priority=2",
        },
        **HTMX,
    )
    text = note_of(response.content.decode(), "s-a")[2]
    assert "now has priority 5" in text and "so no longer in this list" in text


def test_a_conflict_on_a_row_answers_the_row_as_it_is_with_the_error_and_no_refresh(supervisor_client, moto_db):
    shipment = queued("s-a")
    ShipmentQueue().set_priority("s-a", 3)  # someone else changed it meanwhile
    response = supervisor_client.post(
        reverse("shipment-touch", args=["s-a"]),
        {"version": shipment.version, "list": "queue", "queue": "live", "next": "/shipments/"},
        **HTMX,
    )
    assert response.status_code == 409
    html = response.content.decode()
    row = row_of(html, "shipment", "s-a")
    assert 'class="row-changed row-changed-error"' in row and '<td data-cell="priority">3</td>' in row
    tag, role, text = note_of(html, "s-a")
    assert (tag, role) == ("error", "alert") and "Conflict" in text
    assert "HX-Trigger" not in response


@pytest.mark.parametrize(
    "name, data, gone_text",
    [
        ("shipment-dlq", {"confirmed": "1", "reason": "lost"}, "is in the DLQ"),
        ("shipment-remove", {"confirmed": "1"}, "removed from the queue"),
    ],
)
def test_dlq_and_remove_confirmed_from_the_row_take_it_out_of_the_list(
    supervisor_client, moto_db, name, data, gone_text
):
    queued("s-a")
    queued("s-b")
    response = supervisor_client.post(
        reverse(name, args=["s-a"]),
        {**data, **shipment_version("s-a"), "list": "queue", "queue": "live", "next": "/shipments/"},
        **HTMX,
    )
    html = response.content.decode()
    assert listed(html, "shipment") == ["s-b"]
    assert gone_text in note_of(html, "s-a")[2]
    assert tab_count(oob_tabs(html, "shipment-tabs"), "queue") == "1"


def test_a_row_action_posted_without_htmx_still_redirects_with_the_message(supervisor_client, moto_db):
    shipment = queued("s-a")
    response = supervisor_client.post(
        reverse("shipment-touch", args=["s-a"]),
        {"version": shipment.version, "list": "queue", "queue": "live", "next": "/shipments/"},
        follow=True,
    )
    assert response.redirect_chain[0] == ("/shipments/", 302)
    assert "moved to the back" in response.content.decode()


def test_a_row_action_from_a_list_it_cannot_draw_puts_its_message_with_the_pages_messages(supervisor_client, moto_db):
    shipment = queued("s-a")
    response = supervisor_client.post(
        reverse("shipment-touch", args=["s-a"]),
        {"version": shipment.version, "list": "nonsense", "queue": "live"},
        **HTMX,
    )
    assert response["HX-Retarget"] == "#messages" and response["HX-Reswap"] == "afterbegin"
    assert response.content.decode().strip().startswith('<li class="msg msg-success"')


# --- row answers: agents ---------------------------------------------------------------------


def test_releasing_an_agent_in_the_list_answers_the_row_and_the_status_counts(supervisor_client, moto_db):
    router = CallCenter()
    ana = Agents().create("Ana", SKILLS)
    router.make_available(ana.agent_id)
    router.create_call({"language": "Spanish", "gender": "any"})
    response = supervisor_client.post(
        reverse("agent-release", args=[ana.agent_id]),
        shown(ana.agent_id, then="wrap_up", confirmed="1", list="agents", next="/agents/"),
        **HTMX,
    )
    html = response.content.decode()
    row = row_of(html, "agent", ana.agent_id)
    assert 'class="row-changed' in row and '<span class="status status-wrap_up">Wrap-up</span>' in row
    assert "Released Ana" in note_of(html, ana.agent_id)[2]
    tabs = oob_tabs(html, "agent-tabs")
    assert tab_count(tabs, "attending") == "0" and tab_count(tabs, "wrap_up") == "1"


def test_an_agent_that_leaves_the_status_filter_is_answered_as_gone(supervisor_client, moto_db):
    ana = Agents().create("Ana", SKILLS)
    response = supervisor_client.post(
        reverse("agent-available", args=[ana.agent_id]),
        shown(ana.agent_id, list="agents", next="/agents/?status=offline"),
        **HTMX,
    )
    html = response.content.decode()
    assert listed(html, "agent") == []
    assert "Ana is queued now, so no longer in this list" in note_of(html, ana.agent_id)[2]
    assert tab_count(oob_tabs(html, "agent-tabs"), "queued") == "1"


def test_the_headings_total_follows_a_row_that_leaves_a_filtered_list_and_counts_one_as_one(supervisor_client, moto_db):
    ana, _anna = Agents().create("Ana", SKILLS), Agents().create("Anna", SKILLS)
    first = supervisor_client.get("/agents/?q=an&status=offline").content.decode()
    assert '<span class="muted small" id="agents-total">2 matches</span>' in first
    response = supervisor_client.post(
        reverse("agent-available", args=[ana.agent_id]),
        shown(ana.agent_id, list="agents", next="/agents/?q=an&status=offline"),
        **HTMX,
    )
    answer = response.content.decode()
    assert '<span class="muted small" id="agents-total" hx-swap-oob="true">1 match</span>' in answer


# --- confirmations count the effect ------------------------------------------------------------


def test_a_bulk_release_says_what_it_would_do_to_each_and_the_result_agrees(supervisor_client, moto_db):
    router = CallCenter()
    agents = [Agents().create(name, SKILLS) for name in ("Ana", "Bea", "Cy")]
    router.make_available(agents[0].agent_id)
    router.create_call({"language": "Spanish", "gender": "any"})
    ids = [ticked(a.agent_id) for a in agents]
    asked = supervisor_client.post(reverse("agent-bulk"), {"action": "release", "ids": ids})
    html = asked.content.decode()
    assert "3 selected; 1 will be released, 2 are not on a call?" in html
    assert "<strong data-count>1</strong>" in html

    done = supervisor_client.post(
        reverse("agent-bulk"), {"action": "release", "ids": ids, "confirmed": "1"}, follow=True
    )
    assert "1 released, 2 are not on a call." in done.content.decode()
    assert Agents().get(agents[0].agent_id).status == AgentStatus.QUEUED


def test_a_bulk_action_that_would_change_nothing_says_so_instead_of_asking(supervisor_client, moto_db):
    ids = [ticked(Agents().create(name, SKILLS).agent_id) for name in ("Ana", "Bea", "Cy")]
    response = supervisor_client.post(reverse("agent-bulk"), {"action": "release", "ids": ids}, follow=True)
    html = response.content.decode()
    assert "Yes, go ahead" not in html
    assert "3 selected; none will be released, 3 are not on a call." in html


def test_a_bulk_shipment_confirmation_counts_by_state(supervisor_client, moto_db):
    queued("s-a")
    in_dlq("s-b")
    ids = [ticked_shipment("s-a"), ticked_shipment("s-b"), "s-zz/1"]
    asked = supervisor_client.post(reverse("shipment-bulk"), {"action": "restore", "ids": ids})
    html = asked.content.decode()
    assert "3 selected; 1 will be restored, 1 is queued, 1 no longer exists?" in html
    assert "<strong data-count>1</strong>" in html


# --- shipment filters and the spillover tab -------------------------------------------------------


def test_shipments_filter_by_id_prefix_tenant_priority_and_age(supervisor_client, moto_db):
    queued("ab-1", priority=1, tenant="acme")
    queued("ab-2", priority=5, tenant="globex")
    queued("cd-1", priority=5, tenant="acme")

    def shown(query):
        html = supervisor_client.get("/shipments/" + query).content.decode()
        return re.findall(r'<tr data-shipment="([^"]+)"', html)

    assert shown("?id=ab") == ["ab-2", "ab-1"]
    assert shown("?tenant=acme") == ["cd-1", "ab-1"]
    assert shown("?priority=5") == ["ab-2", "cd-1"]
    assert shown("?priority=5&tenant=acme") == ["cd-1"]
    assert shown("?older_than=60") == []
    assert "No shipment in this list matches the filters" in supervisor_client.get("/shipments/?id=zz").content.decode()


def test_a_bad_filter_is_a_400_saying_what_is_wrong(supervisor_client, moto_db):
    response = supervisor_client.get("/shipments/?priority=12")
    assert response.status_code == 400
    assert "Check the filters: Priority" in response.content.decode()


def test_the_age_filter_on_the_dlq_reads_by_its_key(moto_db, clock):
    service = ShipmentQueue(clock=clock)
    for n in range(3):
        service.create({}, shipment_id=f"d-{n}", ready=True)
        service.enqueue(f"d-{n}")
        service.send_to_dlq(f"d-{n}", "bounced")
        clock.advance(600)
    older = service.list_filtered("dlq", "live", ShipmentFilter(older_than_minutes=25))
    assert [s.shipment_id for s in older.items] == ["d-0"]


def test_priority_and_age_on_the_queue_read_by_its_key(moto_db, clock):
    service = ShipmentQueue(clock=clock)
    for n, priority in enumerate((5, 5, 2)):
        service.create({}, shipment_id=f"q-{n}", priority=priority, ready=True)
        service.enqueue(f"q-{n}")
        clock.advance(600)
    older = service.list_filtered("queue", "live", ShipmentFilter(priority=5, older_than_minutes=25))
    assert [s.shipment_id for s in older.items] == ["q-0"]


def test_a_filtered_page_ends_at_its_last_shipment_so_the_next_page_loses_none(moto_db):
    for n in range(7):
        queued(f"s-{n}", tenant="acme" if n % 2 == 0 else "other")
    service = ShipmentQueue()
    seen, cursor = [], None
    for _ in range(5):
        page = service.list_filtered("queue", "live", ShipmentFilter(tenant="acme"), cursor=cursor, limit=2)
        seen += [s.shipment_id for s in page.items]
        cursor = page.next_cursor
        if not cursor:
            break
    assert seen == ["s-0", "s-2", "s-4", "s-6"]


def test_the_spillover_queue_has_a_tab_beside_the_lists(supervisor_client, moto_db):
    queued("s-live")
    queued("s-side", queue=SPILLOVER_QUEUE)
    html = supervisor_client.get("/shipments/").content.decode()
    assert tab_count(html, "spillover") == "1"
    assert 'href="?queue=spillover&view=queue"' in html
    spill = supervisor_client.get("/shipments/?queue=spillover").content.decode()
    assert re.findall(r'<tr data-shipment="([^"]+)"', spill) == ["s-side"]
    assert tab_count(spill, "live") == "1"


# --- calls by id prefix ---------------------------------------------------------------------------


@pytest.fixture
def calls(moto_db):
    router = CallCenter()
    made = [
        router.create_call({"language": "Spanish", "gender": "any"}, call_id=cid)[0]
        for cid in ("abcd1111", "abcd2222", "ffff0000")
    ]
    return made


def test_a_prefix_that_one_call_has_opens_it(supervisor_client, calls):
    response = supervisor_client.get(reverse("call-lookup"), {"call_id": "ffff"})
    assert response.status_code == 302 and response["Location"] == reverse("call-detail", args=["ffff0000"])


def test_a_prefix_that_several_calls_have_lists_them(supervisor_client, calls):
    response = supervisor_client.get(reverse("call-lookup"), {"call_id": "abcd"})
    html = response.content.decode()
    assert response.status_code == 200
    assert re.findall(r'<tr data-call="([^"]+)"', html) == ["abcd1111", "abcd2222"]


def test_a_prefix_no_call_has_says_what_was_searched(supervisor_client, calls):
    response = supervisor_client.get(reverse("call-lookup"), {"call_id": "9999"})
    html = response.content.decode()
    assert response.status_code == 404
    assert "No call has an id starting with <code>9999</code>" in html
    assert "3 waiting calls and 0 calls in progress" in html


def test_a_prefix_finds_calls_in_progress_and_not_a_waiting_callers_arrival_time(supervisor_client, calls):
    router = CallCenter()
    agent = router.agents.create("Ana", {"language": ["Spanish"], "gender": ["F"]})
    router.make_available(agent.agent_id)  # takes abcd1111, the first in line
    assert router.get_call("abcd1111").status == "assigned"
    response = supervisor_client.get(reverse("call-lookup"), {"call_id": "abcd"})
    assert re.findall(r'<tr data-call="([^"]+)"', response.content.decode()) == ["abcd1111", "abcd2222"]
    # A waiting caller's place in line holds their arrival time ("#2026-…") before their id.
    year = router.get_call("ffff0000").arrived_at[:4]
    response = supervisor_client.get(reverse("call-lookup"), {"call_id": year})
    assert response.status_code == 404
    assert "2 waiting calls and 1 call in progress" in response.content.decode()


def test_a_prefix_shorter_than_four_characters_is_refused(supervisor_client, calls):
    response = supervisor_client.get(reverse("call-lookup"), {"call_id": "abc"})
    assert response.status_code == 400
    assert "Give at least 4 characters of the id." in response.content.decode()


# --- agents by name, pages both ways, total ---------------------------------------------------------


def test_agents_are_listed_by_name_with_previous_and_next_pages(supervisor_client, moto_db, monkeypatch):
    from queues_app.views import agents as agent_views

    monkeypatch.setattr(agent_views, "PAGE_SIZE", 2)
    for name in ("eve", "Bob", "dan", "Ada", "Cy"):
        Agents().create(name, SKILLS)

    def names(html):
        return re.findall(r'<a href="/agents/[^"]+/"><bdi>([^<]+)</bdi></a>', html)

    first = supervisor_client.get("/agents/").content.decode()
    assert names(first) == ["Ada", "Bob"] and "Previous page" not in first
    assert '<span class="muted small" id="agents-total">5 in all</span>' in first
    second_url = re.search(r'href="(\?cursor=[^"]+)" rel="next"', first).group(1).replace("&amp;", "&")
    second = supervisor_client.get("/agents/" + second_url).content.decode()
    assert names(second) == ["Cy", "dan"]
    back_url = re.search(r'href="(\?before=[^"]+)" rel="prev"', second).group(1).replace("&amp;", "&")
    back = supervisor_client.get("/agents/" + back_url).content.decode()
    assert names(back) == ["Ada", "Bob"] and "Previous page" not in back


def test_a_total_beyond_the_cap_reads_as_at_least(supervisor_client, moto_db, monkeypatch):
    from queues_app.views import agents as agent_views

    monkeypatch.setattr(agent_views, "COUNT_CAP", 3)
    for n in range(5):
        Agents().create(f"Agent {n}", SKILLS)
    html = supervisor_client.get("/agents/").content.decode()
    assert tab_count(html, "offline") == "3+"
    assert "3+ in all" in html
    searched = supervisor_client.get("/agents/?q=agent").content.decode()
    assert re.search(r'id="agents-total">3\+ match', searched)
