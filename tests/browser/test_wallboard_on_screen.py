"""The wallboard on a television and on a phone: a viewer opens it, the key figures are at
least 48 px high, nothing is wider than the screen, the board refreshes by itself, and
says so when it stops (a DynamoDB Local stopped with SIGSTOP: its requests hang)."""

from __future__ import annotations

import os
import signal

import pytest
from playwright.sync_api import expect

from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from tests.helpers.browser import log_in

WIDTHS = {"desktop": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}


@pytest.fixture
def floor(local_db):
    router = CallCenter()
    ana = Agents().create("Ana", {"language": ["Spanish"], "gender": ["F"]})
    router.make_available(ana.agent_id)
    router.create_call({"language": "Spanish", "gender": "F"})
    for _ in range(12):  # four-figure-wide waits and counts on the narrowest screen
        router.create_call({"language": "French", "gender": "X"})
    return router


@pytest.mark.parametrize("width", WIDTHS)
def test_a_viewer_reads_the_key_figures_from_afar_without_scrolling_sideways(
    browser, live_server, floor, viewer, width
):
    page = browser.new_context(viewport=WIDTHS[width]).new_page()
    log_in(page, live_server, viewer, "/wallboard/")
    expect(page.locator('[data-line="French · X"] [data-figure="waiting"]')).to_have_text("12")
    assert page.get_by_role("navigation").count() == 0
    sizes = page.eval_on_selector_all(
        "dd[data-figure]", "els => els.map(el => parseFloat(getComputedStyle(el).fontSize))"
    )
    # waiting, longest wait, queued, ringing, attending, handle time and service level
    assert len(sizes) == 7 * page.locator("section.line").count()
    assert min(sizes) >= 48
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    # The widest figures a board shows ("12:34", "100%") each stay on one line: never "0:3" over "3".
    broken = page.evaluate(WIDEST_FIGURES_BROKEN)
    assert broken == [], broken


# Every figure given the widest text it may hold: those whose text then takes more than one line.
WIDEST_FIGURES_BROKEN = """() => {
  const broken = [];
  for (const dd of document.querySelectorAll("dd[data-figure]")) {
    for (const text of ["12:34", "100%"]) {
      dd.textContent = text;
      const range = document.createRange();
      range.selectNodeContents(dd.firstChild);
      if (range.getClientRects().length > 1) broken.push(`${dd.dataset.figure}: ${text}`);
    }
  }
  return broken;
}"""


def refresh_seconds(page) -> float:
    return float(page.locator("#board").get_attribute("data-refresh-seconds"))


def test_the_board_refreshes_itself(page, live_server, floor, viewer):
    page.clock.install()  # runs as time passes; the test moves it on to the next refresh
    log_in(page, live_server, viewer, "/wallboard/")
    waiting = page.locator('[data-line="English · M"] [data-figure="waiting"]')
    expect(waiting).to_have_text("0")
    floor.create_call({"language": "English", "gender": "M"})
    url = page.url
    page.clock.run_for(refresh_seconds(page) * 1000)
    expect(waiting).to_have_text("1", timeout=12_000)
    # 12 and this one: the Spanish caller was answered at once.
    expect(page.locator('[data-line="all"] [data-figure="waiting"]')).to_have_text("13")
    assert page.url == url


def test_a_board_that_stops_refreshing_says_since_when(page, live_server, stoppable_db, viewer):
    page.clock.install()  # runs as time passes; the test moves it on past two refreshes
    log_in(page, live_server, viewer, "/wallboard/")
    note = page.locator("#stale-note")
    updated = page.locator("#board [data-updated]")
    expect(updated).to_be_visible()
    expect(note).to_be_hidden()

    assert stoppable_db.process is not None
    os.kill(stoppable_db.process.pid, signal.SIGSTOP)  # its requests hang: the board is not redrawn
    try:
        # Two refreshes without figures, then a second of slack for the page's check.
        page.clock.run_for((2 * refresh_seconds(page) + 2) * 1000)
        expect(note).to_be_visible(timeout=15_000)
        expect(note).to_have_text(f"Not updated since {updated.text_content()}.")
        assert float(page.locator("#board dd").first.evaluate("el => getComputedStyle(el).opacity")) < 1
    finally:
        os.kill(stoppable_db.process.pid, signal.SIGCONT)
    expect(note).to_be_hidden(timeout=15_000)
    assert float(page.locator("#board dd").first.evaluate("el => getComputedStyle(el).opacity")) == 1
