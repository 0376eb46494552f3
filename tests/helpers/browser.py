"""What the browser tests (Playwright, Chromium) share."""

import re

from django.conf import settings
from django.test import Client
from playwright.sync_api import expect

from tests.helpers.users import PASSWORD


def log_in(page, live_server, user, path="/"):
    """Open `path` (the overview by default) logged in as `user`, loaded (scripts run).

    The session is made as the login form makes it (Django's `login()`, through the test
    client's `force_login`) and given to the browser as its cookie: the form itself is
    tested by `log_in_with_the_form` (tests/browser/test_login.py, test_csp.py)."""
    client = Client()
    client.force_login(user)
    session = client.cookies[settings.SESSION_COOKIE_NAME]
    page.context.add_cookies([{"name": session.key, "value": session.value, "url": live_server.url}])
    page.goto(f"{live_server.url}{path}")
    expect(page).not_to_have_url(re.compile(r"/login/"))


def without_live_stream(page) -> None:
    """The overview as a process full of live overviews leaves it (its stream refused,
    204): the panels poll."""
    page.route(re.compile(r"/live/$"), lambda route: route.fulfill(status=204))


def log_in_with_the_form(page, live_server, user):
    """Log in as a person does: the overview sends to the login form, which sends back."""
    page.goto(f"{live_server.url}/")
    expect(page).to_have_url(re.compile(r"/login/"))
    page.get_by_label("Username").fill(user.username)
    page.get_by_label("Password").fill(PASSWORD)
    with page.expect_navigation():  # to the page asked for, loaded (scripts run)
        page.get_by_role("button", name="Log in").click()


def requests_seen_so_far(page):
    """Return once the test has heard of every request the page has sent until now: it
    sends one more (a request for /healthz) and waits for it, as the browser reports
    requests in the order they were sent. After that, a fixed wait is not needed to be
    sure that the page asked nothing, or what it asked."""
    with page.expect_request(re.compile(r"/healthz\?seen-so-far$")):
        page.evaluate("fetch('/healthz?seen-so-far')")


def follow(page, link):
    """Click a link and wait for the page it opens to load: htmx (a deferred script) takes
    over the page's forms only then, and a form sent before that goes the plain way."""
    with page.expect_navigation():
        link.click()
