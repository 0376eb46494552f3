"""Time the test moves by hand: a wall clock (`ManualClock`, the fixture `clock`) and a
monotonic one (`Moments`, the fixture `moments` of tests/unit/conftest.py)."""

from datetime import timedelta


class ManualClock:
    """A clock the test moves by hand; each reading is a microsecond later than the last,
    so that timestamps written one after the other still sort in order."""

    def __init__(self):
        from queues_app.ddb.clock import now

        self.moment = now()

    def __call__(self):
        self.moment += timedelta(microseconds=1)
        return self.moment

    def advance(self, seconds):
        self.moment += timedelta(seconds=seconds)


class Moments:
    """Monotonic seconds that only move when the test says so, from the moment it began
    (so that what the process noted earlier on the real clock lies in the past)."""

    def __init__(self):
        import time

        self.value = time.monotonic()

    def monotonic(self):
        return self.value

    def advance(self, seconds):
        self.value += seconds
