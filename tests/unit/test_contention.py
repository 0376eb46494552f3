import threading
from types import SimpleNamespace

from queues_app.ddb.contention import ContentionGauge
from queues_app.routing import claims as claims_module
from queues_app.routing.claims import Claims
from tests.helpers.clock import Moments


def test_it_keeps_the_head_first_when_uncontended():
    gauge = ContentionGauge()
    for _ in range(20):
        assert gauge.order([1, 2, 3, 4])[0] == 1


def test_it_spreads_after_many_lost_races_and_forgets_them_with_time(moments):
    gauge = ContentionGauge(half_life=0.05)
    for _ in range(30):
        gauge.observe(lost=True)
    assert gauge.contended
    firsts = {gauge.order(list(range(10)))[0] for _ in range(50)}
    assert len(firsts) > 1
    moments.advance(0.3)
    assert not gauge.contended
    assert gauge.order([1, 2, 3])[0] == 1


def test_wins_bring_the_level_down():
    gauge = ContentionGauge(half_life=60)
    for _ in range(30):
        gauge.observe(lost=True)
    for _ in range(30):
        gauge.observe(lost=False)
    assert not gauge.contended


def test_claims_pass_over_entries_held_or_gone():
    claims = Claims()
    assert claims.claim_first(["a", "b", "c"]) == 0
    assert claims.claim_first(["a", "b", "c"]) == 1  # "a" is held by the first claimant
    claims.mark_gone("b")
    claims.release("b")
    claims.release("a")  # tried and not taken: free again
    assert claims.claim_first(["b", "a", "c"]) == 1
    assert claims.is_gone("b") and not claims.claim("b")
    assert claims.claim_first(["a", "b"]) is None


def test_gone_entries_are_forgotten_after_a_while(moments):
    claims = Claims(memory=0.05)
    claims.mark_gone("a")
    assert claims.is_gone("a")
    moments.advance(0.1)
    assert not claims.is_gone("a")
    assert claims.claim("a")


class TimedCondition(threading.Condition):
    """The claims' condition on the test's clock: a wait that no release ends passes its
    whole timeout on `moments` at once. `on_wait`, when set, runs in another thread once
    the next wait has begun (and let go of the lock)."""

    def __init__(self, moments: Moments):
        super().__init__()
        self.moments = moments
        self.on_wait = None

    def wait(self, timeout=None):
        other, self.on_wait = self.on_wait, None
        if other is not None:
            thread = threading.Thread(target=other)
            thread.start()
        # Ended by the other thread's release at once; the bound only turns a release that
        # tells nobody into a timeout instead of a hang.
        if super().wait(10.0 if other is not None else 0):
            return True
        self.moments.advance(timeout)
        return False


def test_waiting_for_held_entries_ends_when_one_is_released(moments, monkeypatch):
    condition = TimedCondition(moments)
    monkeypatch.setattr(claims_module, "threading", SimpleNamespace(Condition=lambda: condition))
    claims = Claims()
    assert claims.claim("a") and claims.claim("b")
    began = moments.value
    condition.on_wait = lambda: claims.release("b")  # another thread's try of "b" ends meanwhile
    assert claims.wait_while_held(["a", "b"], timeout=60)
    assert moments.value == began  # the release ended the wait, not its timeout
    assert not claims.wait_while_held(["a"], timeout=0.05)  # still held: times out
    assert moments.value == began + 0.05
