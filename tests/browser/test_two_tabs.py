"""The Agents page open in two tabs: tab 1 releases an agent, who takes the next waiting
caller at once; tab 2 still shows the first call, and its Release is told that call
already ended and which call the agent is on now, while the new call stays assigned
(Chromium via Playwright, on DynamoDB Local, at a desk's width and a phone's)."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from tests.helpers.browser import log_in

SKILLS = {"language": ["Spanish"], "gender": ["F"]}
SHOTS = Path("/tmp/switchboard-two-tabs")


def release_in(tab, agent_id: str, width: int):
    """Release the agent from the list, confirming in the dialog (which must be on screen)."""
    row = tab.locator(f'tr[data-agent="{agent_id}"]')
    row.get_by_role("button", name="Release").click()
    dialog = tab.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    box = dialog.bounding_box()
    assert 0 <= box["x"] and box["x"] + box["width"] <= width, box
    dialog.get_by_role("button", name="End the call").click()
    return row


@pytest.mark.parametrize("width", [1280, 390])
def test_a_stale_tab_cannot_end_the_call_the_agent_took_since(page, live_server, local_db, supervisor, width):
    router = CallCenter()
    ana = Agents().create("Ana Lima", SKILLS)
    router.make_available(ana.agent_id)
    first, _ = router.create_call({"language": "Spanish"})
    second, _ = router.create_call({"language": "Spanish"})
    assert (first.agent_id, second.status) == (ana.agent_id, CallStatus.WAITING)

    log_in(page, live_server, supervisor)
    tab_one, tab_two = page, page.context.new_page()
    for tab in (tab_one, tab_two):
        tab.set_viewport_size({"width": width, "height": 900})
        tab.goto(f"{live_server.url}/agents/?status=attending")
        expect(tab.locator(f'tr[data-agent="{ana.agent_id}"]')).to_contain_text(first.call_id)

    release_in(tab_one, ana.agent_id, width)
    expect(tab_one.locator(f'.row-note[data-note-for="{ana.agent_id}"]')).to_contain_text(f"took call {second.call_id}")

    row = release_in(tab_two, ana.agent_id, width)
    note = tab_two.locator(f'.row-note[data-note-for="{ana.agent_id}"]')
    expect(note).to_contain_text(f"Call {first.call_id} had already ended")
    expect(note).to_contain_text(f"Ana Lima is on call {second.call_id} now. Nothing changed.")
    expect(row).to_contain_text(second.call_id)  # the row drawn as it is now
    seen = note.bounding_box()  # wholly on the screen, under the row it is about
    assert 0 <= seen["x"] and seen["x"] + seen["width"] <= width, seen
    assert seen["y"] >= row.bounding_box()["y"] + row.bounding_box()["height"] - 1
    SHOTS.mkdir(exist_ok=True)
    tab_two.screenshot(path=str(SHOTS / f"stale-release-{width}.png"), full_page=False)

    assert router.get_call(second.call_id).status == CallStatus.ASSIGNED
    now = Agents().get(ana.agent_id)
    assert (now.status, now.call_id) == (AgentStatus.ATTENDING, second.call_id)
    assert tab_two.evaluate("document.documentElement.scrollWidth") <= width
