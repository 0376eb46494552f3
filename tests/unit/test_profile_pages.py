"""Routing profiles on the supervisor's pages: a profile created and edited from the Lines
page's form (a stale edit shows the profile as it is now, a bad value is a message that
loses nothing), removed only once no agent uses it; the agent form sets the lines an
agent serves and the agent's page, the Lines page and the admin say them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.lines.profiles import ProfileStore, Terms

NEW = reverse("line-profile-create")
SKILLS = {"language": ["English"], "gender": ["F"]}


def edit_url(profile_id: str) -> str:
    return reverse("line-profile-edit", args=[profile_id])


def profile_form(**fields) -> dict:
    """Blended: support first, sales second after 30 s."""
    data = {
        "profile_id": "blended",
        "name": "Blended",
        "serves_support": "on",
        "priority_support": "1",
        "delay_support": "0",
        "serves_sales": "on",
        "priority_sales": "2",
        "delay_sales": "30",
    }
    return {key: value for key, value in {**data, **fields}.items() if value is not None}


def agent_form(name: str = "Ines", **fields) -> dict:
    return {"name": name, "skill_language": ["English"], "skill_gender": ["F"], **fields}


def stored(profile_id: str = "blended"):
    return ProfileStore(CallCenter().db).read().profiles.get(profile_id)


@pytest.fixture
def lines(moto_db):
    """Two lines configured: support and sales."""
    center = CallCenter()
    center.lines.put({"line_id": "support", "name": "Support"})
    center.lines.put({"line_id": "sales", "name": "Sales"})


def test_a_profile_is_created_from_the_form_and_listed_on_the_lines_page(supervisor_client, lines):
    page = supervisor_client.get(NEW).content.decode()
    assert 'name="serves_support"' in page and 'name="delay_sales"' in page and 'name="version"' in page
    answer = supervisor_client.post(NEW, profile_form(), follow=True)
    assert answer.redirect_chain == [(reverse("lines"), 302)]
    listed = answer.content.decode()
    assert "Created routing profile Blended (version 1)." in listed
    assert 'data-profile="blended"' in listed and "support (1), sales (2, after 30 s)" in listed
    assert edit_url("blended") in listed and "New routing profile" in listed
    assert stored().lines == {"support": Terms(1, 0), "sales": Terms(2, 30)}


def test_a_profile_is_edited_from_its_version_and_a_stale_edit_shows_it_as_it_is_now(supervisor_client, lines):
    supervisor_client.post(NEW, profile_form())
    page = supervisor_client.get(edit_url("blended")).content.decode()
    assert "from version 1" in page and 'name="delay_sales"' in page and 'value="30"' in page
    changed = profile_form(name="Support first", serves_sales=None, version="1")
    assert supervisor_client.post(edit_url("blended"), changed).status_code == 302
    assert stored().name == "Support first" and stored().lines == {"support": Terms(1, 0)}
    stale = supervisor_client.post(edit_url("blended"), profile_form(name="Old tab", version="1"))
    assert stale.status_code == 409
    html = stale.content.decode()
    assert "changed since version 1: it is at version 2" in html and "make your change again" in html
    assert 'value="Support first"' in html and "from version 2" in html  # the form as it is now
    assert stored().name == "Support first"


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"delay_sales": "5000"}, "The delay of Sales must be a whole number of seconds, 0 to 3600."),
        ({"delay_sales": "ten"}, "The delay of Sales must be a whole number of seconds, 0 to 3600."),
        ({"priority_support": "12"}, "The priority of Support must be a whole number 1 to 9."),
        ({"serves_support": None, "serves_sales": None}, "Tick at least one line the profile serves."),
        ({"profile_id": "Not An Id"}, "Profile id: It must be 1 to 40 lowercase letters"),
    ],
)
def test_a_bad_value_is_a_message_on_the_page_and_loses_nothing(supervisor_client, lines, fields, said):
    answer = supervisor_client.post(NEW, profile_form(name="Kept name", **fields))
    assert answer.status_code == 400
    html = answer.content.decode()
    assert said in html and 'class="form-errors banner banner-error"' in html
    assert 'value="Kept name"' in html  # what was typed is still there
    assert stored() is None


def test_a_profile_is_removed_only_once_no_agent_uses_it(supervisor_client, lines):
    supervisor_client.post(NEW, profile_form())
    ana = Agents().create("Ana Lopez", SKILLS, profile="blended")
    page = supervisor_client.get(edit_url("blended")).content.decode()
    assert 'data-confirm="Remove routing profile Blended? Refused while an agent uses it."' in page
    delete = reverse("line-profile-delete", args=["blended"])
    refused = supervisor_client.post(
        delete, {"version": "1", "confirmed": "1", "next": edit_url("blended")}, follow=True
    )
    assert refused.redirect_chain == [(edit_url("blended"), 302)]
    assert "is used by Ana Lopez: give them another first." in refused.content.decode()
    assert stored() is not None
    supervisor_client.post(
        reverse("agent-detail", args=[ana.agent_id]), agent_form("Ana Lopez", version="1", profile="")
    )
    removed = supervisor_client.post(
        delete, {"version": "1", "confirmed": "1", "next": edit_url("blended")}, follow=True
    )
    assert removed.redirect_chain == [(reverse("lines"), 302)]
    assert "Removed routing profile Blended." in removed.content.decode()
    assert stored() is None and Agents().get(ana.agent_id).profile is None


def test_the_agent_form_sets_a_profile_and_the_agents_page_and_the_admin_say_it(supervisor_client, lines, staff):
    supervisor_client.post(NEW, profile_form())
    form = supervisor_client.get(reverse("agent-create")).content.decode()
    assert '<option value="" selected>Every line</option>' in form and '<option value="blended">Blended' in form
    created = supervisor_client.post(reverse("agent-create"), agent_form(profile="blended"))
    assert created.status_code == 302
    [agent] = Agents().list().items
    assert Agents().get(agent.agent_id).profile == "blended"
    page = supervisor_client.get(reverse("agent-detail", args=[agent.agent_id])).content.decode()
    assert "<dt>Lines served</dt><dd>Blended: support (1), sales (2, after 30 s)</dd>" in page
    assert '<option value="blended" selected>' in page
    supervisor_client.force_login(staff)
    admin = supervisor_client.get(reverse("admin:queues_app_agententry_changelist") + "?status=offline")
    assert "Blended: support (1), sales (2, after 30 s)" in admin.content.decode()


def test_the_agent_form_keeps_an_agents_own_lines_or_serves_every_line(supervisor_client, lines):
    own = Agents().create("Own", SKILLS, lines={"sales": {"priority": 1, "delay_seconds": 20}})
    url = reverse("agent-detail", args=[own.agent_id])
    page = supervisor_client.get(url).content.decode()
    assert '<option value="~own" selected>Their own lines: sales (1, after 20 s)</option>' in page
    assert "<dt>Lines served</dt><dd>Their own: sales (1, after 20 s)</dd>" in page
    assert supervisor_client.post(url, agent_form("Own 2", version="1", profile="~own")).status_code == 302
    assert Agents().get(own.agent_id).lines == {"sales": Terms(1, 20)}
    assert supervisor_client.post(url, agent_form("Own 2", version="2", profile="")).status_code == 302
    kept = Agents().get(own.agent_id)
    assert (kept.profile, kept.lines) == (None, {})
    assert "<dt>Lines served</dt><dd>Every line</dd>" in supervisor_client.get(url).content.decode()


def test_a_profile_removed_meanwhile_is_a_message_on_the_agent_form(supervisor_client, lines):
    supervisor_client.post(NEW, profile_form())
    supervisor_client.post(reverse("line-profile-delete", args=["blended"]), {"version": "1", "confirmed": "1"})
    answer = supervisor_client.post(reverse("agent-create"), agent_form(profile="blended"))
    assert answer.status_code == 400
    html = answer.content.decode()
    assert "That routing profile no longer exists (removed meanwhile); choose another." in html
    assert "Traceback" not in html and Agents().list().items == []


def test_a_viewer_sees_the_profiles_but_cannot_change_them(viewer_client, lines):
    blended = {"profile_id": "blended", "name": "Blended", "lines": {"sales": {}}}
    ProfileStore(CallCenter().db).put(blended, known={"sales"})
    listed = viewer_client.get(reverse("lines")).content.decode()
    assert 'data-profile="blended"' in listed and "New routing profile" not in listed
    assert edit_url("blended") not in listed
    assert "Remove the profile" not in viewer_client.get(edit_url("blended")).content.decode()
    assert viewer_client.post(NEW, profile_form(profile_id="other")).status_code == 403
    delete = reverse("line-profile-delete", args=["blended"])
    assert viewer_client.post(delete, {"version": "1", "confirmed": "1"}).status_code == 403
    assert stored() is not None and stored("other") is None
