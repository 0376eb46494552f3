"""CSV downloads: each opened with Python's csv module has its header row (naming the
centre's time zone) and one row per item, the same items as the page with the same
filters; they stream, across several reads, and a bad filter is a 400."""

import csv
import io

import pytest
from django.urls import reverse

from queues_app.agents.roster import Agents
from queues_app.centre.call_center import CallCenter
from queues_app.operations import Operations
from queues_app.views import exports

SKILLS = {"language": ["Spanish"], "gender": ["F"]}


def rows_of(response):
    assert response.status_code == 200 and response.streaming
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith("attachment; filename=")
    text = b"".join(response.streaming_content).decode()
    return list(csv.reader(io.StringIO(text)))


@pytest.fixture
def small_pages(monkeypatch):
    monkeypatch.setattr(exports, "PAGE", 2)  # several reads for a handful of items


def test_the_agents_csv_has_the_pages_agents_with_its_filters(viewer_client, moto_db, small_pages, settings):
    settings.TIME_ZONE = "America/New_York"
    names = ["Ana", "Bea", "Cy", "Dee", "Eve"]
    agents = {name: Agents().create(name, SKILLS) for name in names}
    for name in ("Bea", "Dee", "Eve"):
        CallCenter().make_available(agents[name].agent_id)
    header, *rows = rows_of(viewer_client.get(reverse("agents-csv"), {"status": "queued"}))
    assert header == ["Name", "Agent id", "Status", "Skills", "Since (America/New_York)", "Call"]
    assert [(r[0], r[2], r[3]) for r in rows] == [(n, "Queued", "Spanish · F") for n in ("Bea", "Dee", "Eve")]
    assert all(r[4].endswith("-05:00") for r in rows)  # the centre's time, with its offset
    page = viewer_client.get(reverse("agents"), {"status": "queued"}).content.decode()
    assert all(f'data-agent="{r[1]}"' in page for r in rows)
    _, *everyone = rows_of(viewer_client.get(reverse("agents-csv")))
    assert [r[0] for r in everyone] == names


def test_a_bad_filter_is_a_400_not_a_file(viewer_client, moto_db):
    response = viewer_client.get(reverse("agents-csv"), {"status": "napping"})
    assert response.status_code == 400 and not response.streaming


def test_the_calls_csvs_have_the_line_in_order_and_the_calls_in_progress(viewer_client, moto_db, small_pages):
    center = CallCenter()
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    taken, _ = center.create_call({"language": "Spanish", "gender": "F"})
    waiting = [center.create_call({"language": "French", "gender": None})[0] for _ in range(3)]
    header, *rows = rows_of(viewer_client.get(reverse("calls-csv"), {"list": "waiting"}))
    assert header == ["Call", "Language", "Gender", "Priority", "Arrived (UTC)"]
    assert [(r[0], r[1], r[2]) for r in rows] == [(c.call_id, "French", "any") for c in waiting]
    header, *rows = rows_of(viewer_client.get(reverse("calls-csv"), {"list": "in_progress"}))
    assert header[:2] == ["Call", "Status"] and header[4:6] == ["Agent", "Agent id"]
    assert header[-2:] == ["Answered (UTC)", "Answer by (UTC)"]
    assert [(r[0], r[1], r[4]) for r in rows] == [(taken.call_id, "assigned", "Ana")]
    assert rows[0][-2] == taken.answered_at.replace("Z", "").split(".")[0] + "+00:00" and rows[0][-1] == ""
    assert viewer_client.get(reverse("calls-csv"), {"list": "ended"}).status_code == 400


def test_a_ringing_call_is_in_the_csv_offered_with_no_answer_but_its_deadline(
    viewer_client, moto_db, small_pages, settings
):
    settings.ANSWER_TIMEOUT_SECONDS = 20
    center = CallCenter()
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    offered, _ = center.create_call({"language": "Spanish", "gender": "F"})
    _, *rows = rows_of(viewer_client.get(reverse("calls-csv"), {"list": "in_progress"}))
    assert [(r[0], r[1], r[4], r[-2]) for r in rows] == [(offered.call_id, "offered", "Ana", "")]
    assert rows[0][-1].endswith("+00:00")  # when it goes back to the line if nobody picks up


def test_the_audit_csv_is_the_trail_as_searched(viewer_client, moto_db, small_pages):
    ana, bea = Agents().create("Ana", SKILLS), Agents().create("Bea", SKILLS)
    ops = Operations("sam-supervisor", "page")
    for agent in (ana, bea):
        ops.make_available(agent.agent_id)
        ops.log_off(agent.agent_id)
    header, *rows = rows_of(viewer_client.get(reverse("audit-csv"), {"target": f"agent:{ana.agent_id}"}))
    assert header[0] == "When (UTC)" and header[1:4] == ["What happened", "Who", "Where"]
    assert [(r[1], r[2], r[3], r[6]) for r in rows] == [
        ("logged Ana off", "sam-supervisor", "on the dashboard", ana.agent_id),
        ("Ana queued", "sam-supervisor", "on the dashboard", ana.agent_id),
    ]
    _, *everything = rows_of(viewer_client.get(reverse("audit-csv")))
    assert len(everything) == 4  # both agents' two changes, over several reads
    page = viewer_client.get(reverse("audit")).content.decode()
    assert page.count("data-entry=") == 4 and 'href="/audit/export.csv"' in page
