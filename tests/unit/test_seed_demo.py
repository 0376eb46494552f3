import io
import sys
from collections import Counter

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.agents.roster import Agents
from queues_app.ddb.clock import from_iso, now
from queues_app.management.commands.seed_demo import (
    CARRIERS,
    DLQ_REASONS,
    SPECIAL_CAP,
    shipment_plan,
)
from queues_app.monitoring import invariants
from queues_app.shipments import invariants as shipments_invariants
from queues_app.shipments.queue import ShipmentQueue, ShipmentState, shipment_from_item


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
        assert len(agent.skills["language"]) in (1, 2, 3)
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


# --- shipments ------------------------------------------------------------------------


def all_shipments(db):
    return [shipment_from_item(item) for item in shipments_invariants.read_shipments(db)]


def test_seed_writes_demo_shipments_in_a_mix_of_states(moto_db):

    out = io.StringIO()
    call_command("seed_demo", agents=0, shipments=30, seed=3, stdout=out)
    assert (
        "Demo data: 30 shipments written (17 queued, 2 under construction, 2 ready, 1 delayed, "
        "3 in flight, 2 in the DLQ, 3 completed)."
    ) in out.getvalue()
    shipments = all_shipments(moto_db)
    assert len(shipments) == len({s.shipment_id for s in shipments}) == 30
    assert Counter(s.state for s in shipments) == {
        ShipmentState.QUEUED: 17,
        ShipmentState.UNDER_CONSTRUCTION: 2,
        ShipmentState.READY: 2,
        ShipmentState.DELAYED: 1,
        ShipmentState.PROCESSING: 3,
        ShipmentState.IN_DLQ: 2,
        ShipmentState.COMPLETED: 3,
    }
    for shipment in shipments:
        data = shipment.data
        assert data["recipient"] and data["city"] and data["carrier"] in CARRIERS
        assert len(data["items"]) in (1, 2, 3)
        assert all(item["sku"] and item["quantity"] >= 1 for item in data["items"])
    assert len({s.priority for s in shipments if s.state == ShipmentState.QUEUED}) > 2
    for shipment in shipments:
        if shipment.state == ShipmentState.PROCESSING:
            assert (from_iso(shipment.visible_at) - now()).total_seconds() > 3600
        if shipment.state == ShipmentState.IN_DLQ:
            assert shipment.dlq_reason in DLQ_REASONS
            assert shipment.failure_reasons[0]["reason"] == shipment.dlq_reason
    counts = ShipmentQueue(moto_db).counts()
    assert (counts.queued, counts.in_flight, counts.delayed, counts.dlq) == (17, 3, 1, 2)
    report = invariants.check(moto_db, passes=1)
    assert report.violations == []
    assert report.counts["shipments"] == 30


def test_seed_if_empty_considers_each_kind(moto_db):
    call_command("seed_demo", agents=0, shipments=5, stdout=io.StringIO())
    out = io.StringIO()
    call_command("seed_demo", agents=4, shipments=10, if_empty=True, stdout=out)
    assert "4 agents written" in out.getvalue()
    assert "Demo data: shipments exist already, nothing loaded." in out.getvalue()
    assert len(all_shipments(moto_db)) == 5

    out = io.StringIO()
    call_command("seed_demo", agents=4, shipments=10, if_empty=True, stdout=out)
    assert "agents exist already, nothing loaded" in out.getvalue()
    assert len(all_agents()) == 4 and len(all_shipments(moto_db)) == 5


def test_seed_if_empty_writes_shipments_when_only_agents_exist(moto_db):
    call_command("seed_demo", agents=3, shipments=0, stdout=io.StringIO())
    assert all_shipments(moto_db) == []
    out = io.StringIO()
    call_command("seed_demo", agents=3, shipments=12, if_empty=True, stdout=out)
    assert "agents exist already, nothing loaded" in out.getvalue()
    assert "12 shipments written" in out.getvalue()
    assert len(all_agents()) == 3 and len(all_shipments(moto_db)) == 12


def test_a_queue_with_work_in_it_gets_every_state_and_its_work_is_left_alone(moto_db):
    # No receive takes part in seeding, so other work in the queue is never touched and
    # every state is written all the same.
    queue = ShipmentQueue(moto_db)
    queue.create({"to": "Oslo"}, shipment_id="real-work", priority=9, ready=True)
    queue.enqueue("real-work")
    before = queue.get("real-work")
    out = io.StringIO()
    call_command("seed_demo", agents=0, shipments=30, seed=1, stdout=out)
    assert (
        "30 shipments written (17 queued, 2 under construction, 2 ready, 1 delayed, 3 in flight, 2 in the DLQ, "
        "3 completed)"
    ) in out.getvalue()
    assert queue.get("real-work") == before
    assert len(all_shipments(moto_db)) == 31
    assert invariants.check(moto_db, passes=1).violations == []


def test_shipment_progress_bar_and_plan_for_large_counts(moto_db):

    out = io.StringIO()
    call_command("seed_demo", agents=0, shipments=60, progress=True, stdout=out)
    assert "shipments  [" + "#" * 30 + "] 60/60" in out.getvalue()
    plan = shipment_plan(100_000)
    assert sum(plan.values()) == 100_000
    assert all(n == SPECIAL_CAP for kind, n in plan.items() if kind != "queued")
    assert shipment_plan(0) == {kind: 0 for kind in plan}


def test_negative_counts_are_refused(moto_db):
    with pytest.raises(CommandError, match="--shipments"):
        call_command("seed_demo", shipments=-1, stdout=io.StringIO())


def test_seed_writes_tasks_in_every_status(moto_db):
    from queues_app.tasks.queue import TaskQueue, TaskStatus

    out = io.StringIO()
    call_command("seed_demo", agents=0, shipments=0, tasks=50, seed=3, stdout=out)
    assert "50 tasks written" in out.getvalue()
    queue = TaskQueue()
    counts = {status: queue.count(status)[0] for status in TaskStatus.ALL}
    assert sum(counts.values()) == 50
    assert counts[TaskStatus.PENDING] == 40
    assert counts[TaskStatus.SUCCESS] + counts[TaskStatus.FAILURE] + counts[TaskStatus.TAKEN] == 10
    again = io.StringIO()
    call_command("seed_demo", agents=0, shipments=0, tasks=50, if_empty=True, stdout=again)
    assert "tasks exist already" in again.getvalue()


def test_tasks_are_written_in_their_final_states_without_transitions(moto_db, monkeypatch):
    # A processor running meanwhile takes the newest pending tasks: the seed must not
    # move any task itself (it used to take and finish the newest, and collided).
    from queues_app.ddb.clock import from_iso
    from queues_app.tasks.queue import TaskQueue, TaskStatus

    def no_transition(*args, **kwargs):
        raise AssertionError("the seed moved a task from one status to another")

    monkeypatch.setattr(TaskQueue, "_transition", no_transition)
    monkeypatch.setattr(ShipmentQueue, "receive", no_transition)
    out = io.StringIO()
    call_command("seed_demo", agents=0, shipments=30, tasks=100, seed=4, stdout=out)
    assert "Demo data: 100 tasks written (" in out.getvalue()
    queue = TaskQueue()
    tasks = {status: list(queue.each(status)) for status in TaskStatus.ALL}
    moved_on = tasks[TaskStatus.TAKEN] + tasks[TaskStatus.SUCCESS] + tasks[TaskStatus.FAILURE]
    assert len(moved_on) == 20 and len(tasks[TaskStatus.PENDING]) == 80
    assert tasks[TaskStatus.TAKEN] and tasks[TaskStatus.SUCCESS]
    # the newest ones moved on, as a LIFO processor would have taken them
    assert min(t.created for t in moved_on) > max(t.created for t in tasks[TaskStatus.PENDING])
    for task in moved_on:
        assert task.attempts == 1 and from_iso(task.taken_at) >= from_iso(task.created)
    for task in tasks[TaskStatus.TAKEN]:
        assert task.finished_at is None
    for task in tasks[TaskStatus.SUCCESS] + tasks[TaskStatus.FAILURE]:
        finished = from_iso(task.finished_at)
        assert finished >= from_iso(task.taken_at) and task.result == "demo"
        assert task.expires_at == int(finished.timestamp() + queue.expiry.finished_seconds)
    for task in tasks[TaskStatus.PENDING]:
        assert task.taken_at is None and task.attempts == 0


def test_an_agent_made_available_meanwhile_by_someone_else_is_a_shortfall(moto_db, monkeypatch):
    from queues_app.agents.availability import Availability

    original, raced = Availability.make_available, []

    def someone_was_quicker(self, agent_id, **named):
        if not raced:
            raced.append(agent_id)
            original(self, agent_id)  # the dashboard, a moment before the seed
        return original(self, agent_id, **named)

    monkeypatch.setattr(Availability, "make_available", someone_was_quicker)
    out = io.StringIO()
    with pytest.raises(
        CommandError, match=r"^Demo data incomplete: 1 of 4 agents not made available \(.* is already queued\.\)\.$"
    ):
        call_command("seed_demo", agents=4, callers=0, available=4, shipments=3, tasks=3, stdout=out)
    assert "Demo data: 3 agents made available" in out.getvalue()
    assert "3 shipments written" in out.getvalue()  # the rest was still loaded
    assert len([a for a in all_agents() if a.status == "queued"]) == 4


@pytest.mark.parametrize("command", ["seed_demo", "demo_load"])
def test_without_the_demo_extra_the_demo_commands_name_it(command, monkeypatch):
    monkeypatch.setitem(sys.modules, "faker", None)  # as when Faker is not installed: importing it fails
    with pytest.raises(CommandError, match=r"pip install 'switchboard\[demo\]'"):
        call_command(command, "--seed", "1", stdout=io.StringIO())


def test_with_offers_on_the_seeded_calls_are_picked_up_not_left_to_ring_out(moto_db, settings):
    settings.ANSWER_TIMEOUT_SECONDS = 15
    call_command("seed_demo", agents=8, callers=6, available=8, shipments=0, tasks=0, seed=4, stdout=io.StringIO())
    statuses = Counter(agent.status for agent in Agents().list(limit=50).items)
    assert statuses["attending"] >= 1 and statuses["ringing"] == 0
    assert invariants.check_once(moto_db).ok
