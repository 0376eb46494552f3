import time

from queues_app.dynamo.contention import ContentionGauge


def test_it_keeps_the_head_first_when_uncontended():
    gauge = ContentionGauge()
    for _ in range(20):
        assert gauge.order([1, 2, 3, 4])[0] == 1


def test_it_spreads_after_many_lost_races_and_forgets_them_with_time():
    gauge = ContentionGauge(half_life=0.05)
    for _ in range(30):
        gauge.observe(lost=True)
    assert gauge.contended
    firsts = {gauge.order(list(range(10)))[0] for _ in range(50)}
    assert len(firsts) > 1
    time.sleep(0.3)
    assert not gauge.contended
    assert gauge.order([1, 2, 3])[0] == 1


def test_wins_bring_the_level_down():
    gauge = ContentionGauge(half_life=60)
    for _ in range(30):
        gauge.observe(lost=True)
    for _ in range(30):
        gauge.observe(lost=False)
    assert not gauge.contended
