"""A person logs in with a real browser and sees the dashboard; htmx posts carry CSRF."""

import re

from playwright.sync_api import expect

from queues_app.agents.roster import Agents
from tests.helpers.browser import log_in_with_the_form


def test_supervisor_logs_in_and_sees_agents(page, live_server, local_db, supervisor):
    Agents().create("Grace Hopper", {"language": ["English", "French"], "gender": ["F"]})
    log_in_with_the_form(page, live_server, supervisor)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    page.get_by_role("link", name="Agents", exact=True).click()  # the menu's, not "Calls and agents"
    expect(page.get_by_text("Grace Hopper")).to_be_visible()
    expect(page.locator(".badge")).to_have_text("supervisor")


def test_htmx_post_carries_the_csrf_token(page, live_server, local_db, supervisor):
    log_in_with_the_form(page, live_server, supervisor)
    page.goto(f"{live_server.url}/system/")
    page.get_by_role("button", name="Check with htmx").click()
    expect(page.locator("#htmx-ok")).to_contain_text("htmx POST accepted with its CSRF token")
    # htmx swapped the fragment in place: no navigation happened
    expect(page).to_have_url(re.compile(r"/system/$"))


def test_wrong_password_is_told(page, live_server, local_db, viewer):
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(viewer.username)
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_text("didn't match")).to_be_visible()
