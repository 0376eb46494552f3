"""Refusals in the site's own layout: a viewer's refused page or POST, an address that does
not exist, a fault nobody caught; the viewer's pages hold no form they could not send."""

import re

import pytest
from django.test import Client
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.views import overview

SKILLS = {"language": ["Spanish"], "gender": ["F"]}


def in_site_layout(html: str) -> bool:
    return '<header class="topbar">' in html and 'class="banner banner-error" role="alert"' in html


def test_a_viewer_is_refused_the_new_agent_form_in_the_sites_layout(viewer_client, moto_db):
    response = viewer_client.get(reverse("agent-create"))
    html = response.content.decode()
    assert response.status_code == 403 and in_site_layout(html)
    assert "Only supervisors may change queues." in html and '<form method="post" action="/agents/new"' not in html


def test_a_viewers_refused_post_gets_the_sites_page_not_a_bare_403(viewer_client, moto_db):
    ana = Agents().create("Ana", SKILLS)
    response = viewer_client.post(reverse("agent-available", args=[ana.agent_id]), {"version": ana.version})
    assert response.status_code == 403 and in_site_layout(response.content.decode())
    # htmx gets the banner alone, for the place it was aimed at.
    banner = viewer_client.post(
        reverse("agent-available", args=[ana.agent_id]), {"version": ana.version}, HTTP_HX_REQUEST="true"
    )
    assert banner.status_code == 403 and banner.content.decode().lstrip().startswith('<div class="banner banner-error"')


def test_a_viewers_agent_page_is_read_only(viewer_client, moto_db):
    ana = Agents().create("Ana", SKILLS)
    html = viewer_client.get(reverse("agent-detail", args=[ana.agent_id])).content.decode()
    assert "<h2>Details</h2>" in html and "<h2>Edit</h2>" not in html
    assert re.findall(r'<form[^>]+method="post"[^>]*action="([^"]+)"', html) == ["/logout/"]


def test_an_address_that_does_not_exist_is_a_404_in_the_sites_layout(supervisor_client, moto_db):
    response = supervisor_client.get("/no/such/page/")
    html = response.content.decode()
    assert response.status_code == 404 and in_site_layout(html)
    assert "There is no page at this address." in html and "tried" not in html
    assert "Traceback" not in html


def test_a_404_to_a_program_is_json(supervisor_client, moto_db):
    response = supervisor_client.get("/no/such/page/", HTTP_ACCEPT="application/json")
    assert response.status_code == 404 and response.json()["error"] == "Not found"


def test_a_fault_nobody_caught_is_a_500_in_the_sites_layout(supervisor, moto_db, monkeypatch):
    def broken(_dashboard):
        raise RuntimeError("a bug")

    monkeypatch.setitem(overview.PANELS, "calls", broken)
    client = Client(raise_request_exception=False)
    client.force_login(supervisor)
    response = client.get(reverse("home"))
    html = response.content.decode()
    assert response.status_code == 500 and in_site_layout(html)
    assert "Something went wrong" in html and "a bug" not in html and "Traceback" not in html


@pytest.mark.parametrize("url", ["/", "/agents/", "/calls/", "/shipments/", "/queues/", "/audit/", "/system/"])
def test_the_viewers_pages_hold_no_form_that_changes_anything(viewer_client, moto_db, url):
    html = viewer_client.get(url).content.decode()
    posts = re.findall(r'<form[^>]+method="post"[^>]*action="([^"]+)"', html)
    assert posts == ["/logout/"], posts
