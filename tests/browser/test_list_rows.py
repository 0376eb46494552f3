"""Actions on a list's rows change the row and the tabs' counts at once, without a reload;
the message sits in the row and never moves the table, and on a phone it shows within the
part of the card in view (Chromium via Playwright, on DynamoDB Local)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from queues_app.agents.call_center import CallCenter
from queues_app.agents.roster import Agents
from queues_app.shipments.queue import ShipmentQueue, ShipmentState
from tests.helpers.browser import log_in

SKILLS = {"language": ["Spanish"], "gender": ["F"]}
SHOTS = Path("/tmp/switchboard-list-shots")


def shipments(*ids, dlq=()):
    service = ShipmentQueue()
    for sid in ids:
        service.create({"destination": "Lisbon"}, shipment_id=sid, ready=True)
        service.enqueue(sid)
    for sid in dlq:
        service.send_to_dlq(sid, "address unknown")


def tab(page, name):
    return page.locator(f'#shipment-tabs [data-tab="{name}"] .count')


def stays_put(page, selector):
    """The table's top edge, to check that a message did not push it down."""
    return page.locator(selector).bounding_box()["y"]


def test_restore_takes_the_row_out_of_the_dlq_and_the_badges_follow(page, live_server, local_db, supervisor):
    shipments("s-1", "s-2", "s-3", dlq=("s-1", "s-2", "s-3"))
    log_in(page, live_server, supervisor)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/shipments/?view=dlq")
    expect(tab(page, "dlq")).to_have_text("3")
    top = stays_put(page, "#shipments-table table")
    url = page.url
    row = page.locator('tr[data-shipment="s-2"]')
    row.get_by_role("button", name="Restore").click()
    expect(row).to_have_class(re.compile("row-gone"))
    expect(row).to_contain_text("restored from the DLQ")
    expect(tab(page, "dlq")).to_have_text("2")
    expect(tab(page, "queue")).to_have_text("1")
    assert page.url == url and stays_put(page, "#shipments-table table") == top
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "dlq-restored.png"), full_page=True)
    assert ShipmentQueue().get("s-2").state == ShipmentState.QUEUED


def test_touch_and_priority_answer_in_the_row(page, live_server, local_db, supervisor):
    shipments("s-1", "s-2")
    log_in(page, live_server, supervisor)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/shipments/")
    row = page.locator('tr[data-shipment="s-1"]')
    row.get_by_role("button", name="Touch").click()
    note = row.locator(".row-note")
    expect(note).to_contain_text("moved to the back")
    note.get_by_role("button", name="Dismiss").click()
    expect(note).to_have_count(0)

    row.get_by_label("Priority of s-1").select_option("7")
    row.get_by_role("button", name="Set priority").click()
    expect(row.locator('[data-cell="priority"]')).to_have_text("7")
    expect(row.locator(".row-note")).to_contain_text("now has priority 7")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "queue-priority.png"), full_page=True)
    expect(tab(page, "queue")).to_have_text("2")
    assert ShipmentQueue().get("s-1").priority == 7


def asked(page, question: str, width: int):
    """The page's confirmation dialog: open, asking `question`, wholly on the screen."""
    dialog = page.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text(question)
    box = dialog.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
    assert box["y"] >= 0 and box["y"] + box["height"] <= page.viewport_size["height"], box
    return dialog


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize(
    "action, opener, button, text",
    [("dlq", "Send to DLQ…", "Send to the DLQ", "is in the DLQ"), ("remove", "Remove…", "Remove", "removed")],
)
def test_dlq_and_remove_ask_in_a_dialog_then_take_the_row_out(
    page, live_server, local_db, supervisor, action, opener, button, text, width
):
    shipments("s-1", "s-2")
    log_in(page, live_server, supervisor)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/shipments/")
    row = page.locator('tr[data-shipment="s-1"]')
    # Cancelled, nothing happens.
    row.get_by_role("button", name=opener).click()
    asked(page, "shipment s-1", width).get_by_role("button", name="Cancel").click()
    expect(page.locator("#confirm-dialog")).to_be_hidden()
    assert ShipmentQueue().get("s-1").state == ShipmentState.QUEUED
    row.get_by_role("button", name=opener).click()
    dialog = asked(page, "shipment s-1", width)
    if action == "dlq":
        dialog.get_by_label("Reason").fill("carrier lost it")
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / f"ask-dlq-{width}.png"), full_page=False)
    dialog.get_by_role("button", name=button).click()
    expect(row).to_have_class(re.compile("row-gone"))
    expect(row).to_contain_text(text)
    expect(tab(page, "queue")).to_have_text("1")
    if action == "dlq":
        expect(tab(page, "dlq")).to_have_text("1")
        assert ShipmentQueue().get("s-1").dlq_reason == "carrier lost it"


def test_agent_actions_change_the_row_and_the_status_counts(page, live_server, local_db, supervisor):
    ana = Agents().create("Ana Lima", SKILLS)
    Agents().create("Bea Ortiz", SKILLS)
    log_in(page, live_server, supervisor)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/agents/")
    counts = page.locator("#agent-tabs")
    expect(counts.locator('[data-tab="offline"] .count')).to_have_text("2")
    row = page.locator(f'tr[data-agent="{ana.agent_id}"]')

    row.get_by_role("button", name="Make available").click()
    expect(row.locator(".status")).to_have_text("Queued")
    expect(counts.locator('[data-tab="queued"] .count')).to_have_text("1")
    expect(counts.locator('[data-tab="offline"] .count')).to_have_text("1")

    call, _ = CallCenter().create_call({"language": "Spanish", "gender": "any"})  # Ana takes it
    page.reload()
    row.get_by_role("button", name="Release").click()
    asked(page, f"End Ana Lima's call {call.call_id}? Then: back to the queue.", 1280).get_by_role(
        "button", name="End the call"
    ).click()
    expect(row.locator(".status")).to_have_text("Queued")
    expect(row.locator(".row-note")).to_contain_text("Released Ana Lima")
    expect(counts.locator('[data-tab="attending"] .count')).to_have_text("0")

    row.get_by_role("button", name="Log off").click()
    expect(row.locator(".status")).to_have_text("Offline")
    expect(counts.locator('[data-tab="offline"] .count')).to_have_text("2")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "agents.png"), full_page=True)


PHONE = {"width": 390, "height": 844}

# Where the message is, against what can be seen of it: the card, the table that scrolls
# inside it (it clips what lies beyond its edges) and the screen.
BOXES = """note => {
  const table = note.closest("table"), card = table.closest(".card");
  const box = e => {
    const r = e.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom};
  };
  const n = box(note), t = box(table), c = box(card);
  const within = o => n.left >= o.left - 0.5 && n.right <= o.right + 0.5
    && n.top >= o.top - 0.5 && n.bottom <= o.bottom + 0.5;
  const screen = {left: 0, top: 0, right: innerWidth, bottom: innerHeight};
  return {note: n, table: t, card: c, scrolled: table.scrollLeft,
          seen: within(c) && within(t) && within(screen)};
}"""


@pytest.mark.parametrize(
    "path, row, button, note, text",
    [
        ("/agents/", "tr[data-agent]", "Make available", ".row-note", "is queued"),
        ("/shipments/", 'tr[data-shipment="s-2"]', "Touch", ".row-note", "moved to the back"),
        ("/shipments/?view=dlq", 'tr[data-shipment="s-2"]', "Restore", ".row-gone-note", "restored from the DLQ"),
    ],
    ids=["agent", "shipment", "dlq"],
)
def test_on_a_phone_the_message_shows_in_the_visible_part_of_the_card(
    page, live_server, local_db, supervisor, path, row, button, note, text
):
    Agents().create("Ana Lima", SKILLS)
    shipments("s-1", "s-2", "s-3", dlq=("s-1", "s-2", "s-3") if "dlq" in path else ())
    page.set_viewport_size(PHONE)
    log_in(page, live_server, supervisor)
    page.goto(f"{live_server.url}{path}")
    table = page.locator(".list-table")
    # The actions are the last column: scrolled to them, the row's start is out of sight.
    scrolled = table.evaluate("t => { t.scrollLeft = t.scrollWidth; return t.scrollLeft; }")
    assert scrolled > 0  # the table is wider than the phone, or this proves nothing
    # The table's top within the page (the page itself may scroll to show the row).
    where = "t => t.getBoundingClientRect().top + window.scrollY"
    top = table.evaluate(where)
    target = page.locator(row).first
    target.get_by_role("button", name=button).click()
    message = target.locator(note)
    expect(message).to_contain_text(text)
    try:
        page.wait_for_function(f"note => ({BOXES})(note).seen", arg=message.element_handle(), timeout=3000)
    except PlaywrightTimeout:
        pytest.fail(f"the message is out of sight: {message.evaluate(BOXES)}")
    # Nothing else moved to make room for it, and no page is wider than the phone.
    assert table.evaluate(where) == top
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]


@pytest.mark.parametrize("width", [1280, 390])
def test_a_waiting_caller_who_hung_up_is_ended_from_the_line_in_three_interactions(
    page, live_server, local_db, supervisor, width
):
    """From the overview: Calls, "Hung up…" on the caller's row, then "End as abandoned" in
    the dialog that names the call, whole on the screen whether one caller waits or many."""
    router = CallCenter()
    kept, _ = router.create_call({"language": "French", "gender": "X"})
    gone, _ = router.create_call({"language": "French", "gender": "X"})
    log_in(page, live_server, supervisor)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"{live_server.url}/")
    menu = page.get_by_role("button", name="Menu")
    if menu.is_visible():
        menu.click()  # on a phone the menu is folded: not one of the job's steps
    page.locator("#site-menu a", has_text="Calls").click()
    row = page.locator(f'#waiting-list tr[data-call="{gone.call_id}"]')
    row.get_by_role("button", name="Hung up…").click()
    asked(page, f"End waiting call {gone.call_id} as abandoned", width).get_by_role(
        "button", name="End as abandoned"
    ).click()

    expect(page.locator("#messages")).to_contain_text(f"Call {gone.call_id} ended as abandoned.")
    expect(page.locator(f'#waiting-list tr[data-call="{gone.call_id}"]')).to_have_count(0)
    expect(page.locator(f'#waiting-list tr[data-call="{kept.call_id}"]')).to_have_count(1)
    assert router.get_call(gone.call_id).status == "abandoned"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
