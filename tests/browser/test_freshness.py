"""The overview's panels say how fresh their figures are: a panel whose DynamoDB stops
answering (a DynamoDB Local process stopped with SIGSTOP: its requests hang) is marked
stale within a few intervals and fresh again once DynamoDB answers; the polling can be
paused, and a paused page asks nothing, even after a reload."""

from __future__ import annotations

import os
import re
import signal

from playwright.sync_api import expect

from queues_app.centre.call_center import CallCenter
from tests.helpers.browser import log_in, requests_seen_so_far, without_live_stream

PANEL_REQUEST = re.compile(r"\?panel=")

# How many answers with figures each polling panel has had (seen as the page's own script
# sees them, before the swap).
COUNT_ANSWERS = """
window.answered = {};
document.addEventListener("htmx:beforeSwap", (event) => {
  const panel = event.detail.elt, status = event.detail.xhr ? event.detail.xhr.status : 0;
  if (panel.hasAttribute("data-poll") && status >= 200 && status < 300) {
    window.answered[panel.id] = (window.answered[panel.id] || 0) + 1;
  }
});
"""
EVERY_PANEL_ANSWERED = "([ids, before]) => ids.every((id) => (window.answered[id] || 0) > (before[id] || 0))"


def test_a_panel_whose_dynamodb_hangs_turns_stale_and_fresh_again_when_it_answers(
    page, live_server, stoppable_db, supervisor
):
    # The page's clock runs as time passes, and the test moves it on: the polls and the
    # check of freshness run as they would over that time.
    page.clock.install()
    page.add_init_script(COUNT_ANSWERS)
    without_live_stream(page)
    log_in(page, live_server, supervisor)
    panel = page.locator("#calls-panel")
    badge = panel.locator(".stale-badge")
    expect(panel.locator("[data-updated] time")).to_be_visible()
    # Answering, a panel stays fresh past two intervals (its figures are read again and again):
    # three intervals of the page's clock, each answered by every 2-second panel before the next.
    first = panel.locator("[data-updated] time").get_attribute("datetime")
    expect(panel.locator("[data-updated] time")).not_to_have_attribute("datetime", first, timeout=6000)
    every_two_seconds = page.eval_on_selector_all("[data-poll='2s']", "panels => panels.map((p) => p.id)")
    assert "calls-panel" in every_two_seconds
    for _ in range(3):
        before = page.evaluate("({...window.answered})")
        page.clock.run_for(2000)
        page.wait_for_function(EVERY_PANEL_ANSWERED, arg=[every_two_seconds, before])
    expect(page.locator(".panel.is-stale")).to_have_count(0)
    expect(badge).to_be_hidden()
    expect(page.locator("#poll-note")).to_have_text("")
    before = panel.locator("[data-updated] time").get_attribute("datetime")

    assert stoppable_db.process is not None
    os.kill(stoppable_db.process.pid, signal.SIGSTOP)
    try:
        # Two 2-second intervals without figures, then a little slack for the page's check.
        page.clock.run_for(6000)
        expect(panel).to_have_class(re.compile(r"\bis-stale\b"), timeout=10_000)
        expect(badge).to_be_visible()
        expect(badge).to_have_text("stale")
        # Still says when it last had figures, muted, and the live region says so too.
        expect(panel.locator("[data-updated] time")).to_have_attribute("datetime", before)
        assert float(panel.locator(".stats").evaluate("el => getComputedStyle(el).opacity")) < 1
        expect(page.locator("#poll-note")).to_contain_text(re.compile(r"Calls and agents \(since \d\d:\d\d:\d\d\)"))
    finally:
        os.kill(stoppable_db.process.pid, signal.SIGCONT)

    expect(panel).not_to_have_class(re.compile(r"\bis-stale\b"), timeout=15_000)
    expect(badge).to_be_hidden()
    expect(panel.locator("[data-updated] time")).not_to_have_attribute("datetime", before)
    expect(page.locator(".panel.is-stale")).to_have_count(0, timeout=15_000)
    expect(page.locator("#poll-note")).to_have_text("All panels are up to date again.")
    # Rest before the tables go: no request of this page is left running on the server.
    page.get_by_role("button", name="Pause updates").click()
    page.wait_for_load_state("networkidle")


def test_paused_the_overview_asks_nothing_even_after_a_reload_until_resumed(page, live_server, local_db, supervisor):
    page.clock.install()  # runs as time passes; the test moves it on past the panels' ticks
    without_live_stream(page)
    log_in(page, live_server, supervisor)
    with page.expect_request(PANEL_REQUEST, timeout=6000):
        page.clock.run_for(2000)  # polling
    page.get_by_role("button", name="Pause updates").click()
    expect(page.get_by_role("button", name="Resume updates")).to_be_visible()
    expect(page.locator("#poll-state")).to_have_text("Updates are paused.")
    page.wait_for_load_state("networkidle")  # what was under way has finished
    requests_seen_so_far(page)

    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url) if PANEL_REQUEST.search(request.url) else None)
    page.clock.run_for(4500)  # two ticks of the 2-second panels
    requests_seen_so_far(page)
    assert requests == []
    # A change made elsewhere would make the panels ask at once: not while paused.
    page.evaluate("document.body.dispatchEvent(new CustomEvent('queues-changed'))")
    page.clock.run_for(500)
    requests_seen_so_far(page)
    assert requests == []
    # Paused is not stale: nobody is waiting for figures.
    expect(page.locator(".panel.is-stale")).to_have_count(0)

    # Remembered across a reload.
    page.reload()
    expect(page.get_by_role("button", name="Resume updates")).to_be_visible()
    page.clock.run_for(4500)
    requests_seen_so_far(page)
    assert requests == []

    # Resumed, every panel asks at once, the history panel too: its own interval is 30 s, so
    # its request within a few seconds (which a slow browser may need) says "at once".
    with page.expect_request(re.compile(r"\?panel=history"), timeout=5000):
        page.get_by_role("button", name="Resume updates").click()
    expect(page.get_by_role("button", name="Pause updates")).to_be_visible()
    expect(page.locator("#poll-state")).to_have_text("")


def test_the_overview_is_pushed_its_panels_and_asks_for_none_on_its_timer(page, live_server, local_db, supervisor):
    page.clock.install()  # runs as time passes; the test moves the page's timers on
    log_in(page, live_server, supervisor)
    offline = page.locator("#calls-panel [data-figure='agents-offline']")
    expect(offline).to_have_text("0")
    # The stream open before the page's clock moves (a loaded machine opens it late, and the
    # panels poll until it is: as they should).
    expect(page.locator("[data-live][data-live-open]")).to_have_count(1, timeout=30_000)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url) if PANEL_REQUEST.search(request.url) else None)
    # A change made elsewhere (another supervisor, the phone system) reaches the open page.
    CallCenter(local_db).agents.create("Ada", {"language": ["French"], "gender": ["F"]})
    page.clock.run_for(4500)  # two ticks of the 2-second panels: none of them asks
    expect(offline).to_have_text("1", timeout=10_000)
    requests_seen_so_far(page)
    assert requests == []
    expect(page.locator(".panel.is-stale")).to_have_count(0)
    page.get_by_role("button", name="Pause updates").click()  # closes the stream before the tables go
