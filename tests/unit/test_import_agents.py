"""`manage.py import_agents roster.csv [--dry-run]`: a whole roster, checked before
anything changes, each agent created or changed from the version read and audited."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.agents.roster import Agents
from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from queues_app.centre.call_center import CallCenter

ROSTER = """agent_id,name,language,gender
ana,Ana Lima,French:5 English:2,F
bo,Bo Chen,English,M
"""


def run(tmp_path, text, *args):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    out = io.StringIO()
    call_command("import_agents", str(path), *args, stdout=out)
    return out.getvalue()


def test_a_roster_is_created_then_changed_and_each_change_audited(moto_db, tmp_path):
    dry = run(tmp_path, ROSTER, "--dry-run")
    assert "create  ana: Ana Lima (language English:2 French:5; gender F)" in dry and "Dry run" in dry
    assert Agents().get_many(["ana", "bo"]) == []
    assert "Applied: 2 agent(s)." in run(tmp_path, ROSTER)
    ana = Agents().get("ana")
    assert (ana.skills["language"], ana.levels) == (["English", "French"], {"language": {"French": 5, "English": 2}})
    assert "Nothing to change." in run(tmp_path, ROSTER)  # the same file again
    changed = run(tmp_path, ROSTER.replace("French:5", "French:3"))
    assert "update  ana: skills -> language English:2 French:3; gender F" in changed and "same    bo" in changed
    assert Agents().get("ana").levels["language"]["French"] == 3
    actions = [e.action for e in AuditTrail().for_target(target("agent", "ana")).entries]
    assert sorted(actions) == ["agent.create", "agent.update"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("agent_id,name,language\nana,Ana,French\n", "missing: gender"),
        (ROSTER + "cy,Cy,Klingon,F\n", "line 4: unknown language 'Klingon'"),
        (ROSTER + "cy,Cy,French:9,F\n", "line 4: language 'French': the level must be a whole number 1 to 5"),
        (ROSTER + "ana,Ana Again,French,F\n", "line 4: agent 'ana' is on line 2 already"),
        (ROSTER + "c y,Cy,French,F\n", "line 4: agent_id 'c y'"),
        (ROSTER + "cy,,French,F\n", "line 4: An agent needs a name."),
    ],
)
def test_a_file_at_fault_names_the_line_and_changes_nothing(moto_db, tmp_path, text, said):
    with pytest.raises(CommandError) as raised:
        run(tmp_path, text)
    assert said in str(raised.value) and "nothing was changed" in str(raised.value)
    assert Agents().get_many(["ana", "bo", "cy"]) == []


def test_an_agent_queued_is_left_as_they_are_and_named(moto_db, tmp_path):
    run(tmp_path, ROSTER)
    CallCenter().make_available("ana")
    with pytest.raises(CommandError) as raised:
        run(tmp_path, ROSTER.replace("Bo Chen", "Bo Chen-Li").replace("French:5", "French:4"))
    assert "Left as they were: ana (line 2): Ana Lima is queued" in str(raised.value)
    assert Agents().get("bo").name == "Bo Chen-Li"  # the others were applied


def test_a_profile_column_sets_the_lines_served_and_an_unknown_profile_changes_nothing(moto_db, tmp_path):
    from queues_app.lines.profiles import ProfileStore

    ProfileStore(Agents().db).put({"profile_id": "blended", "name": "Blended", "lines": {"main": {}}}, known={"main"})
    run(tmp_path, ROSTER)
    with_profile = (
        "agent_id,name,language,gender,profile\nana,Ana Lima,French:5 English:2,F,blended\nbo,Bo Chen,English,M,\n"
    )
    out = run(tmp_path, with_profile)
    assert "update  ana: profile -> blended" in out and "same    bo" in out, out
    assert Agents().get("ana").profile == "blended"
    assert "Nothing to change." in run(tmp_path, with_profile)
    assert "same    ana" in run(tmp_path, ROSTER, "--dry-run")  # no column: the lines served stay
    with pytest.raises(CommandError, match="line 3: no routing profile 'gone'"):
        run(tmp_path, with_profile.replace("M,\n", "M,gone\n"))
    assert Agents().get("bo").profile is None
