"""Every page passes axe-core's checks at 1280 and 390 px with no serious or critical
violation, and an alarm is said to a screen reader once, when it starts, not at every poll."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.shipments.queue import ShipmentQueue
from tests.helpers.browser import log_in

# axe-core from npm (package.json's devDependencies): injected by the tests, never served.
AXE = Path(__file__).resolve().parents[2] / "node_modules" / "axe-core" / "axe.min.js"
WIDTHS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}
PAGES = [
    "/",
    "/agents/",
    "/agents/new",
    "/calls/",
    "/callbacks/",
    "/calls/find?call_id=zzzz",
    "/queues/",
    "/lines/",
    "/lines/new",
    "/lines/profiles/new",
    "/shipments/",
    "/shipments/?view=dlq",
    "/tasks/",
    "/audit/",
    "/reports/",
    "/reports/agents/",
    "/system/",
    "/wallboard/",
]
SEVERE = ("serious", "critical")

VIOLATIONS = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 3).map(n => n.target.join(" ")),
  }));
}"""


@pytest.fixture
def demo(local_db):
    call_command("seed_demo", seed=5, stdout=open(os.devnull, "w"))
    agent = Agents().list(status=AgentStatus.ATTENDING, limit=1).items[0]
    shipment = ShipmentQueue().list_dlq(limit=1).items[0]
    return [f"/agents/{agent.agent_id}/", f"/calls/{agent.call_id}/", f"/shipments/{shipment.shipment_id}/"]


def severe_violations(page) -> list[dict]:
    page.add_script_tag(path=str(AXE))
    return [v for v in page.evaluate(VIOLATIONS) if v["impact"] in SEVERE]


@pytest.mark.parametrize("width", WIDTHS)
def test_every_page_has_no_serious_accessibility_violation(browser, live_server, demo, supervisor, width):
    # The script is injected into the page, which the site's Content-Security-Policy forbids.
    page = browser.new_context(viewport=WIDTHS[width], bypass_csp=True).new_page()
    log_in(page, live_server, supervisor)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    found = {}
    for path in PAGES + demo:
        page.goto(f"{live_server.url}{path}")
        violations = severe_violations(page)
        if violations:
            found[path] = violations
    assert found == {}, json.dumps(found, indent=1)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_sign_in_page_has_no_serious_accessibility_violation(browser, live_server, local_db, width):
    page = browser.new_context(viewport=WIDTHS[width], bypass_csp=True).new_page()
    page.goto(f"{live_server.url}/login/")
    assert severe_violations(page) == []


# Every text the live region of alarms is given, and the shipments panel's redraws.
WATCH = """() => {
  window.said = [];
  new MutationObserver(() => window.said.push(document.getElementById("alarm-news").textContent))
    .observe(document.getElementById("alarm-news"), { childList: true, characterData: true, subtree: true });
  window.redrawn = 0;
  // Drawn anew from the live stream or from a poll alike.
  document.addEventListener("htmx:load", (event) => {
    if (event.detail.elt.id === "shipments-panel") { window.redrawn += 1; }
  });
}"""


POLL_MS = 2000  # the shipments panel's interval


def two_more_polls(page):
    """The page's clock moved on by the panel's interval twice, each time until the panel
    is redrawn (pushed on the live stream as time passes, or polled on the page's clock)."""
    for _ in range(2):
        redrawn = page.evaluate("redrawn")
        page.clock.run_for(POLL_MS)
        page.wait_for_function("(n) => window.redrawn > n", arg=redrawn, timeout=10_000)


@pytest.mark.parametrize("width", WIDTHS)
def test_an_alarm_is_said_once_when_it_starts_not_at_every_poll(
    browser, live_server, local_db, supervisor, width, quick_pushes
):
    queue = ShipmentQueue()
    shipment = queue.create({"destination": "Oslo"}, ready=True)
    queue.enqueue(shipment.shipment_id)
    page = browser.new_context(viewport=WIDTHS[width]).new_page()
    page.clock.install()  # runs as time passes; the test moves it on to the panels' next polls
    log_in(page, live_server, supervisor)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    page.evaluate(WATCH)

    queue.send_to_dlq(shipment.shipment_id, "address unknown")
    page.clock.run_for(POLL_MS)
    expect(page.locator('[data-alarm="live-dlq"]')).to_be_visible(timeout=8000)
    two_more_polls(page)
    expect(page.locator('[data-alarm="live-dlq"]')).to_be_visible()
    assert page.evaluate("said") == ["Alarm: Shipments: 1 in the dead-letter queue."]
    # The panel's own list is no live region: redrawn at every poll, it would be said each time.
    assert page.locator(".alarms[role=alert], .alarms[aria-live]").count() == 0


def test_alarms_on_the_page_when_it_opens_are_read_with_it_not_announced(
    browser, live_server, local_db, supervisor, quick_pushes
):
    queue = ShipmentQueue()
    shipment = queue.create({"destination": "Oslo"}, ready=True)
    queue.enqueue(shipment.shipment_id)
    queue.send_to_dlq(shipment.shipment_id, "address unknown")
    page = browser.new_context().new_page()
    page.clock.install()  # runs as time passes; the test moves it on to the panels' next polls
    log_in(page, live_server, supervisor)
    expect(page.locator('[data-alarm="live-dlq"]')).to_be_visible()
    page.evaluate(WATCH)
    two_more_polls(page)
    assert page.evaluate("said") == []
    assert page.locator("#alarm-news").text_content() == ""
