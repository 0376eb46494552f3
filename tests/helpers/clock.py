"""Time the test moves by hand."""

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
