"""Where a waiting caller stands: the callers any agent who fits them takes first (by
priority, then arrival, in the partitions every such agent fits), and the estimate from
how fast callers like them were answered lately; on the API and the call's page."""

from datetime import timedelta

from queues_app.centre.call_center import CallCenter
from queues_app.figures import counters
from queues_app.figures.service_level import ServiceLevelReader
from queues_app.routing.standing import ahead_partitions, standing_of
from tests.helpers import figures


def place(router, clock, language, gender=None, priority=0):
    clock.advance(1)
    return router.create_call({"language": language, "gender": gender}, priority=priority)[0]


def test_the_partitions_ahead_are_the_callers_value_or_any(moto_db):
    names = ("language", "gender")
    assert ahead_partitions(names, {"language": "French", "gender": None}) == [("French", "*"), ("*", "*")]
    assert sorted(ahead_partitions(names, {"language": "French", "gender": "F"})) == sorted(
        [("French", "F"), ("French", "*"), ("*", "F"), ("*", "*")]
    )


def test_position_counts_the_callers_every_fitting_agent_takes_first(moto_db, clock):
    router = CallCenter(clock=clock)
    anyone = place(router, clock, None)  # any agent takes them first
    spanish = place(router, clock, "Spanish")  # an agent for French need not speak Spanish
    french_f = place(router, clock, "French", "F")  # a French agent need not be F
    me = place(router, clock, "French")
    urgent = place(router, clock, "French", priority=5)  # later, but served first
    reader = ServiceLevelReader(moto_db, clock)
    assert standing_of(router.line, reader, router.get_call(me.call_id)).position == 3  # anyone, urgent, me
    assert standing_of(router.line, reader, router.get_call(urgent.call_id)).position == 1  # priority first
    # Urgent asked for French: an agent who fits `anyone` need not speak it.
    assert standing_of(router.line, reader, router.get_call(anyone.call_id)).position == 1
    assert standing_of(router.line, reader, router.get_call(spanish.call_id)).position == 2  # anyone
    # Anyone, and urgent (French, any gender: every French F agent fits them, and priority comes first).
    assert standing_of(router.line, reader, router.get_call(french_f.call_id)).position == 3


def test_the_estimate_is_the_position_over_the_recent_answer_rate(moto_db, clock):
    router = CallCenter(clock=clock)
    first = place(router, clock, "French")
    reader = ServiceLevelReader(moto_db, clock)
    standing = standing_of(router.line, reader, router.get_call(first.call_id))
    assert (standing.position, standing.estimated_wait_seconds) == (1, None)  # nobody like them answered yet
    ten_minutes_ago = clock.moment - timedelta(minutes=10)
    for _ in range(9):  # 9 French callers answered over the last ten minutes
        figures.answered(moto_db, 0, {"language": "French", "gender": None}, moment=ten_minutes_ago)
    figures.answered(moto_db, 10, {"language": "Spanish", "gender": None}, moment=clock.moment)  # not like them
    counters.MetricsStore(moto_db).flush()
    second = place(router, clock, "French")
    standing = standing_of(router.line, reader, router.get_call(second.call_id))
    assert standing.position == 2 and standing.answered_recently == 9
    # The rate counts from the first minute with calls (the day may have just begun).
    span = (clock.moment - ten_minutes_ago.replace(second=0, microsecond=0)).total_seconds()
    # One caller ahead at the pace French callers go (9 in the span), then their own turn at
    # the pace any caller is answered (10).
    assert standing.estimated_wait_seconds == round(1 / (9 / span) + 1 / (10 / span), 1)


def test_the_api_and_the_page_show_where_a_caller_stands(moto_db, api, supervisor_client):
    call = api.post("/api/calls", {"preferences": {"language": "French"}}).json()
    read = api.get(f"/api/calls/{call['call_id']}").json()
    assert (read["position"], read["estimated_wait_seconds"]) == (1, None)
    page = supervisor_client.get(f"/calls/{call['call_id']}/").content.decode()
    assert 'data-figure="position">1' in page and "no basis yet" in page
    api.post(f"/api/calls/{call['call_id']}/abandon")
    gone = api.get(f"/api/calls/{call['call_id']}").json()
    assert (gone["position"], gone["estimated_wait_seconds"]) == (None, None)


def test_while_agents_are_busy_the_estimate_goes_at_their_pace_not_the_average_one(moto_db, clock):
    """Answers come at the arrival rate on average, but a caller who waits waits while
    every agent is busy, when they free up faster by 1 / occupancy."""
    from queues_app.figures import service_level

    router = CallCenter(clock=clock)
    reader = ServiceLevelReader(moto_db, clock)
    ten_minutes_ago = clock.moment - timedelta(minutes=10)
    for _ in range(10):
        figures.answered(moto_db, 0, {"language": "French", "gender": None}, moment=ten_minutes_ago)
    counters.MetricsStore(moto_db).flush()
    place(router, clock, "French")
    me = place(router, clock, "French")
    span = (clock.moment - ten_minutes_ago.replace(second=0, microsecond=0)).total_seconds()
    average_pace = round(2 / (10 / span), 1)  # one ahead, then my turn: all answers are French
    assert standing_of(router.line, reader, router.get_call(me.call_id)).estimated_wait_seconds == average_pace

    # 8 of 10 agents busy on average over the window (two samples): 80% of that.
    service_level.sample_occupancy(moto_db, busy=9, staffed=10, moment=ten_minutes_ago)
    service_level.sample_occupancy(moto_db, busy=7, staffed=10, moment=clock.moment)
    counters.MetricsStore(moto_db).flush()
    standing = standing_of(router.line, reader, router.get_call(me.call_id))
    assert standing.estimated_wait_seconds == round(0.8 * 2 / (10 / span), 1)

    # A centre mostly idle says little of the pace of the few agents who fit a caller who
    # waits: never faster than twice the average.
    service_level.sample_occupancy(moto_db, busy=0, staffed=100, moment=clock.moment)
    counters.MetricsStore(moto_db).flush()
    standing = standing_of(router.line, reader, router.get_call(me.call_id))
    assert standing.estimated_wait_seconds == round(0.5 * 2 / (10 / span), 1)


def test_callers_ahead_who_give_up_shorten_the_wait_as_erlang_a_has_it(moto_db, clock):
    """With j callers ahead, the next leaves at the agents' pace plus j times the rate at
    which callers give up: those who gave up over every second callers waited."""
    router = CallCenter(clock=clock)
    reader = ServiceLevelReader(moto_db, clock)
    ten_minutes_ago = clock.moment - timedelta(minutes=10)
    for _ in range(10):
        figures.answered(moto_db, 30, {"language": "French", "gender": None}, moment=ten_minutes_ago)
    figures.abandoned(moto_db, 100, {"language": "Spanish", "gender": None}, moment=ten_minutes_ago)
    figures.abandoned(moto_db, 100, {"language": "Spanish", "gender": None}, moment=ten_minutes_ago)
    counters.MetricsStore(moto_db).flush()
    for _ in range(3):
        place(router, clock, "French")
    me = place(router, clock, "French")
    # The window runs from the minute the first of them entered the line, 100 s before.
    span = (clock.moment - (ten_minutes_ago - timedelta(seconds=100)).replace(second=0, microsecond=0)).total_seconds()
    pace, patience = 10 / span, 2 / (10 * 30 + 2 * 100)  # 2 gave up in 500 s of waiting
    expected = sum(1 / (pace + j * patience) for j in (1, 2, 3)) + 1 / pace
    standing = standing_of(router.line, reader, router.get_call(me.call_id))
    assert standing.position == 4 and standing.estimated_wait_seconds == round(expected, 1)
    assert standing.estimated_wait_seconds < round(4 / pace, 1)  # shorter than nobody giving up
