"""Creating, reading and listing agents."""

import pytest

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.agents.skills import SkillError
from queues_app.ddb import errors


def test_create_then_get(moto_db):
    agents = Agents()
    created = agents.create("Ana Ruiz", {"language": ["Spanish", "English"], "gender": ["F"]})
    fetched = agents.get(created.agent_id)
    assert fetched.name == "Ana Ruiz"
    # normalized to the catalog's order
    assert fetched.skills == {"language": ["English", "Spanish"], "gender": ["F"]}
    assert fetched.status == AgentStatus.OFFLINE
    assert fetched.version == 1


def test_duplicate_id_is_a_conflict_and_keeps_the_first(moto_db):
    agents = Agents()
    agents.create("First", {"language": ["French"], "gender": ["M"]}, agent_id="a1")
    with pytest.raises(errors.Conflict, match="exists already"):
        agents.create("Second", {"language": ["French"], "gender": ["M"]}, agent_id="a1")
    assert agents.get("a1").name == "First"


def test_unknown_agent_is_not_found(moto_db):
    with pytest.raises(errors.NotFound):
        Agents().get("nobody")


@pytest.mark.parametrize(
    "skills, field",
    [
        ({"language": ["Klingon"], "gender": ["F"]}, "language"),
        ({"language": [], "gender": ["F"]}, "language"),
        ({"language": ["English"]}, "gender"),
        ({"language": ["English"], "gender": ["F"], "tier": ["1"]}, "tier"),
    ],
)
def test_invalid_skills_name_the_field(moto_db, skills, field):
    with pytest.raises(SkillError) as caught:
        Agents().create("X", skills)
    assert caught.value.field == field


def test_blank_name_is_refused(moto_db):
    with pytest.raises(errors.InvalidRequest):
        Agents().create("   ", {"language": ["English"], "gender": ["F"]})


def test_list_pages_through_all_agents(moto_db):
    agents = Agents()
    made = {agents.create(f"Agent {i:02d}", {"language": ["English"], "gender": ["X"]}).agent_id for i in range(7)}
    seen, cursor, pages = set(), None, 0
    while True:
        page = agents.list(limit=3, cursor=cursor)
        seen.update(a.agent_id for a in page.items)
        pages += 1
        cursor = page.next_cursor
        if not cursor:
            break
    assert seen == made
    assert pages >= 3


def test_list_filters_by_name(moto_db):
    agents = Agents()
    agents.create("Zoe Quinn", {"language": ["English"], "gender": ["F"]})
    agents.create("Yann Tiersen", {"language": ["French"], "gender": ["M"]})
    page = agents.list(search="quinn")
    assert [a.name for a in page.items] == ["Zoe Quinn"]


def test_a_forged_cursor_is_a_clear_error(moto_db):
    with pytest.raises(errors.InvalidRequest, match="page link"):
        Agents().list(cursor="not-a-cursor!!")


@pytest.mark.parametrize("value", ["Sp#nish", "Sp@nish", " "])
def test_a_skill_value_that_would_break_a_partition_key_is_refused(value):
    from queues_app.agents.skills import SkillCatalog

    with pytest.raises(SkillError, match="may not be blank or contain"):
        SkillCatalog.from_mapping({"language": ["English", value]})
