"""A supervisor's everyday jobs, done from the overview as a person would, counting each
click, tap or choice (a menu opened on a phone counts too): the README's table of
interactions per job is this test's JOBS (Chromium via Playwright, on DynamoDB Local)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.shipments.queue import ShipmentQueue, ShipmentState
from tests.helpers.browser import follow, log_in

SKILLS = {"language": ["Spanish"], "gender": ["F"]}

# job -> interactions at 1280 px, at 390 px (the README's table says the same).
JOBS = {
    "make an agent available": (2, 3),
    "end an agent's call": (3, 4),
    "end a waiting call whose caller hung up": (3, 4),
    "add a caller and assign an agent": (4, 5),
    "give a shipment priority 9": (3, 4),
    "send a shipment to the DLQ": (3, 4),
    "restore a shipment from the DLQ": (3, 4),
}


class Steps:
    """The page, counting what the person does."""

    def __init__(self, page):
        self.page, self.count = page, 0

    def click(self, locator):
        locator.click()
        self.count += 1

    def choose(self, locator, value):
        locator.select_option(value)
        self.count += 1

    def go(self, name):
        """To a page from the menu: opening the menu on a phone is a step of its own."""
        menu = self.page.get_by_role("button", name="Menu")
        if menu.is_visible():
            self.click(menu)
        follow(self.page, self.page.locator("#site-menu").get_by_role("link", name=name, exact=True))
        self.count += 1


def confirm(steps, button):
    dialog = steps.page.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    box, width = dialog.bounding_box(), steps.page.viewport_size["width"]
    assert 0 <= box["x"] and box["x"] + box["width"] <= width
    steps.click(dialog.get_by_role("button", name=button))


def shipment(sid, dlq=False):
    service = ShipmentQueue()
    service.create({"destination": "Lisbon"}, shipment_id=sid, ready=True)
    service.enqueue(sid)
    if dlq:
        service.send_to_dlq(sid, "address unknown")


def make_available(steps):
    ana = Agents().create("Ana Lima", SKILLS)
    yield
    steps.go("Agents")
    steps.click(steps.page.locator(f'tr[data-agent="{ana.agent_id}"]').get_by_role("button", name="Make available"))
    expect(steps.page.locator(f'.row-note[data-note-for="{ana.agent_id}"]')).to_contain_text("is queued")
    assert Agents().get(ana.agent_id).status == AgentStatus.QUEUED


def end_call(steps):
    ana = Agents().create("Ana Lima", SKILLS)
    CallCenter().make_available(ana.agent_id)
    call, _ = CallCenter().create_call({"language": "Spanish"})
    yield
    steps.go("Agents")
    steps.click(steps.page.locator(f'tr[data-agent="{ana.agent_id}"]').get_by_role("button", name="Release"))
    confirm(steps, "End the call")
    expect(steps.page.locator(f'.row-note[data-note-for="{ana.agent_id}"]')).to_contain_text("Released Ana Lima")
    assert CallCenter().get_call(call.call_id).status == CallStatus.ENDED


def hung_up(steps):
    call, _ = CallCenter().create_call({"language": "French", "gender": "X"})
    yield
    steps.go("Calls")
    steps.click(
        steps.page.locator(f'#waiting-list tr[data-call="{call.call_id}"]').get_by_role("button", name="Hung up…")
    )
    confirm(steps, "End as abandoned")
    expect(steps.page.locator("#messages")).to_contain_text("ended as abandoned")


def add_caller(steps):
    ana = Agents().create("Ana Lima", SKILLS)
    CallCenter().make_available(ana.agent_id)
    yield
    steps.go("Calls")
    steps.choose(steps.page.get_by_label("Language"), "Spanish")
    steps.choose(steps.page.get_by_label("Gender"), "F")
    steps.click(steps.page.get_by_role("button", name="Assign now"))
    expect(steps.page.locator("#messages")).to_contain_text("assigned to Ana Lima")


def priority_nine(steps):
    for sid in ("s-1", "s-2", "s-3"):
        shipment(sid)
    yield
    steps.go("Shipments")
    row = steps.page.locator('tr[data-shipment="s-3"]')
    steps.choose(row.get_by_label("Priority of s-3"), "9")
    steps.click(row.get_by_role("button", name="Set priority"))
    expect(steps.page.locator('.row-note[data-note-for="s-3"]')).to_contain_text("priority 9")
    assert steps.page.locator("tbody tr[data-shipment]").first.get_attribute("data-shipment") == "s-3"


def to_dlq(steps):
    shipment("s-1")
    yield
    steps.go("Shipments")
    steps.click(steps.page.locator('tr[data-shipment="s-1"]').get_by_role("button", name="Send to DLQ…"))
    confirm(steps, "Send to the DLQ")
    expect(steps.page.locator('.row-note[data-note-for="s-1"]')).to_contain_text("is in the DLQ")
    assert ShipmentQueue().get("s-1").state == ShipmentState.IN_DLQ


def restore(steps):
    shipment("s-1", dlq=True)
    yield
    steps.go("Shipments")
    steps.click(steps.page.locator('#shipment-tabs [data-tab="dlq"]'))
    steps.click(steps.page.locator('tr[data-shipment="s-1"]').get_by_role("button", name="Restore"))
    expect(steps.page.locator('.row-note[data-note-for="s-1"]')).to_contain_text("restored from the DLQ")


DONE_BY = {
    "make an agent available": make_available,
    "end an agent's call": end_call,
    "end a waiting call whose caller hung up": hung_up,
    "add a caller and assign an agent": add_caller,
    "give a shipment priority 9": priority_nine,
    "send a shipment to the DLQ": to_dlq,
    "restore a shipment from the DLQ": restore,
}


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("job", list(JOBS))
def test_each_job_takes_the_interactions_the_readme_says(page, live_server, local_db, supervisor, job, width):
    steps = Steps(page)
    done = DONE_BY[job](steps)
    next(done)  # what the job needs, then the person starts from the overview
    page.set_viewport_size({"width": width, "height": 844})
    log_in(page, live_server, supervisor)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    with pytest.raises(StopIteration):
        next(done)
    assert steps.count == JOBS[job][0 if width == 1280 else 1]
    assert page.evaluate("document.documentElement.scrollWidth") <= width
