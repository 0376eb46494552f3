"""What the browser tests (Playwright, Chromium) share."""

import re

from playwright.sync_api import expect

from tests.helpers.users import PASSWORD


def log_in(page, live_server, user):
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(re.compile(r"/login/"))
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
