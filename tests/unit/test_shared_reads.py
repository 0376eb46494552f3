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
