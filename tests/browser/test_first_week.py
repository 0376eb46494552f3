"""What a supervisor's first week trips over, in a real browser at 1280 and 390 px: a call
that rings is shown ringing, with its countdown, wherever it shows; names stored with a
direction-changing character or 100 characters without a break change no sentence's
order and widen no page; an action sent after the session ended says it was not done,
and logging in again leads back to the page, with JavaScript or without."""

from __future__ import annotations

import re

import pytest
from django.contrib.sessions.models import Session
from playwright.sync_api import expect

from queues_app.agents import roster
from queues_app.agents.roster import Agents
from queues_app.operations import Operations
from tests.helpers.browser import log_in
from tests.helpers.users import PASSWORD

WIDTHS = {1280: {"width": 1280, "height": 900}, 390: {"width": 390, "height": 844}}
SKILLS = {"language": ["Spanish"], "gender": ["F"]}
# Stored by an earlier version, which let a right-to-left override into a name.
SPOOFED = "Eve \u202eliam"
UNBROKEN = "W" * 100

# Every text holding a direction-changing character, that no element around it isolates.
NOT_ISOLATED = """() => {
  const found = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const text = walker.currentNode;
    if (!/[\\u202a-\\u202e\\u2066-\\u2069]/.test(text.data)) continue;
    let el = text.parentElement, isolated = false;
    for (; el && !isolated; el = el.parentElement)
      isolated = ["isolate", "isolate-override", "plaintext"].includes(getComputedStyle(el).unicodeBidi);
    if (!isolated) found.push(text.parentElement.tagName + ": " + text.data.trim().slice(0, 60));
  }
  return found;
}"""
# Elements whose content runs past their own box (a long name that does not wrap).
OVERFLOWING = """() => Array.from(document.querySelectorAll("main .card, main h1, main h2, main td, main li, main p"))
  .filter(el => el.checkVisibility() && el.scrollWidth > el.clientWidth + 1
                && getComputedStyle(el).overflowX === "visible")
  .map(el => el.tagName + "." + el.className + ": " + el.textContent.trim().slice(0, 40))"""


@pytest.fixture
def floor(local_db, settings, monkeypatch):
    """Ana queued and rung by a caller placed from the supervisor's page (offers on); Eve
    (her name holding a right-to-left override, as an earlier version stored it) and a
    100-character name queued, each by the supervisor, so the audit trail tells of them."""
    settings.ANSWER_TIMEOUT_SECONDS = 20
    with monkeypatch.context() as earlier_version:
        earlier_version.setattr(roster, "hidden_problem", lambda name: None)
        eve = Agents().create(SPOOFED, SKILLS)
    long = Agents().create(UNBROKEN, SKILLS)
    ana = Agents().create("Ana", SKILLS)
    supervisor = Operations("sam-supervisor", "page")
    supervisor.make_available(ana.agent_id)
    call, _ = supervisor.create_call({"language": "Spanish", "gender": "F"})  # offered to Ana
    for agent in (eve, long):
        supervisor.make_available(agent.agent_id)
    return {"ana": ana, "eve": eve, "long": long, "call": call}


def pages_of(floor) -> list[str]:
    agents = [floor[name].agent_id for name in ("ana", "eve", "long")]
    return [
        "/",
        "/agents/",
        "/agents/?status=ringing",
        *(f"/agents/{agent_id}/" for agent_id in agents),
        "/calls/",
        f"/calls/{floor['call'].call_id}/",
        "/audit/",
        "/wallboard/",
    ]


@pytest.mark.parametrize("width", WIDTHS)
def test_a_ringing_call_shows_ringing_with_its_countdown(browser, live_server, floor, supervisor, width):
    page = browser.new_context(viewport=WIDTHS[width]).new_page()
    page.clock.install()
    log_in(page, live_server, supervisor, "/agents/?status=ringing")
    row = page.locator(f'tr[data-agent="{floor["ana"].agent_id}"]')
    expect(row.locator(".status")).to_have_text("Ringing")
    expect(page.locator('[data-tab="ringing"] .count')).to_have_text("1")

    page.goto(f"{live_server.url}/calls/")
    countdown = page.locator(f"#ringing [data-call='{floor['call'].call_id}'] time[data-countdown]")
    expect(countdown).to_have_text(re.compile(r"^in 1\d s$"))
    before = int(countdown.inner_text().split()[1])
    page.clock.run_for(3000)
    expect(countdown).to_have_text(f"in {before - 3} s")

    page.goto(f"{live_server.url}/")
    expect(page.locator('#calls-panel [data-figure="agents-ringing"]')).to_have_text("1")
    expect(page.locator('#calls-panel [data-figure="agents-attending"]')).to_have_text("0")


@pytest.mark.parametrize("width", WIDTHS)
def test_names_change_no_sentences_order_and_widen_no_page(browser, live_server, floor, staff, width):
    page = browser.new_context(viewport=WIDTHS[width]).new_page()
    log_in(page, live_server, staff, "/agents/")
    for path in pages_of(floor):
        page.goto(f"{live_server.url}{path}")
        assert page.evaluate(NOT_ISOLATED) == [], path
        assert page.evaluate("document.documentElement.scrollWidth") <= width, path
        assert page.evaluate(OVERFLOWING) == [], path
    # The audit trail's sentence about Eve reads in order, her name set apart.
    page.goto(f"{live_server.url}/audit/")
    sentence = page.locator("li, tr").filter(has_text="Eve").first
    expect(sentence).to_contain_text("by sam-supervisor")


def test_a_name_with_a_direction_changing_character_is_refused_with_a_message(page, live_server, local_db, staff):
    log_in(page, live_server, staff, "/agents/new")
    page.get_by_label("Name").fill(SPOOFED)
    page.get_by_label("Spanish", exact=True).check()
    page.get_by_label("F", exact=True).check()
    page.get_by_role("button", name="Create agent").click()
    expect(page.locator(".field-error")).to_have_text(re.compile(r"U\+202E RIGHT-TO-LEFT OVERRIDE"))
    assert Agents().list(limit=10).items == []


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("scripts", [True, False], ids=["htmx", "no-js"])
def test_an_action_after_the_session_ended_says_it_was_not_done_and_leads_back(
    browser, live_server, local_db, supervisor, width, scripts
):
    ana = Agents().create("Ana", SKILLS)
    page = browser.new_context(viewport=WIDTHS[width], java_script_enabled=scripts).new_page()
    log_in(page, live_server, supervisor, "/agents/?status=offline")
    Session.objects.all().delete()  # the session ran out; the tab stays open
    page.locator(f'tr[data-agent="{ana.agent_id}"]').get_by_role("button", name="Make available").click()

    expect(page).to_have_url(re.compile(r"/login/\?next="))
    expect(page.get_by_text("Your session had ended, so what you asked for was not done")).to_be_visible()
    assert Agents().get(ana.agent_id).status == "offline"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.get_by_label("Username").fill(supervisor.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{live_server.url}/agents/?status=offline")  # not the action's URL: no 405
    expect(page.locator(f'tr[data-agent="{ana.agent_id}"]')).to_be_visible()
