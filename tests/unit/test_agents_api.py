"""The roster through the API, as a workforce tool keeps it: agents added (a retry made
safe by the id it gives), renamed or given other skills from the version read, and
removed once logged off; each change audited."""

from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from tests.helpers.api import assert_problem

SKILLS = {"language": ["French", "English"], "gender": ["F"]}


def add(api, **fields):
    return api.post("/api/agents", {"name": "Ines Roy", "skills": SKILLS, **fields})


def test_an_agent_is_added_logged_off_and_a_retry_with_its_id_is_answered_as_made(moto_db, api):
    made = add(api, agent_id="ines")
    assert made.status_code == 201 and made["Location"] == "/api/agents/ines"
    body = made.json()
    assert (body["agent_id"], body["status"], body["version"], body["skills"]["language"]) == (
        "ines", "offline", 1, ["English", "French"]
    )  # fmt: skip
    again = add(api, agent_id="ines")
    assert again.status_code == 200 and again["Idempotent-Replayed"] == "true"
    other = assert_problem(add(api, agent_id="ines", name="Someone Else"), 409)
    assert "exists already" in other["message"]
    assert add(api).json()["agent_id"] != "ines"  # without an id, one is made up
    entries = AuditTrail().for_target(target("agent", "ines")).entries
    assert [entry.action for entry in entries] == ["agent.create"]


def test_a_bad_agent_is_a_400_naming_the_field(moto_db, api):
    missing = assert_problem(api.post("/api/agents", {"name": "Ines"}), 400)
    assert "skills" in missing["message"], missing
    bad_skill = assert_problem(add(api, skills={"language": ["Klingon"]}), 400)
    assert "Klingon" in bad_skill["message"]
    assert "name" in assert_problem(add(api, name=""), 400)["fields"]


def test_an_agent_is_changed_from_the_version_read_and_a_stale_change_refused(moto_db, api):
    add(api, agent_id="ines")
    renamed = api.patch("/api/agents/ines", {"name": "Ines Roy-Martin", "version": 1})
    assert renamed.status_code == 200 and renamed.json()["version"] == 2
    assert renamed.json()["skills"]["gender"] == ["F"]  # left out: kept
    retried = api.patch("/api/agents/ines", {"name": "Ines Roy-Martin", "version": 1})
    assert retried.status_code == 200 and retried["Idempotent-Replayed"] == "true"
    stale = assert_problem(
        api.patch("/api/agents/ines", {"skills": {"language": ["English"], "gender": ["F"]}, "version": 1}), 409
    )
    assert "version 2" in stale["message"]
    reskilled = api.patch("/api/agents/ines", {"skills": {"language": ["English"], "gender": ["F"]}, "version": 2})
    assert reskilled.json()["skills"]["language"] == ["English"]
    assert_problem(api.patch("/api/agents/nobody", {"name": "X", "version": 1}), 404)


def test_an_agent_is_removed_once_logged_off_and_from_the_version_read(moto_db, api):
    add(api, agent_id="ines")
    queued = api.post("/api/agents/ines/available", {"version": 1}).json()["agent"]
    busy = assert_problem(api.delete(f"/api/agents/ines?version={queued['version']}"), 409)
    assert "log them off" in busy["message"]
    offline = api.post("/api/agents/ines/offline", {"version": queued["version"]}).json()
    offline = offline.get("agent", offline)
    assert_problem(api.delete(f"/api/agents/ines?version={queued['version']}"), 409)  # not the version read
    removed = api.delete(f"/api/agents/ines?version={offline['version']}")
    assert removed.status_code == 200 and removed.json()["agent_id"] == "ines"
    assert_problem(api.get("/api/agents/ines"), 404)
    assert_problem(api.delete(f"/api/agents/ines?version={offline['version']}"), 404)
    entries = AuditTrail().for_target(target("agent", "ines")).entries
    assert entries[0].action == "agent.delete"
