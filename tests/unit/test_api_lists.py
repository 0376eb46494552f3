"""The API's lists and reads on moto: agents (status and skill filters, pages), one
agent, calls waiting (in line order) or assigned, with signed cursors; bad filters are
400s naming the parameter and listing what is allowed."""

import pytest

from queues_app.centre.call_center import CallCenter
from tests.helpers.api import agent, assert_problem


def agent_ids(body):
    return [a["agent_id"] for a in body["agents"]]


def every_page(api, path, items, key):
    """Each page's item ids, following next_cursor to the end."""
    pages, cursor = [], None
    while True:
        separator = "&" if "?" in path else "?"
        response = api.get(path + (f"{separator}cursor={cursor}" if cursor else ""))
        assert response.status_code == 200, response.content
        body = response.json()
        pages.append([item[key] for item in body[items]])
        cursor = body["next_cursor"]
        if not cursor:
            return pages


# --- agents ---------------------------------------------------------------------------


def test_it_lists_agents_with_their_status_and_skills(moto_db, viewer_api):
    ana = agent("Ana", ["English", "French"], "F")
    body = viewer_api.get("/api/agents").json()
    assert body["next_cursor"] is None
    (listed,) = body["agents"]
    assert (listed["agent_id"], listed["status"], listed["skills"]) == (
        ana.agent_id,
        "offline",
        {"language": ["English", "French"], "gender": ["F"]},
    )


def test_it_filters_agents_by_status(moto_db, api):
    ana, bob = agent("Ana", ["English"], "F"), agent("Bob", ["English"], "M")
    CallCenter().make_available(ana.agent_id)
    assert agent_ids(api.get("/api/agents?status=queued").json()) == [ana.agent_id]
    assert agent_ids(api.get("/api/agents?status=offline").json()) == [bob.agent_id]


def test_it_filters_agents_by_skill(moto_db, api):
    ana = agent("Ana", ["English", "French"], "F")
    agent("Bob", ["English"], "M")
    assert agent_ids(api.get("/api/agents?skill=language:French").json()) == [ana.agent_id]
    assert agent_ids(api.get("/api/agents?skill=gender:F&status=offline").json()) == [ana.agent_id]


def test_agents_come_a_page_at_a_time_each_once(moto_db, api):
    made = {agent(f"Agent {n:02}", ["English"], "F").agent_id for n in range(7)}
    pages = every_page(api, "/api/agents?limit=3", "agents", "agent_id")
    assert [len(page) for page in pages[:2]] == [3, 3]
    listed = [agent_id for page in pages for agent_id in page]
    assert sorted(listed) == sorted(made)


@pytest.mark.parametrize(
    "query, field, words",
    [
        ("status=lunch", "status", "offline, available, queued, ringing, attending, wrap_up or not_ready"),
        ("skill=language:Klingon", "skill", "allowed: English, French, Spanish"),
        ("skill=planet:Mars", "skill", "language, gender"),
        ("skill=French", "skill", "dimension:value"),
        ("limit=0", "limit", "1 to 100"),
        ("limit=101", "limit", "1 to 100"),
        ("cursor=forged", "cursor", "not valid"),
    ],
)
def test_a_bad_agent_filter_is_400_naming_it_and_what_is_allowed(moto_db, api, query, field, words):
    body = assert_problem(api.get(f"/api/agents?{query}"), 400, "Invalid request")
    assert set(body["fields"]) == {field}
    assert words in body["fields"][field]


def test_it_reads_one_agent(moto_db, viewer_api):
    ana = agent("Ana", ["Spanish"], "F")
    body = viewer_api.get(f"/api/agents/{ana.agent_id}").json()
    assert (body["agent_id"], body["name"], body["status"]) == (ana.agent_id, "Ana", "offline")


def test_an_unknown_agent_is_a_404_problem(moto_db, api):
    body = assert_problem(api.get("/api/agents/nobody"), 404, "Not found")
    assert "nobody" in body["message"]


# --- calls ----------------------------------------------------------------------------


def place(api, language, priority=0):
    response = api.post("/api/calls", {"preferences": {"language": language}, "priority": priority})
    assert response.status_code == 201, response.content
    return response.json()["call_id"]


def test_waiting_calls_are_listed_in_line_order(moto_db, api):
    first = place(api, "French")
    urgent = place(api, "Spanish", priority=5)
    second = place(api, "French")
    body = api.get("/api/calls?status=waiting").json()
    assert [c["call_id"] for c in body["calls"]] == [urgent, first, second]
    assert {c["status"] for c in body["calls"]} == {"waiting"}
    assert body["next_cursor"] is None


def test_waiting_calls_come_a_page_at_a_time_in_order(moto_db, api):
    placed = [place(api, "French") for _ in range(5)]
    pages = every_page(api, "/api/calls?status=waiting&limit=2", "calls", "call_id")
    assert [call_id for page in pages for call_id in page] == placed
    assert [len(page) for page in pages[:2]] == [2, 2]


def test_assigned_calls_are_those_agents_attend(moto_db, api):
    ana = agent("Ana", ["French"], "F")
    CallCenter().make_available(ana.agent_id)
    taken = place(api, "French")
    waiting = place(api, "Spanish")
    assigned = api.get("/api/calls?status=assigned").json()
    assert [(c["call_id"], c["agent_id"]) for c in assigned["calls"]] == [(taken, ana.agent_id)]
    assert [c["call_id"] for c in api.get("/api/calls?status=waiting").json()["calls"]] == [waiting]


def test_assigned_calls_come_a_page_at_a_time_each_once(moto_db, api):
    taken = set()
    for n in range(5):
        someone = agent(f"Agent {n}", ["French"], "F")
        CallCenter().make_available(someone.agent_id)
        taken.add(place(api, "French"))
    pages = every_page(api, "/api/calls?status=assigned&limit=2", "calls", "call_id")
    listed = [call_id for page in pages for call_id in page]
    assert sorted(listed) == sorted(taken)


@pytest.mark.parametrize(
    "query, words",
    [
        ("", "required; one of waiting, offered or assigned"),
        ("status=ended", "must be one of waiting, offered or assigned"),
    ],
)
def test_the_call_list_needs_a_status_it_knows(moto_db, api, query, words):
    body = assert_problem(api.get(f"/api/calls?{query}"), 400, "Invalid request")
    assert body["fields"] == {"status": words}


def test_a_cursor_of_one_list_is_refused_by_another(moto_db, api):
    for _ in range(3):
        place(api, "French")
    cursor = api.get("/api/calls?status=waiting&limit=1").json()["next_cursor"]
    assert cursor
    body = assert_problem(api.get(f"/api/calls?status=assigned&cursor={cursor}"), 400)
    assert set(body["fields"]) == {"cursor"}
    assert_problem(api.get(f"/api/agents?cursor={cursor}"), 400)
    assert_problem(api.get(f"/api/calls?status=waiting&cursor={cursor[:-2]}"), 400)


def test_the_lists_need_a_token(moto_db, db):
    from django.test import Client

    for path in ("/api/agents", "/api/calls?status=waiting", "/api/agents/a1"):
        assert_problem(Client().get(path), 401)
