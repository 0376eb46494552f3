"""Actions on a list's rows redraw the list as it is now, re-sorted, with the tabs'
counts, without a reload; the message sits under its row (or above the list when the
item left it) and never covers a cell; on a phone every row is a card whose name,
figures and actions all show without sideways scrolling (Chromium via Playwright, on
DynamoDB Local)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
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


def note(page, item_id):
    return page.locator(f'.row-note[data-note-for="{item_id}"]')


def order(page, attribute="data-shipment"):
    return page.locator(f"tbody tr[{attribute}]").evaluate_all(f"rows => rows.map(r => r.getAttribute('{attribute}'))")


# Cells a message overlaps: none, wherever it is.
COVERED = """note => {
  const n = note.getBoundingClientRect();
  return Array.from(document.querySelectorAll("td, th")).filter(cell => {
    if (cell.contains(note)) { return false; }
    const c = cell.getBoundingClientRect();
    return c.width && c.height && c.left < n.right - 1 && n.left < c.right - 1
      && c.top < n.bottom - 1 && n.top < c.bottom - 1;
  }).map(cell => cell.textContent.trim().slice(0, 40));
}"""


def test_restore_takes_the_row_out_of_the_dlq_and_the_badges_follow(page, live_server, local_db, supervisor):
    shipments("s-1", "s-2", "s-3", dlq=("s-1", "s-2", "s-3"))
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, live_server, supervisor, "/shipments/?view=dlq")
    expect(tab(page, "dlq")).to_have_text("3")
    url = page.url
    row = page.locator('tr[data-shipment="s-2"]')
    row.get_by_role("button", name="Restore").click()
    expect(row).to_have_count(0)  # it left the list
    expect(note(page, "s-2")).to_contain_text("restored from the DLQ")
    expect(note(page, "s-2")).to_contain_text("It is queued now, so no longer in this list.")
    expect(tab(page, "dlq")).to_have_text("2")
    expect(tab(page, "queue")).to_have_text("1")
    assert page.url == url and order(page) == ["s-1", "s-3"]
    assert note(page, "s-2").evaluate(COVERED) == []
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "dlq-restored.png"), full_page=True)
    assert ShipmentQueue().get("s-2").state == ShipmentState.QUEUED


@pytest.mark.parametrize("width", [1280, 390])
def test_touch_and_priority_re_sort_the_list_at_once(page, live_server, local_db, supervisor, width):
    """Priority 9 for the fifth of five shipments of priority 3 takes it to the top; Touch
    sends the first to the back. Messages go under their rows and cover nothing."""
    shipments("s-1", "s-2", "s-3", "s-4", "s-5")
    for sid in ("s-1", "s-2", "s-3", "s-4", "s-5"):
        ShipmentQueue().set_priority(sid, 3)
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server, supervisor, "/shipments/")
    assert order(page) == ["s-1", "s-2", "s-3", "s-4", "s-5"]
    row = page.locator('tr[data-shipment="s-5"]')
    row.get_by_label("Priority of s-5").select_option("9")
    row.get_by_role("button", name="Set priority").click()
    expect(note(page, "s-5")).to_contain_text("now has priority 9")
    assert order(page) == ["s-5", "s-1", "s-2", "s-3", "s-4"]
    expect(row.locator('[data-cell="priority"]')).to_have_text("9")
    assert note(page, "s-5").evaluate(COVERED) == []

    page.locator('tr[data-shipment="s-1"]').get_by_role("button", name="Touch").click()
    expect(note(page, "s-1")).to_contain_text("moved to the back")
    assert order(page) == ["s-5", "s-2", "s-3", "s-4", "s-1"]
    assert note(page, "s-1").evaluate(COVERED) == []
    expect(note(page, "s-5")).to_have_count(0)  # one message at a time: the list's latest
    note(page, "s-1").get_by_role("button", name="Dismiss").click()
    expect(note(page, "s-1")).to_have_count(0)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"queue-priority-{width}.png"), full_page=True)
    expect(tab(page, "queue")).to_have_text("5")
    assert ShipmentQueue().get("s-5").priority == 9
    assert page.evaluate("document.documentElement.scrollWidth") <= width


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
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server, supervisor, "/shipments/")
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
    expect(row).to_have_count(0)
    expect(note(page, "s-1")).to_contain_text(text)
    expect(tab(page, "queue")).to_have_text("1")
    if action == "dlq":
        expect(tab(page, "dlq")).to_have_text("1")
        assert ShipmentQueue().get("s-1").dlq_reason == "carrier lost it"


def test_agent_actions_change_the_row_and_the_status_counts(page, live_server, local_db, supervisor):
    ana = Agents().create("Ana Lima", SKILLS)
    Agents().create("Bea Ortiz", SKILLS)
    page.set_viewport_size({"width": 1280, "height": 900})
    log_in(page, live_server, supervisor, "/agents/")
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
    expect(note(page, ana.agent_id)).to_contain_text("Released Ana Lima")
    expect(counts.locator('[data-tab="attending"] .count')).to_have_text("0")

    row.get_by_role("button", name="Log off").click()
    expect(row.locator(".status")).to_have_text("Offline")
    expect(counts.locator('[data-tab="offline"] .count')).to_have_text("2")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "agents.png"), full_page=True)


PHONE = {"width": 390, "height": 844}

# Each row's card: where its cells are against the screen's width.
CARDS = """rows => rows.map(row => {
  const r = row.getBoundingClientRect();
  const cells = Array.from(row.querySelectorAll(":scope > td")).map(c => c.getBoundingClientRect());
  const buttons = Array.from(row.querySelectorAll("button")).map(b => b.getBoundingClientRect());
  return {left: r.left, right: r.right,
          inside: [...cells, ...buttons].every(b => b.left >= -0.5 && b.right <= innerWidth + 0.5),
          title: row.querySelector(".card-title") ? row.querySelector(".card-title").textContent.trim() : null};
})"""


@pytest.mark.parametrize(
    "path, attribute, button, text",
    [
        ("/agents/", "data-agent", "Make available", "is queued"),
        ("/shipments/", "data-shipment", "Touch", "moved to the back"),
        ("/shipments/?view=dlq", "data-shipment", "Restore", "restored from the DLQ"),
    ],
    ids=["agent", "shipment", "dlq"],
)
def test_on_a_phone_rows_are_cards_with_everything_in_sight(
    page, live_server, local_db, supervisor, path, attribute, button, text
):
    Agents().create("Ana Lima", SKILLS)
    shipments("s-1", "s-2", "s-3", dlq=("s-1", "s-2", "s-3") if "dlq" in path else ())
    page.set_viewport_size(PHONE)
    log_in(page, live_server, supervisor, path)
    rows = page.locator(f".list-table tbody tr[{attribute}]")
    cards = rows.evaluate_all(CARDS)
    assert cards and all(card["inside"] for card in cards), cards
    assert all(card["title"] for card in cards)  # who or what first
    # Each figure says which it is.
    labels = rows.first.locator("td[data-label]").evaluate_all("cells => cells.map(c => c.dataset.label)")
    assert labels and all(labels), labels
    target = rows.last
    item = target.get_attribute(attribute)
    target.get_by_role("button", name=button).click()
    message = note(page, item)
    expect(message).to_contain_text(text)
    expect(message).to_be_in_viewport()
    assert message.evaluate(COVERED) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(
        path=str(SHOTS / f"phone-{path.strip('/').replace('/', '-').replace('?', '-')}.png"), full_page=True
    )


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("waiting", [1, 2], ids=["one-waits", "two-wait"])
def test_a_waiting_caller_who_hung_up_is_ended_from_the_line_in_three_interactions(
    page, live_server, local_db, supervisor, width, waiting
):
    """From the overview: Calls, "Hung up…" on the caller's row, then "End as abandoned" in
    the dialog that names the call, whole on the screen whether one caller waits or many."""
    router = CallCenter()
    kept = router.create_call({"language": "French", "gender": "X"})[0] if waiting == 2 else None
    gone, _ = router.create_call({"language": "French", "gender": "X"})
    page.set_viewport_size({"width": width, "height": 900})
    log_in(page, live_server, supervisor)
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
    if kept:
        expect(page.locator(f'#waiting-list tr[data-call="{kept.call_id}"]')).to_have_count(1)
    assert router.get_call(gone.call_id).status == "abandoned"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
