"""The live figures are read once per period for every viewer: concurrent viewers of a
stale or empty cache make one read between them, the others are served the figures of
the period before (or wait for the read), and a process that finds another's reading
lease does not read too."""

import threading

import pytest
from django.core.cache import cache

from queues_app.monitoring import shared
from tests.helpers.clock import ManualClock

PREFIX = "sf-"


@pytest.fixture
def clock(monkeypatch):
    moment = ManualClock()
    monkeypatch.setattr(shared, "now", moment)
    cache.clear()
    yield moment
    cache.clear()


class SlowRead:
    """A read that holds until released, counting how often it ran."""

    def __init__(self, value: int):
        self.value = value
        self.calls = 0
        self.started = threading.Event()
        self.release = threading.Event()

    def __call__(self) -> dict:
        self.calls += 1
        self.started.set()
        assert self.release.wait(5)
        return {"value": self.value}


def viewers(count: int, read) -> tuple[list[threading.Thread], list[dict]]:
    answers: list[dict] = []

    def view():
        answers.append(shared.cached_panel(PREFIX, "calls", read, 1.5))

    threads = [threading.Thread(target=view) for _ in range(count)]
    return threads, answers


def test_twenty_viewers_of_stale_figures_make_one_read_and_are_served_the_last_ones_meanwhile(clock):
    assert shared.cached_panel(PREFIX, "calls", lambda: {"value": 1}, 1.5) == {"value": 1}
    clock.advance(2)
    read = SlowRead(2)
    first, first_answers = viewers(1, read)
    first[0].start()
    assert read.started.wait(5)
    others, answers = viewers(19, read)
    for thread in others:
        thread.start()
    for thread in others:
        thread.join(5)
    assert answers == [{"value": 1}] * 19  # served at once, not held behind the read
    read.release.set()
    first[0].join(5)
    assert first_answers == [{"value": 2}] and read.calls == 1
    assert shared.cached_panel(PREFIX, "calls", read, 1.5) == {"value": 2} and read.calls == 1


def test_viewers_of_an_empty_cache_wait_for_the_one_read(clock):
    read = SlowRead(7)
    threads, answers = viewers(10, read)
    for thread in threads:
        thread.start()
    assert read.started.wait(5)
    read.release.set()
    for thread in threads:
        thread.join(10)
    assert answers == [{"value": 7}] * 10 and read.calls == 1


def test_another_process_reading_is_not_read_again(clock):
    shared.cached_panel(PREFIX, "calls", lambda: {"value": 1}, 1.5)
    clock.advance(2)
    cache.add(f"panel:{PREFIX}:calls:reading", 1, 10)  # another process holds the lease
    calls = []
    assert shared.cached_panel(PREFIX, "calls", lambda: calls.append(1) or {"value": 2}, 1.5) == {"value": 1}
    assert calls == []


def test_with_nothing_cached_a_viewer_waits_for_the_other_process_then_takes_its_figures(clock):
    cache.add(f"panel:{PREFIX}:calls:reading", 1, 10)
    landed = threading.Timer(0.1, lambda: cache.set(f"panel:{PREFIX}:calls", (clock().timestamp(), {"value": 3}), 30))
    landed.start()
    calls = []
    assert shared.cached_panel(PREFIX, "calls", lambda: calls.append(1) or {"value": 4}, 1.5) == {"value": 3}
    assert calls == []


def test_a_fresh_read_reads_at_once_and_refills_for_everyone(clock):
    shared.cached_panel(PREFIX, "calls", lambda: {"value": 1}, 60)
    assert shared.cached_panel(PREFIX, "calls", lambda: {"value": 2}, 60, fresh=True) == {"value": 2}
    assert shared.cached_panel(PREFIX, "calls", lambda: {"value": 3}, 60) == {"value": 2}


def test_a_failed_read_frees_the_lease_for_the_next_viewer(clock):
    def fails():
        raise RuntimeError("DynamoDB unavailable")

    with pytest.raises(RuntimeError):
        shared.cached_panel(PREFIX, "calls", fails, 1.5)
    assert shared.cached_panel(PREFIX, "calls", lambda: {"value": 5}, 1.5) == {"value": 5}


def test_the_calls_panel_and_the_grid_refreshed_together_share_one_read_of_the_floor(clock, moto_db, settings):
    """The logged-in agents are read once for both panels refreshed at the same moment
    (each its own request and Dashboard), and again a third of the period later; their
    counts are the status index's; a viewer who has just changed something reads the
    floor anew; a capped floor is counted apart."""
    from queues_app.agents.records import AgentStatus
    from queues_app.centre.call_center import CallCenter
    from queues_app.monitoring import overview
    from tests.helpers.api import agent

    settings.SWITCHBOARD_PANEL_CACHE_SECONDS = 1.5
    center = CallCenter()
    made = [
        agent(f"Agent {i}", [language], gender)
        for i, (language, gender) in enumerate([("English", "F"), ("French", "M"), ("English", "X")])
    ]
    for each in made[:2]:
        center.make_available(each.agent_id)
    reads = []
    logged_in = center.agents.logged_in

    def counted(*args, **kwargs):
        reads.append(1)
        return logged_in(*args, **kwargs)

    def dashboard(fresh=False):
        board = overview.Dashboard(center)
        board.agents.logged_in = counted  # this center's roster, shared by every dashboard here
        board.fresh = fresh
        return board

    calls = dashboard().calls_panel()
    grid = dashboard().supply_and_demand()
    assert len(reads) == 1
    expected = center.agents.count_by_status()
    assert {status: (figure.value, figure.capped) for status, figure in calls.agents.items()} == expected
    assert calls.agents[AgentStatus.QUEUED].value == 2 and calls.agents[AgentStatus.OFFLINE].value == 1
    assert sum(cell.agents_queued for cell in grid.cells.values()) == 2

    # Made available in the meantime: the period's floor still says 2, a fresh read says 3.
    center.make_available(made[2].agent_id)
    assert dashboard().calls_panel().agents[AgentStatus.QUEUED].value == 2 and len(reads) == 1
    assert dashboard(fresh=True).calls_panel().agents[AgentStatus.QUEUED].value == 3 and len(reads) == 2
    clock.advance(1.5 * overview.FLOOR_SHARE + 0.01)
    assert dashboard().calls_panel().agents[AgentStatus.QUEUED].value == 3 and len(reads) == 3

    # A dashboard kept for rounds (a live stream's hub, the sampler) reads the floor anew too.
    kept = dashboard()
    assert kept.calls_panel().agents[AgentStatus.QUEUED].value == 3
    center.log_off(made[2].agent_id)
    clock.advance(1.5 * overview.FLOOR_SHARE + 0.01)
    assert kept.calls_panel().agents[AgentStatus.QUEUED].value == 2

    # A floor read that was capped: the panel counts every status on the index instead.
    floor = overview.Floor(center.agents.logged_in()[0][:1], capped=True)
    board = dashboard()
    board.floor = lambda: floor
    counts = {status: (figure.value, figure.capped) for status, figure in board.calls_panel().agents.items()}
    assert counts == center.agents.count_by_status()
