"""The dashboard on a phone, with the keyboard and in the dark: at 390 px no page is wider
than the screen and every menu item can be reached behind the menu button; a skip link
leads to the content and focus is always visible; the dark theme follows the system's
setting with readable contrast; times show in the centre's time zone."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.shipments.queue import ShipmentQueue
from tests.helpers.browser import log_in

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
MENU = [
    "Overview",
    "Agents",
    "Calls",
    "Queues",
    "Shipments",
    "Tasks",
    "Reports",
    "Audit trail",
    "System",
    "Wallboard",
    "Admin",
]
TOP_LEVEL = [
    "/",
    "/agents/",
    "/calls/",
    "/callbacks/",
    "/queues/",
    "/lines/",
    "/shipments/",
    "/tasks/",
    "/audit/",
    "/reports/",
    "/reports/agents/",
    "/system/",
]


@pytest.fixture
def demo(local_db):
    call_command("seed_demo", seed=5, stdout=open(os.devnull, "w"))
    agent = Agents().list(status=AgentStatus.ATTENDING, limit=1).items[0]
    shipment = ShipmentQueue().list_dlq(limit=1).items[0]
    return {
        "details": [
            f"/agents/{agent.agent_id}/",
            f"/calls/{agent.call_id}/",
            f"/shipments/{shipment.shipment_id}/",
            "/shipments/?view=dlq",
            "/shipments/?view=in_flight",
        ],
        "agent": agent,
    }


def page_in(browser, live_server, user, path="/", **context):
    page = browser.new_context(**context).new_page()
    log_in(page, live_server, user, path)
    if path == "/":
        expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    return page


def page_width(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


# Each menu item as a tap would find it: its name, whether it shows and is enabled, its
# box, and whether the element at its centre (scrolled into view) is the item or inside
# it, as Playwright's actionability checks before a click; one round trip for them all.
REACH = """items => items.map(item => {
  const box = item.getBoundingClientRect();
  item.scrollIntoView({block: "nearest", inline: "nearest"});
  const r = item.getBoundingClientRect();
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return {
    name: item.textContent.trim(),
    visible: item.checkVisibility() && r.width > 0 && r.height > 0,
    enabled: !item.matches(":disabled, [aria-disabled=true]"),
    x: box.left,
    width: box.width,
    reached: hit !== null && item.contains(hit),
  };
})"""


def test_on_a_phone_no_page_is_wider_than_the_screen_and_every_menu_item_can_be_reached(
    browser, live_server, demo, staff
):
    page = page_in(browser, live_server, staff, viewport=PHONE)
    menu_button = page.get_by_role("button", name="Menu")
    menu = page.locator("#site-menu")
    # Every item by its role and name; together they must be the twelve, each once.
    items = menu.get_by_role("button", name="Log out")
    for name in MENU:
        items = items.or_(menu.get_by_role("link", name=name, exact=True))
    for path in TOP_LEVEL + demo["details"]:
        if path != "/":  # page_in has just opened the overview
            page.goto(f"{live_server.url}{path}")
        assert page_width(page) <= PHONE["width"], path

        # Folded: the items are out of sight until the button opens the menu.
        expect(menu_button).to_have_attribute("aria-expanded", "false")
        expect(menu.get_by_role("link", name="Agents", exact=True)).to_be_hidden()
        menu_button.click()
        expect(menu_button).to_have_attribute("aria-expanded", "true")
        found = items.evaluate_all(REACH)
        assert [item["name"] for item in found] == [*MENU, "Log out"], (path, found)
        for item in found:
            assert item["visible"] and item["enabled"] and item["reached"], (path, item)
            assert item["x"] >= 0 and item["x"] + item["width"] <= PHONE["width"], (path, item)
        assert page_width(page) <= PHONE["width"], (path, "menu open")
        # Escape folds it again and gives focus back to the button.
        page.keyboard.press("Escape")
        expect(menu_button).to_have_attribute("aria-expanded", "false")
        expect(menu_button).to_be_focused()

    # An item taken from the open menu goes where it says.
    menu_button.click()
    menu.get_by_role("link", name="Shipments", exact=True).click()
    expect(page).to_have_url(re.compile(r"/shipments/$"))
    expect(page.get_by_role("heading", name="Shipments")).to_be_visible()


# Every table cell, button and link of the page's tables that reaches past the screen, or
# that its table cuts off (a table that scrolls sideways hides what lies past its edge).
OUT_OF_SIGHT = """() => Array.from(document.querySelectorAll("table.grid")).flatMap(table => {
  const clipped = table.scrollWidth > table.clientWidth + 1;
  const parts = ":scope > tbody :is(td, th, button, a, select)";
  return Array.from(table.querySelectorAll(parts)).filter(e => {
    const r = e.getBoundingClientRect();
    return e.checkVisibility() && r.width && (r.left < -0.5 || r.right > innerWidth + 0.5 || clipped);
  }).map(e => e.tagName + ": " + e.textContent.trim().slice(0, 30));
})"""


def test_on_a_phone_every_table_is_cards_with_nothing_out_of_sight(browser, live_server, demo, supervisor):
    page = page_in(browser, live_server, supervisor, viewport=PHONE)
    for path in TOP_LEVEL + demo["details"]:
        page.goto(f"{live_server.url}{path}")
        assert page.evaluate(OUT_OF_SIGHT) == [], path
        assert page_width(page) <= PHONE["width"], path
        # Each card leads with what it is about, and each figure says which it is.
        for row in page.locator("table.grid > tbody > tr:not(.row-note-row)").all()[:5]:
            assert row.locator(":scope > .card-title").count() == 1, path
            unnamed = row.locator(
                ":scope > td:not(.card-title):not(.select):not(.row-end):not(.unlabelled):not([data-label])"
            )
            assert unnamed.evaluate_all("cells => cells.filter(c => c.colSpan === 1).length") == 0, path


def test_on_a_phone_the_overview_leads_with_the_supervisors_figures(browser, live_server, demo, supervisor):
    page = page_in(browser, live_server, supervisor, viewport=PHONE)
    # Measured in one turn of the page's script: a panel pushed between two measures would be
    # measured detached from the page (at 0).
    top = page.evaluate(
        """names => Object.fromEntries(names.map(n =>
            [n, document.getElementById(n + "-panel").getBoundingClientRect().top + scrollY]))""",
        ["calls", "service_level", "grid", "shipments", "tasks", "history"],
    )
    assert list(top) == sorted(top, key=top.get), top
    # The service level starts within the second screen, not three screens down.
    assert top["service_level"] < 2 * PHONE["height"], top
    expect(page.locator("#capacity-panel")).to_have_count(0)  # DynamoDB's figures: the System page
    page.goto(f"{live_server.url}/system/")
    expect(page.locator("#capacity-panel")).to_contain_text("DynamoDB, last 15 minutes")


def test_on_a_wide_screen_the_menu_shows_without_a_button(browser, live_server, local_db, supervisor):
    page = page_in(browser, live_server, supervisor, viewport=DESKTOP)
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    for name in MENU[:-1]:  # Admin is for staff
        expect(page.locator("#site-menu").get_by_role("link", name=name, exact=True)).to_be_visible()
    assert page_width(page) <= DESKTOP["width"]


def test_without_scripts_the_menu_stays_open_on_a_phone(browser, live_server, local_db, supervisor):
    page = browser.new_context(viewport=PHONE, java_script_enabled=False).new_page()
    log_in(page, live_server, supervisor)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    expect(page.locator("#site-menu").get_by_role("link", name="Audit trail")).to_be_visible()
    assert page_width(page) <= PHONE["width"]


def test_the_skip_link_comes_first_and_moves_focus_to_the_content(browser, live_server, local_db, supervisor):
    page = page_in(browser, live_server, supervisor, "/agents/", viewport=DESKTOP)
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).not_to_be_in_viewport()  # out of sight until focused
    page.keyboard.press("Tab")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(page.locator("main#content")).to_be_focused()
    # The next Tab lands inside the content, past the menu.
    page.keyboard.press("Tab")
    assert page.evaluate("document.getElementById('content').contains(document.activeElement)")
    assert page.evaluate("document.activeElement !== document.getElementById('content')")


FOCUS_RING = """el => { const s = getComputedStyle(el);
  return {style: s.outlineStyle, width: parseFloat(s.outlineWidth), color: s.outlineColor}; }"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_keyboard_focus_is_visible_on_links_buttons_and_fields(browser, live_server, local_db, supervisor, scheme):
    page = page_in(browser, live_server, supervisor, "/calls/", viewport=DESKTOP, color_scheme=scheme)
    seen = set()
    for _ in range(25):
        page.keyboard.press("Tab")
        tag = page.evaluate("document.activeElement.tagName")
        if tag == "BODY":  # past the last control: focus went to the browser
            break
        ring = page.evaluate_handle("document.activeElement").evaluate(FOCUS_RING)
        assert ring["style"] != "none" and ring["width"] >= 2, (tag, ring)
        seen.add(tag)
    assert {"A", "BUTTON", "SELECT"} <= seen, seen


# The colour of an element's text and the background it sits on (walking up through
# transparent ancestors and blending translucent ones), as [r, g, b].
COLOURS = """el => {
  const parse = c => { const m = c.match(/[\\d.]+/g).map(Number); return [m[0], m[1], m[2], m.length > 3 ? m[3] : 1]; };
  const layers = [];
  for (let n = el; n; n = n.parentElement) {
    const bg = parse(getComputedStyle(n).backgroundColor);
    if (bg[3] > 0) { layers.push(bg); if (bg[3] >= 1) break; }
  }
  let base = [255, 255, 255];
  for (const [r, g, b, a] of layers.reverse()) {
    base = [r * a + base[0] * (1 - a), g * a + base[1] * (1 - a), b * a + base[2] * (1 - a)];
  }
  const ink = parse(getComputedStyle(el).color);
  return {ink: ink.slice(0, 3), background: base};
}"""


def luminance(rgb) -> float:
    def channel(c):
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


# What a supervisor reads all day: text, links, badges, table headings and cells,
# alarms and banners, tabs and counts, buttons and status words.
READ_ALL_DAY = {
    "/": ["h1", ".muted", "#calls-panel dt", "#calls-panel dd", ".alarms li", ".badge", "#site-menu a", ".freshness"],
    "/shipments/": [
        ".tabs a",
        ".tabs .count",
        ".count-bad",
        "table.grid th",
        "table.grid td",
        "table.grid a",
        "button",
    ],
    "/shipments/?view=dlq": [".status-in_dlq, .reason", "table.grid td"],
    "/agents/": [".status-queued", ".status-offline", ".status-attending", ".chip"],
}


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_text_badges_tables_and_banners_are_readable_in_both_themes(browser, live_server, demo, supervisor, scheme):
    page = page_in(browser, live_server, supervisor, viewport=DESKTOP, color_scheme=scheme)
    poor = []
    for path, selectors in READ_ALL_DAY.items():
        page.goto(f"{live_server.url}{path}")
        for selector in selectors:
            found = page.locator(selector)
            assert found.count(), (path, selector)
            for i in range(min(found.count(), 5)):
                colours = colours_of(page, selector, i)
                ratio = contrast(colours["ink"], colours["background"])
                if ratio < 4.5:
                    poor.append((path, selector, i, colours, round(ratio, 2)))
    assert not poor


def colours_of(page, selector: str, index: int = 0) -> dict:
    # Found and measured in one turn of the page's script: a panel pushed in between would be
    # measured detached, without styles.
    return page.evaluate(f"([s, i]) => ({COLOURS})(document.querySelectorAll(s)[i])", [selector, index])


def test_the_dark_theme_follows_the_system_setting(browser, live_server, local_db, supervisor):
    for scheme, dark in (("dark", True), ("light", False)):
        page = page_in(browser, live_server, supervisor, viewport=DESKTOP, color_scheme=scheme)
        body = colours_of(page, "body")
        card = colours_of(page, "#calls-panel")
        if dark:
            assert luminance(body["background"]) < 0.05 and luminance(body["ink"]) > 0.6, body
            assert luminance(card["background"]) < 0.05, card
        else:
            assert luminance(body["background"]) > 0.8 and luminance(body["ink"]) < 0.05, body


def centre_text(stamp: str, zone: str, fmt: str) -> str:
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return moment.astimezone(ZoneInfo(zone)).strftime(fmt)


def test_times_show_in_the_centres_zone_whatever_the_browsers(browser, live_server, demo, supervisor, settings):
    # The centre is in New York; the supervisor's browser is set to Kolkata (UTC+05:30).
    settings.TIME_ZONE = "America/New_York"
    # A call's page: arrived, assigned.
    page = page_in(browser, live_server, supervisor, demo["details"][1], viewport=DESKTOP, timezone_id="Asia/Kolkata")
    arrived = page.locator(".facts time").first
    stamp = arrived.get_attribute("datetime")
    assert stamp and stamp.endswith("Z")
    title = centre_text(stamp, "America/New_York", "%-d %b %Y %H:%M:%S %Z")
    expect(arrived).to_have_attribute("title", title)
    assert arrived.inner_text().endswith(centre_text(stamp, "America/New_York", "%H:%M:%S"))
    expect(page.locator("[data-time-zone]")).to_contain_text("America/New_York")

    # On the overview, the panels' "updated" times, also after each htmx swap.
    page.goto(f"{live_server.url}/")
    updated = page.locator("#calls-panel [data-updated] time")
    first = updated.get_attribute("datetime")
    expect(updated).to_have_text(centre_text(first, "America/New_York", "%H:%M:%S"))
    expect(updated).not_to_have_attribute("datetime", first, timeout=8000)  # a later read, swapped in
    swapped = updated.get_attribute("datetime")
    expect(updated).to_have_text(centre_text(swapped, "America/New_York", "%H:%M:%S"))

    # The reports: the centre's day of 24 hours from its midnight, its zone named; the first
    # interval starts at 00:00 there (it would be 10:30 in Kolkata).
    page.goto(f"{live_server.url}/reports/?date=2026-11-24&interval=60")
    expect(page.locator("#report")).to_contain_text("from midnight, America/New_York")
    assert page.locator("rect.offered").count() == 24
    expect(page.locator("#report svg g title").first).to_have_text(re.compile(r"^00:00: "))
    csv_link = page.get_by_role("link", name="Download CSV")
    expect(csv_link).to_have_attribute("href", re.compile(r"/reports/export\.csv\?date=2026-11-24"))
