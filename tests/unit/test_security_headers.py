"""Every answer carries a Content-Security-Policy that allows only the site's own scripts
and styles, and no page or template has anything inline that it would block: no inline
script or style, no event-handler attribute, no htmx attribute that htmx would eval.
(tests/browser/test_csp.py loads the pages in Chromium and watches for violations.)"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.shipments.queue import ShipmentQueue

ROOT = Path(__file__).resolve().parents[2]


def directives(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


def assert_strict_policy(response):
    policy = directives(response)
    for name in ("default-src", "script-src", "style-src", "connect-src", "img-src"):
        assert policy[name] == ["'self'"], (name, policy)
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"]
    assert "unsafe" not in response["Content-Security-Policy"]
    assert "nonce" not in response["Content-Security-Policy"]


class InlineFinder(HTMLParser):
    """Collects what a strict CSP (script-src/style-src 'self', no eval) would block."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []
        self._script_with_src = False

    def handle_starttag(self, tag, attrs):
        names = dict(attrs)
        if tag == "script":
            self._script_with_src = bool(names.get("src"))
            if not self._script_with_src:
                self.found.append("<script> without src")
        if tag == "style":
            self.found.append("<style>")
        if tag == "link" and names.get("rel") == "stylesheet" and not (names.get("href") or "").startswith("/"):
            self.found.append(f"stylesheet from elsewhere: {names.get('href')}")
        for name, value in attrs:
            value = value or ""
            if name == "style":
                self.found.append(f"style attribute on <{tag}>")
            if name.startswith("on") or name.startswith("hx-on") or name.startswith("data-hx-on"):
                self.found.append(f"{name} attribute on <{tag}>")
            if name in ("hx-trigger", "data-hx-trigger") and "[" in value:
                self.found.append(f"hx-trigger filter (eval) on <{tag}>: {value}")
            if name in ("hx-vals", "hx-vars", "hx-headers") and value.strip().startswith(("js:", "javascript:")):
                self.found.append(f"{name} evaluated as JavaScript on <{tag}>")
            if name in ("href", "src", "action") and value.strip().lower().startswith("javascript:"):
                self.found.append(f"javascript: URL on <{tag}>")

    def handle_data(self, data):
        if self.lasttag == "script" and data.strip() and not self._script_with_src:
            self.found.append("inline script text")


def inline_parts(html: str) -> list[str]:
    finder = InlineFinder()
    finder.feed(html)
    return finder.found


def test_the_finder_sees_what_the_policy_would_block():
    """The checker itself: each kind of inline code is caught, the allowed forms are not."""
    assert inline_parts('<script src="/static/a.js"></script><link rel="stylesheet" href="/static/a.css">') == []
    assert inline_parts('<meta name="htmx-config" content=\'{"allowEval": false}\'>') == []
    for html in (
        "<script>alert(1)</script>",
        "<style>p{}</style>",
        '<p style="color:red">x</p>',
        '<button onclick="x()">x</button>',
        '<div hx-on:click="x()"></div>',
        "<div hx-trigger=\"every 2s [document.visibilityState === 'visible']\"></div>",
        '<div hx-vals="js:{a: 1}"></div>',
        '<a href="javascript:alert(1)">x</a>',
    ):
        assert inline_parts(html), html


def test_the_login_page_has_the_policy_and_the_other_security_headers(client, db):
    response = client.get(reverse("login"))
    assert response.status_code == 200
    assert_strict_policy(response)
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert inline_parts(response.content.decode()) == []


def test_every_page_and_panel_has_the_policy_and_nothing_inline(client, staff, moto_db):
    agent = Agents().create("Grace Hopper", {"language": ["English"], "gender": ["F"]})
    queue = ShipmentQueue()
    queue.create({"destination": "Lisbon"}, shipment_id="ship-lisbon", ready=True)
    queue.enqueue("ship-lisbon")
    client.force_login(staff)
    home = reverse("home")
    paths = [
        home,
        reverse("agents"),
        reverse("agent-detail", args=[agent.agent_id]),
        reverse("agent-create"),
        reverse("calls"),
        reverse("queues"),
        reverse("shipments"),
        reverse("shipments") + "?view=dlq",
        reverse("shipment-detail", args=["ship-lisbon"]),
        reverse("tasks"),
        reverse("audit"),
        reverse("system"),
        *(f"{home}?panel={panel}" for panel in ("calls", "shipments", "tasks", "grid", "history", "capacity")),
        "/admin/",
        "/admin/auth/user/",
        "/admin/queues_app/agententry/",
        "/admin/queues_app/shipmententry/",
    ]
    for path in paths:
        response = client.get(path)
        assert response.status_code == 200, path
        assert_strict_policy(response)
        assert inline_parts(response.content.decode()) == [], path


def test_the_lockout_page_has_nothing_inline(client, supervisor):
    for attempt in range(settings.AXES_FAILURE_LIMIT):
        response = client.post(reverse("login"), {"username": supervisor.username, "password": f"no-{attempt}"})
    assert response.status_code == 429
    assert_strict_policy(response)
    assert inline_parts(response.content.decode()) == []


@pytest.mark.parametrize("path", sorted((ROOT / "templates").rglob("*.html")), ids=lambda p: p.name)
def test_no_template_has_inline_script_or_style(path):
    text = path.read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), "inline <script>"
    assert "<style" not in text
    assert not re.search(r"\sstyle=", text)
    assert not re.search(r"\s(hx-)?on[:a-z-]*=", text), "event-handler attribute"


def test_htmx_neither_injects_styles_nor_evals():
    loading = [p for p in (ROOT / "templates").rglob("*.html") if "vendor/htmx-" in p.read_text()]
    assert len(loading) == 2  # the site's pages (base.html) and the wallboard
    for page in loading:
        assert '{% include "queues_app/_htmx_config.html" %}' in page.read_text(), page
    meta = (ROOT / "templates" / "queues_app" / "_htmx_config.html").read_text()
    config = json.loads(re.search(r"<meta name=\"htmx-config\" content='([^']*)'>", meta).group(1))
    assert config["includeIndicatorStyles"] is False
    assert config["allowEval"] is False
    assert config["allowScriptTags"] is False
    # The indicator styles it would have injected are in the stylesheet instead.
    css = (ROOT / "static" / "css" / "switchboard.css").read_text()
    assert ".htmx-indicator {" in css and ".htmx-request .htmx-indicator" in css
