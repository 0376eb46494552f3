"""What the browser tests (Playwright, Chromium) share."""

import re

from playwright.sync_api import expect

from tests.helpers.users import PASSWORD


def log_in(page, live_server, user):
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(re.compile(r"/login/"))
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    with page.expect_navigation():  # to the page asked for, loaded (scripts run)
        page.get_by_role("button", name="Log in").click()


def follow(page, link):
    """Click a link and wait for the page it opens to load: htmx (a deferred script) takes
    over the page's forms only then, and a form sent before that goes the plain way."""
    with page.expect_navigation():
        link.click()
