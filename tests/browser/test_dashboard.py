"""Supervisors and viewers use the dashboard in a real browser (Chromium via Playwright)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from django.core.management import call_command
from playwright.sync_api import expect

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.shipments.queue import ShipmentQueue, ShipmentState
from tests.helpers.browser import follow, log_in

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def test_enqueueing_an_agent_in_one_browser_changes_the_depth_in_another(browser, live_server, local_db, supervisor):
    ada = Agents().create("Ada Lovelace", {"language": ["French"], "gender": ["F"]})
    watcher = browser.new_context().new_page()
    watcher.clock.install()  # runs as time passes; the test moves it on to the panels' next poll
    log_in(watcher, live_server, supervisor)
    queued = watcher.locator('[data-figure="agents-queued"]')
    expect(queued).to_have_text("0")
    expect(watcher.locator('[data-cell="French · F"] .supply-n')).to_contain_text("0 queued")

    actor = browser.new_context().new_page()
    log_in(actor, live_server, supervisor, "/agents/")
    row = actor.locator(f'tr[data-agent="{ada.agent_id}"]')
    row.get_by_role("button", name="Make available").click()
    # The message sits under the row it is about.
    expect(actor.locator(f'.row-note[data-note-for="{ada.agent_id}"]')).to_contain_text("Ada Lovelace is queued")
    # The agents table refreshed itself after the change (HX-Trigger), without a reload.
    expect(row.locator(".status")).to_have_text("Queued")

    # The other browser never reloads: its panels poll every 2 seconds.
    url_before = watcher.url
    watcher.clock.run_for(2000)
    expect(queued).to_have_text("1", timeout=8000)
    expect(watcher.locator('[data-cell="French · F"] .supply-n')).to_contain_text("1 queued", timeout=8000)
    assert watcher.url == url_before
    assert Agents().get(ada.agent_id).status == AgentStatus.QUEUED


def test_a_supervisor_assigns_a_caller_and_sees_why(page, live_server, local_db, supervisor):
    router = CallCenter()
    first = Agents().create("Grace Hopper", {"language": ["Spanish"], "gender": ["F"]})
    second = Agents().create("Frances Allen", {"language": ["Spanish", "English"], "gender": ["F"]})
    router.make_available(first.agent_id)
    router.make_available(second.agent_id)
    log_in(page, live_server, supervisor, "/calls/")
    page.get_by_label("Language").select_option("Spanish")
    page.get_by_label("Gender").select_option("F")
    page.get_by_role("button", name="Assign now").click()
    expect(page.locator("#messages")).to_contain_text("assigned to Grace Hopper")
    expect(page.locator(".why")).to_contain_text("Grace Hopper")
    expect(page.locator(".why-chosen")).to_contain_text("chosen: the earliest-queued agent")
    expect(page.locator(".why-later")).to_contain_text("Frances Allen")


def test_a_shipment_goes_to_the_dlq_after_confirmation_and_comes_back(page, live_server, local_db, supervisor):
    queue = ShipmentQueue()
    queue.create({"destination": "Lisbon"}, shipment_id="ship-lisbon", ready=True)
    queue.enqueue("ship-lisbon")
    log_in(page, live_server, supervisor, "/shipments/")
    queued_row = page.locator('tr[data-shipment="ship-lisbon"]')
    queued_row.get_by_role("button", name="Send to DLQ…").click()  # asked in the page's dialog
    dialog = page.locator("#confirm-dialog")
    expect(dialog).to_contain_text("Send shipment ship-lisbon to the dead-letter queue?")
    assert queue.get("ship-lisbon").state == ShipmentState.QUEUED  # asking changed nothing
    dialog.get_by_role("button", name="Send to the DLQ").click()
    expect(page.locator('.row-note[data-note-for="ship-lisbon"]')).to_contain_text("Shipment ship-lisbon is in the DLQ")
    expect(queued_row).to_have_count(0)  # it left the queue's list

    follow(page, page.get_by_role("link", name=re.compile("Dead-letter queue")))
    row = page.locator('tr[data-shipment="ship-lisbon"]')
    expect(row).to_contain_text("Sent to the DLQ by a supervisor")
    row.get_by_role("button", name="Restore").click()
    expect(page.locator('.row-note[data-note-for="ship-lisbon"]')).to_contain_text("restored from the DLQ")
    assert queue.get("ship-lisbon").state == ShipmentState.QUEUED
    page.goto(f"{live_server.url}/audit/")
    expect(page.locator('.trail [data-action="shipment.restore"]')).to_contain_text(
        "by sam-supervisor on the dashboard"
    )
    expect(page.locator('.trail [data-action="shipment.dlq"]')).to_have_count(1)


def test_a_viewer_sees_no_actions_and_cannot_post_one(page, live_server, local_db, viewer):
    ada = Agents().create("Ada Lovelace", {"language": ["French"], "gender": ["F"]})
    log_in(page, live_server, viewer, "/agents/")
    expect(page.get_by_text("Ada Lovelace")).to_be_visible()
    expect(page.get_by_role("button", name="Make available")).to_have_count(0)
    expect(page.get_by_role("link", name="New agent")).to_have_count(0)
    # Even a hand-made request with a valid CSRF token is refused.
    status = page.evaluate(
        """async (url) => {
        const token = document.body.getAttribute('hx-headers').match(/"x-csrftoken": "([^"]+)"/)[1];
        const response = await fetch(url, {method: 'POST', headers: {'X-CSRFToken': token}});
        return response.status;
    }""",
        f"/agents/{ada.agent_id}/available",
    )
    assert status == 403
    assert Agents().get(ada.agent_id).status == AgentStatus.OFFLINE


def test_screenshots_of_every_page(page, live_server, local_db, staff, tmp_path, settings):
    """Saves a screenshot of each page at a desk's width and a phone's (phone-<page>.png),
    to docs/screenshots with SAVE_SCREENSHOTS=1. One call rings at a queued agent, not
    picked up yet (offers on, ANSWER_TIMEOUT_SECONDS)."""
    call_command("seed_demo", seed=5, stdout=open(os.devnull, "w"))
    settings.ANSWER_TIMEOUT_SECONDS = 30
    queued = Agents().list(status=AgentStatus.QUEUED, limit=1).items[0]
    call, _ = CallCenter().create_call({name: values[0] for name, values in queued.skills.items()})
    assert Agents().get(call.agent_id).status == AgentStatus.RINGING
    lines = CallCenter().lines  # two lines, for the Lines page (every caller above is on main)
    lines.put({"line_id": "general", "name": "General", "service_level_seconds": 60})
    lines.put(
        {
            "line_id": "support",
            "name": "Support",
            "requires": {"language": "French"},
            "service_level_seconds": 30,
            "hours": {day: [["08:00", "18:00"]] for day in ("mon", "tue", "wed", "thu", "fri")},
            "max_wait_seconds": 600,
            "overflow": {"to_line": "general"},
        }
    )
    folder = SCREENSHOTS if os.environ.get("SAVE_SCREENSHOTS") == "1" else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1280, "height": 900})
    agent = Agents().list(status=AgentStatus.ATTENDING, limit=1).items[0]
    dlq = ShipmentQueue().list_dlq(limit=1).items[0]
    shots = {
        "overview": "/",
        "agents": "/agents/",
        "agent-detail": f"/agents/{agent.agent_id}/",
        "calls": "/calls/",
        "call-detail": f"/calls/{agent.call_id}/",
        "callbacks": "/callbacks/",
        "queues": "/queues/",
        "lines": "/lines/",
        "line-edit": "/lines/support/",
        "shipments": "/shipments/",
        "shipments-dlq": "/shipments/?view=dlq",
        "shipment-detail": f"/shipments/{dlq.shipment_id}/",
        "tasks": "/tasks/",
        "audit": "/audit/",
        "reports": "/reports/",
        "agent-report": "/reports/agents/",
        "system": "/system/",
        "wallboard": "/wallboard/",
        "admin-agents": "/admin/queues_app/agententry/",
        "admin-shipments": "/admin/queues_app/shipmententry/?view=dlq",
    }
    # A bulk action's confirmation page, then the action (so the audit trail has entries).
    log_in(page, live_server, staff, "/agents/?status=queued")
    page.locator('input[name="ids"]').nth(0).check()
    page.locator('input[name="ids"]').nth(1).check()
    page.locator("#bulk-form select").select_option("offline")
    page.locator("#bulk-form").get_by_role("button", name="Apply…").click()
    expect(page.locator("[data-count]")).to_have_text("2")
    page.screenshot(path=str(folder / "confirm.png"), full_page=True)
    page.get_by_role("button", name="Yes, go ahead").click()
    expect(page.locator("#messages")).to_contain_text("Log off: 2 logged off.")
    for name, path in shots.items():
        response = page.goto(f"{live_server.url}{path}")
        assert response.status == 200, (name, response.status)
        page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
        assert (folder / f"{name}.png").stat().st_size > 10_000, name
    page.set_viewport_size({"width": 390, "height": 844})
    for name, path in shots.items():
        if name.startswith("admin"):
            continue  # Django's admin has its own phone layout
        page.goto(f"{live_server.url}{path}")
        page.screenshot(path=str(folder / f"phone-{name}.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, name
