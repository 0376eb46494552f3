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
