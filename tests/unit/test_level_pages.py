"""Skill levels on the supervisor's pages: the agent form sets a level per value and shows
the current ones, refuses a bad level with a message, and the agent's page, the agents
list, the admin and a call's page show levels and routing steps."""

from __future__ import annotations

import pytest
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.audit.store import AuditTrail
from queues_app.centre.call_center import CallCenter

# The catalog's values in order (settings): English, French, Spanish; F, M, X.
FRENCH_LEVEL, ENGLISH_LEVEL, F_LEVEL = "level_language_1", "level_language_0", "level_gender_0"
STEPS = [{"min_level": {"language": 4}, "seconds": 20}, {"min_level": {"language": 2}, "seconds": 40}]


def agent_form(name="Ines", **levels):
    return {"name": name, "skill_language": ["English", "French"], "skill_gender": ["F"], **levels}


def selected(html: str, field: str) -> str:
    """The value the page's select `field` has chosen."""
    start = html.index(f'name="{field}"')
    chosen = html.index("selected", start)
    return html[html.rindex('value="', start, chosen) + 7 :].split('"', 1)[0]


def test_a_new_agent_is_saved_with_the_levels_chosen_on_the_form(supervisor_client, moto_db):
    form = supervisor_client.get(reverse("agent-create")).content.decode()
    assert 'aria-label="French level"' in form and selected(form, FRENCH_LEVEL) == "1"
    response = supervisor_client.post(reverse("agent-create"), agent_form(**{FRENCH_LEVEL: "5", F_LEVEL: "1"}))
    assert response.status_code == 302
    [created] = Agents().list().items
    saved = Agents().get(created.agent_id)
    assert saved.skills == {"language": ["English", "French"], "gender": ["F"]}
    assert saved.levels == {"language": {"French": 5}}


def test_the_edit_form_shows_the_agents_levels_and_saves_changed_ones(supervisor_client, moto_db):
    ana = Agents().create("Ana", {"language": {"French": 5, "English": 2}, "gender": {"F": 3}})
    url = reverse("agent-detail", args=[ana.agent_id])
    html = supervisor_client.get(url).content.decode()
    assert (selected(html, FRENCH_LEVEL), selected(html, ENGLISH_LEVEL)) == ("5", "2")
    # Gender is not levelled on the form (SWITCHBOARD_LEVELLED_SKILLS): its level rides hidden.
    assert f'<input type="hidden" name="{F_LEVEL}" value="3"' in html and "F level" not in html
    posted = agent_form("Ana", version=ana.version, **{FRENCH_LEVEL: "3", ENGLISH_LEVEL: "1", F_LEVEL: "3"})
    assert supervisor_client.post(url, posted).status_code == 302
    assert Agents().get(ana.agent_id).levels == {"language": {"French": 3}, "gender": {"F": 3}}


@pytest.mark.parametrize("level", ["9", "x", "0", "2.5"])
def test_a_bad_level_is_a_message_on_the_page_and_saves_nothing(supervisor_client, moto_db, level):
    response = supervisor_client.post(reverse("agent-create"), agent_form(**{FRENCH_LEVEL: level}))
    assert response.status_code == 400
    html = response.content.decode()
    assert 'class="field-error"' in html and "The level of French must be a whole number 1 to 5." in html
    assert Agents().list().items == []
    assert AuditTrail().recent().entries == []
    ana = Agents().create("Ana", {"language": {"French": 5}, "gender": ["F"]})
    edit = agent_form("Ana", version=ana.version, **{FRENCH_LEVEL: level})
    assert supervisor_client.post(reverse("agent-detail", args=[ana.agent_id]), edit).status_code == 400
    assert Agents().get(ana.agent_id) == ana


def test_the_agents_page_the_list_and_the_admin_show_levels(supervisor_client, moto_db, staff):
    ana = Agents().create("Ana", {"language": {"French": 5, "English": 1}, "gender": ["F"]})
    detail = supervisor_client.get(reverse("agent-detail", args=[ana.agent_id])).content.decode()
    assert "<dt>Skills</dt><dd>English, French 5, F</dd>" in detail
    listed = supervisor_client.get(reverse("agents")).content.decode()
    assert '<span class="chip">French 5</span>' in listed and '<span class="chip">English</span>' in listed
    supervisor_client.force_login(staff)
    admin = supervisor_client.get(reverse("admin:queues_app_agententry_changelist")).content.decode()
    assert "English, French 5, F" in admin


def test_a_call_with_steps_shows_them_and_the_step_it_was_matched_at(supervisor_client, moto_db):
    centre = CallCenter()
    expert = Agents().create("Expert", {"language": {"French": 5}, "gender": ["F"]})
    centre.make_available(expert.agent_id)
    call, _ = centre.create_call({"language": "French", "gender": "any"}, steps=STEPS)
    html = supervisor_client.get(reverse("call-detail", args=[call.call_id])).content.decode()
    assert (
        "<dt>Steps</dt><dd>language 4 or above for 20 s, then language 2 or above for 40 s, "
        "then any agent who fits</dd>" in html
    )
    assert "Routing step when matched: step 1 (language 4 or above)." in html
    plain, _ = centre.create_call({"language": "English", "gender": "any"})
    html = supervisor_client.get(reverse("call-detail", args=[plain.call_id])).content.decode()
    assert "<dt>Steps</dt>" not in html and "Routing step when matched" not in html
