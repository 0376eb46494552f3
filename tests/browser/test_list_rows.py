"""Actions on a list's rows change the row and the tabs' counts at once, without a reload;
the message sits in the row and never moves the table (Chromium via Playwright, on
DynamoDB Local)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from queues_app.agents.roster import Agents
from queues_app.agents.router import Router
from queues_app.shipments.queue import ShipmentQueue, ShipmentState
from tests.browser.test_login import log_in

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


@pytest.mark.parametrize(
    "action, button, text", [("dlq", "Send s-1 to the DLQ", "is in the DLQ"), ("remove", "Remove s-1", "removed")]
)
def test_dlq_and_remove_ask_in_place_then_take_the_row_out(
    page, live_server, local_db, supervisor, action, button, text
):
    shipments("s-1", "s-2")
    log_in(page, live_server, supervisor)
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/shipments/")
    row = page.locator('tr[data-shipment="s-1"]')
    row.locator("summary", has_text="Send to DLQ…" if action == "dlq" else "Remove…").click()
    if action == "dlq":
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "ask-dlq.png"), full_page=True)
    row.get_by_role("button", name=button).click()
    expect(row).to_have_class(re.compile("row-gone"))
    expect(row).to_contain_text(text)
    expect(tab(page, "queue")).to_have_text("1")
    if action == "dlq":
        expect(tab(page, "dlq")).to_have_text("1")


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

    Router().create_call({"language": "Spanish", "gender": "any"})  # Ana takes it
    page.reload()
    row.get_by_role("button", name="Release").click()
    expect(row.locator(".status")).to_have_text("Queued")
    expect(row.locator(".row-note")).to_contain_text("Released Ana Lima")
    expect(counts.locator('[data-tab="attending"] .count')).to_have_text("0")

    row.get_by_role("button", name="Log off").click()
    expect(row.locator(".status")).to_have_text("Offline")
    expect(counts.locator('[data-tab="offline"] .count')).to_have_text("2")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "agents.png"), full_page=True)
