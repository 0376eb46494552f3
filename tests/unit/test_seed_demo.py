import io

from django.core.management import call_command

from queues_app.dynamo.agents import Agents


def all_agents():
    agents, cursor = [], None
    while True:
        page = Agents().list(limit=100, cursor=cursor)
        agents += page.items
        cursor = page.next_cursor
        if not cursor:
            return agents


def test_seed_writes_agents_with_valid_skills(moto_db):
    out = io.StringIO()
    call_command("seed_demo", agents=60, seed=7, stdout=out)
    assert "60 agents written" in out.getvalue()
    agents = all_agents()
    assert len(agents) == 60
    for agent in agents:
        assert agent.name
        assert len(agent.skills["gender"]) == 1
        assert 1 <= len(agent.skills["language"]) <= 3
    # more than one batch of 25 was needed
    assert len({a.agent_id for a in agents}) == 60


def test_seed_if_empty_leaves_existing_data_alone(moto_db):
    call_command("seed_demo", agents=3, stdout=io.StringIO())
    out = io.StringIO()
    call_command("seed_demo", agents=10, if_empty=True, stdout=out)
    assert "nothing loaded" in out.getvalue()
    assert len(all_agents()) == 3


def test_progress_bar_is_drawn_when_asked(moto_db):
    out = io.StringIO()
    call_command("seed_demo", agents=30, progress=True, stdout=out)
    assert "[" + "#" * 30 + "] 30/30" in out.getvalue()
    assert "25/30" in out.getvalue()


def test_no_progress_bar_when_not_on_a_terminal(moto_db):
    out = io.StringIO()
    call_command("seed_demo", agents=5, stdout=out)
    assert "5/5" not in out.getvalue()
