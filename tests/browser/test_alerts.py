"""Alarms reach a supervisor whose Switchboard tab is in the background: the tab's title
counts them and a desktop notification says when one starts, once."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from queues_app.centre.call_center import CallCenter
from queues_app.shipments.queue import ShipmentQueue
from tests.helpers.browser import log_in

WIDTHS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}

# The tab's visibility as the test sets it (`showTab("hidden")`), and every desktop
# notification the page makes, recorded instead of shown.
BACKGROUND_TAB = """
(() => {
  let state = "visible";
  Object.defineProperty(document, "visibilityState", { get: () => state, configurable: true });
  Object.defineProperty(document, "hidden", { get: () => state !== "visible", configurable: true });
  window.showTab = (next) => { state = next; document.dispatchEvent(new Event("visibilitychange")); };
  window.notifications = [];
  window.permissionAsked = 0;
  window.Notification = class {
    constructor(title, options) { window.notifications.push({ title, ...options }); }
    static permission = "%s";
    static requestPermission() {
      window.permissionAsked += 1;
      window.Notification.permission = "granted";
      return Promise.resolve("granted");
    }
  };
})();
"""


def tab(browser, live_server, user, path="/", *, permission="granted", viewport=WIDTHS["desktop"]):
    context = browser.new_context(viewport=viewport, permissions=["notifications"])
    context.add_init_script(BACKGROUND_TAB % permission)
    page = context.new_page()
    page.clock.install()  # the check every 15 s runs when the test moves the page's clock on
    log_in(page, live_server, user, path)
    return page


def dead_letter(destination):
    shipments = ShipmentQueue()
    shipment = shipments.create({"destination": destination}, ready=True)
    shipments.enqueue(shipment.shipment_id)
    shipments.send_to_dlq(shipment.shipment_id, "address unknown")
    return shipment


@pytest.fixture
def late_callers(settings):
    """Any caller who waits is past the alarm's threshold."""
    limits = settings.SWITCHBOARD_ALARMS["oldest_age_seconds"]
    settings.SWITCHBOARD_ALARMS = {"oldest_age_seconds": {**limits, "calls": 0}}


@pytest.mark.parametrize("width", WIDTHS)
def test_a_hidden_tab_counts_the_alarms_in_its_title_and_notifies_each_new_one_once(
    browser, live_server, local_db, supervisor, late_callers, width
):
    page = tab(browser, live_server, supervisor, "/agents/", viewport=WIDTHS[width])
    expect(page).to_have_title("Agents · Switchboard")
    shipment = dead_letter("Oslo")  # after the supervisor left the overview

    page.evaluate("showTab('hidden')")  # checks at once, then every 15 s
    expect(page).to_have_title("(1) Agents · Switchboard")
    # Started out of the supervisor's sight: they hear of it.
    assert page.evaluate("notifications") == [
        {"title": "Switchboard: Shipments", "body": "1 in the dead-letter queue", "tag": "switchboard-live-dlq"}
    ]

    CallCenter().create_call({"language": "French", "gender": "X"})
    page.clock.fast_forward(15_000)
    expect(page).to_have_title("(2) Agents · Switchboard")
    notes = page.evaluate("notifications")
    assert [n["tag"] for n in notes] == ["switchboard-live-dlq", "switchboard-calls-age"]
    assert notes[1]["title"] == "Switchboard: Calls and agents"

    # The same alarms at the next checks: no notification again.
    oslo = ShipmentQueue().restore(shipment.shipment_id).item
    page.clock.fast_forward(15_000)
    expect(page).to_have_title("(1) Agents · Switchboard")
    page.clock.fast_forward(15_000)
    ShipmentQueue().send_to_dlq(oslo.shipment_id, "address unknown again")
    page.clock.fast_forward(15_000)
    expect(page).to_have_title("(2) Agents · Switchboard")
    # The DLQ's alarm ended and started again: a new alarm, told again; the callers' never repeated.
    assert [n["tag"] for n in page.evaluate("notifications")] == [
        "switchboard-live-dlq",
        "switchboard-calls-age",
        "switchboard-live-dlq",
    ]

    page.evaluate("showTab('visible')")
    expect(page).to_have_title("Agents · Switchboard")


def test_alarms_shown_on_the_overview_before_the_tab_is_hidden_are_not_notified(
    browser, live_server, local_db, supervisor
):
    dead_letter("Oslo")
    page = tab(browser, live_server, supervisor)
    expect(page.locator('[data-alarm="live-dlq"]')).to_be_visible()
    page.evaluate("showTab('hidden')")
    expect(page).to_have_title("(1) Overview · Switchboard")
    page.clock.fast_forward(15_000)
    expect(page).to_have_title("(1) Overview · Switchboard")
    assert page.evaluate("notifications") == []


def test_without_permission_nothing_is_notified_and_the_button_asks_for_it(browser, live_server, local_db, supervisor):
    page = tab(browser, live_server, supervisor, "/agents/", permission="default")
    dead_letter("Oslo")
    page.evaluate("showTab('hidden')")
    expect(page).to_have_title("(1) Agents · Switchboard")
    assert page.evaluate("notifications") == []

    page.evaluate("showTab('visible')")
    button = page.get_by_role("button", name="Desktop alerts")
    button.click()
    expect(button).to_be_hidden()
    assert page.evaluate("permissionAsked") == 1


def test_where_the_browser_has_no_notifications_there_is_no_button(browser, live_server, local_db, supervisor):
    context = browser.new_context()
    context.add_init_script("delete window.Notification;")
    page = context.new_page()
    log_in(page, live_server, supervisor)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.get_by_role("button", name="Desktop alerts")).to_be_hidden()
