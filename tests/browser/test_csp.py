"""Every page works in Chromium under the Content-Security-Policy: the header is there,
and no page logs a console error, throws, or reports a CSP violation; the overview's
panels still poll (without the htmx trigger filters the policy would refuse to eval)."""

from __future__ import annotations

import os
import re

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.shipments.queue import ShipmentQueue
from tests.helpers.browser import log_in, log_in_with_the_form, requests_seen_so_far, without_live_stream

# Runs before any page script: records what the browser refuses under the policy.
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__cspViolations.push(`${event.violatedDirective} blocked ${event.blockedURI || "inline"}`
    + ` at ${event.sourceFile || ""}:${event.lineNumber}`);
});
"""


class Watch:
    """Console errors, uncaught exceptions and CSP violations of one page."""

    def __init__(self, page):
        self.page = page
        self.problems: list[str] = []
        page.add_init_script(RECORD_VIOLATIONS)
        page.on("console", lambda message: self._console(message))
        page.on("pageerror", lambda error: self.problems.append(f"uncaught: {error}"))
        # Which resource failed (the console only says that one did).
        page.on("response", lambda response: self._response(response))

    def _response(self, response):
        if response.status >= 400:
            self.problems.append(f"{response.status} for {response.url}")

    def _console(self, message):
        if message.type in ("error", "warning") and not message.text.startswith("[DOM]"):
            self.problems.append(f"console {message.type}: {message.text}")

    def visit(self, url: str) -> None:
        response = self.page.goto(url)
        assert response is not None and response.status == 200, (url, response and response.status)
        policy = response.headers.get("content-security-policy", "")
        assert "script-src 'self'" in policy and "style-src 'self'" in policy, (url, policy)
        self.page.wait_for_load_state("load")
        self.check(url)

    def check(self, where: str) -> None:
        violations = self.page.evaluate("window.__cspViolations || []")
        assert not violations and not self.problems, (where, violations, self.problems)


@pytest.fixture
def watched(page):
    return Watch(page)


def test_every_page_loads_under_the_policy_without_an_error(watched, page, live_server, local_db, staff):
    call_command("seed_demo", seed=5, stdout=open(os.devnull, "w"))
    agent = Agents().list(status=AgentStatus.ATTENDING, limit=1).items[0]
    shipment = ShipmentQueue().list_dlq(limit=1).items[0]

    watched.visit(f"{live_server.url}/login/")
    log_in_with_the_form(page, live_server, staff)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    watched.check("after logging in")
    for path in (
        "/",
        "/agents/",
        f"/agents/{agent.agent_id}/",
        "/calls/",
        "/callbacks/",
        f"/calls/{agent.call_id}/",
        "/queues/",
        "/lines/",
        "/lines/new",
        "/lines/profiles/new",
        "/shipments/",
        "/shipments/?view=dlq",
        f"/shipments/{shipment.shipment_id}/",
        "/tasks/",
        "/audit/",
        "/reports/",
        "/reports/agents/",
        "/system/",
        "/wallboard/",
        "/admin/",
        "/admin/queues_app/agententry/",
        "/admin/queues_app/shipmententry/?view=dlq",
        "/admin/auth/user/",
    ):
        watched.visit(f"{live_server.url}{path}")

    # An htmx action under the policy: the POST, its swap and the message it shows.
    page.goto(f"{live_server.url}/system/")
    page.get_by_role("button", name="Check with htmx").click()
    expect(page.locator("#htmx-ok")).to_contain_text("htmx POST accepted")
    watched.check("an htmx POST")


def test_the_overview_panels_poll_while_visible_and_rest_while_hidden(watched, page, live_server, local_db, staff):
    page.clock.install()  # runs as time passes; the test moves it on past the panels' ticks
    without_live_stream(page)
    log_in(page, live_server, staff)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    panel = re.compile(r"\?panel=calls")
    # Polling, with no trigger filter left to eval.
    with page.expect_request(panel, timeout=6000):
        page.clock.run_for(2000)

    # A hidden tab asks nothing (after the requests of the tick under way have gone) ...
    page.evaluate(
        "Object.defineProperty(document, 'visibilityState', {value: 'hidden', configurable: true});"
        "document.dispatchEvent(new Event('visibilitychange'));"
    )
    requests_seen_so_far(page)
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url) if "panel=" in request.url else None)
    page.clock.run_for(4500)  # two ticks of the 2-second panels
    requests_seen_so_far(page)
    assert requests == []

    # ... and refreshes every panel at once when it comes back, the slow ones included (the
    # history panel's own interval is 30 s: its request within a few seconds says "at once").
    with page.expect_request(re.compile(r"\?panel=history"), timeout=5000):
        page.evaluate(
            "Object.defineProperty(document, 'visibilityState', {value: 'visible', configurable: true});"
            "document.dispatchEvent(new Event('visibilitychange'));"
        )
    watched.check("polling")


def test_a_locked_out_login_is_a_clear_page_without_errors(watched, page, live_server, local_db, viewer):
    from django.conf import settings

    for attempt in range(settings.AXES_FAILURE_LIMIT):
        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill(viewer.username)
        page.get_by_label("Password").fill(f"wrong-{attempt}")
        page.get_by_role("button", name="Log in").click()
        page.wait_for_load_state("load")
    expect(page.get_by_role("heading", name="Too many failed logins")).to_be_visible()
    expect(page.get_by_text("paused for 15 minutes")).to_be_visible()
    # The page itself is fine; the 429 is its status, which Chromium logs as a failed resource.
    watched.problems = [p for p in watched.problems if "429" not in p]
    watched.check("the lockout page")
