"""Queued callbacks: a waiting caller turned into a callback keeps their place; at their
turn an agent is reserved and the phone system told to dial; connected, the call is in
progress; not reached, the agent is freed and the callback tried again after its line's
delay, at its place, up to its line's attempts; a result sent again is answered as it was.
Scheduled callbacks enter their line at their time; a number has one at a time. The
domain's tests run on moto and on DynamoDB Local (`backend_db`)."""

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest

from queues_app.agents.records import AgentStatus
from queues_app.agents.roster import Agents
from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.ddb.clock import now, to_iso
from queues_app.monitoring.invariants import check_once

SKILLS = {"language": ["Spanish"], "gender": ["F"]}
SPANISH_F = {"language": "Spanish", "gender": "F"}
NUMBER = "+33612345678"


class Clock:
    def __init__(self):
        self.moment = now()

    def __call__(self):
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


@pytest.fixture
def centre(backend_db, settings):
    """The call centre on a clock the test moves: each test runs on moto and on DynamoDB Local."""
    settings.CALLBACK_RETRY_SECONDS = 120
    settings.CALLBACK_MAX_ATTEMPTS = 2
    settings.CALLBACK_DIAL_SECONDS = 60
    clock = Clock()
    return CallCenter(clock=clock), clock


def waiting_callback(center, clock):
    """Two callers waiting, the first turned into a callback; then a third arrives."""
    first, _ = center.create_call(SPANISH_F)
    clock.advance(1)
    second, _ = center.create_call(SPANISH_F)
    asked = center.request_callback(first.call_id, NUMBER).call
    clock.advance(1)
    center.create_call(SPANISH_F)
    return asked, second


def test_a_callback_keeps_its_place_and_its_turn_reserves_an_agent(centre):
    center, clock = centre
    asked, second = waiting_callback(center, clock)
    assert asked.state == CallStatus.CALLBACK_WAITING and asked.callback_requested_at
    waiting = [item["call_id"] for item in center.line.everyone()]
    assert waiting[0] == asked.call_id  # ahead of the caller who arrived after it
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    due = center.get_call(asked.call_id)
    assert due.state == CallStatus.CALLBACK_DUE and due.agent_id == ana.agent_id
    assert Agents().get(ana.agent_id).status == AgentStatus.RINGING
    assert due.answer_by == to_iso(clock() + timedelta(seconds=60))  # CALLBACK_DIAL_SECONDS, with offers off
    assert center.get_call(second.call_id).status == CallStatus.WAITING
    assert check_once(center.db).violations == []


def test_asked_again_with_the_same_number_is_replayed_and_another_number_refused(centre):
    center, clock = centre
    asked, _ = waiting_callback(center, clock)
    again = center.request_callback(asked.call_id, NUMBER)
    assert again.replayed and again.call.version == asked.version
    with pytest.raises(errors.Conflict, match="another number"):
        center.request_callback(asked.call_id, "+33698765432")
    with pytest.raises(errors.InvalidRequest, match="E.164"):
        center.request_callback(asked.call_id, "0612345678")


def test_connected_puts_the_call_in_progress_with_the_reserved_agent(centre):
    center, clock = centre
    asked, _ = waiting_callback(center, clock)
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    clock.advance(20)
    reached = center.callback_result(asked.call_id, "connected")
    call = center.get_call(asked.call_id)
    assert call.state == CallStatus.ASSIGNED and call.answered_at and call.agent_id == ana.agent_id
    assert [r["result"] for r in call.callback_results] == ["connected"]
    assert Agents().get(ana.agent_id).status == AgentStatus.ATTENDING
    assert not reached.replayed and center.callback_result(asked.call_id, "connected").replayed
    with pytest.raises(errors.Conflict):
        center.callback_result(asked.call_id, "busy")  # connected already: nobody is reserved
    assert check_once(center.db).violations == []


def test_not_reached_frees_the_agent_and_tries_again_at_its_place_then_fails(centre):
    center, clock = centre
    asked, second = waiting_callback(center, clock)
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    outcome = center.callback_result(asked.call_id, "no_answer")
    call = outcome.call
    assert call.status == CallStatus.CALLBACK_RETRY and call.agent_id is None
    assert call.callback_retry_at and call.legs[-1]["how"] == "no_answer"
    # The agent is free again and takes the next caller in line.
    assert center.get_call(second.call_id).agent_id == ana.agent_id
    assert center.callback_result(asked.call_id, "no_answer").replayed
    assert check_once(center.db).violations == []

    clock.advance(119)
    assert center.enter_due_callbacks() == []  # not due yet
    clock.advance(2)
    (back,) = center.enter_due_callbacks()
    assert back.state == CallStatus.CALLBACK_WAITING
    assert [item["call_id"] for item in center.line.everyone()][0] == asked.call_id  # its place again
    center.release(ana.agent_id, "queue", call_id=second.call_id)  # Ana ends her call: the callback's turn
    due = center.get_call(asked.call_id)
    assert due.state == CallStatus.CALLBACK_DUE and due.agent_id == ana.agent_id

    failed = center.callback_result(asked.call_id, "busy").call
    assert failed.status == CallStatus.CALLBACK_FAILED and failed.ended_at
    assert [r["result"] for r in failed.callback_results] == ["no_answer", "busy"]
    assert Agents().get(ana.agent_id).status != AgentStatus.RINGING
    assert center.enter_due_callbacks() == []
    assert check_once(center.db).violations == []


def test_a_reservation_past_its_time_goes_back_as_a_missed_offer_and_a_late_result_is_refused(centre):
    center, clock = centre
    asked, _ = waiting_callback(center, clock)
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    clock.advance(61)
    (missed,) = center.miss_expired_offers()
    assert missed.call_id == asked.call_id
    assert Agents().get(ana.agent_id).status == AgentStatus.NOT_READY
    assert center.get_call(asked.call_id).state == CallStatus.CALLBACK_WAITING
    with pytest.raises(errors.Conflict, match="back to its place"):
        center.callback_result(asked.call_id, "connected")
    assert check_once(center.db).violations == []


def test_only_a_waiting_caller_can_be_called_back_and_only_a_callback_has_results(centre):
    center, clock = centre
    call, _ = center.create_call(SPANISH_F)
    with pytest.raises(errors.Conflict, match="no callback"):
        center.callback_result(call.call_id, "connected")
    center.abandon(call.call_id)
    with pytest.raises(errors.Conflict, match="only a waiting caller"):
        center.request_callback(call.call_id, NUMBER)


def test_the_line_sets_its_own_retry_delay_and_attempts(centre, settings):
    center, clock = centre
    center.lines.put({"line_id": "main", "name": "Main", "callback_retry_seconds": 30, "callback_max_attempts": 1})
    center.lines.forget()
    call, _ = center.create_call(SPANISH_F, line="main")
    center.request_callback(call.call_id, NUMBER)
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    assert center.callback_result(call.call_id, "failed").call.status == CallStatus.CALLBACK_FAILED  # one attempt


# --- the API, as the phone system speaks it ------------------------------------------------


def test_the_phone_system_turns_a_waiting_call_into_a_callback_and_reports_the_result(api, moto_db, settings):
    settings.ANSWER_TIMEOUT_SECONDS = None
    placed = api.post("/api/calls", {"preferences": SPANISH_F}).json()
    asked = api.post(f"/api/calls/{placed['call_id']}/callback", {"number": NUMBER})
    assert asked.status_code == 200, asked.content
    body = asked.json()
    assert body["status"] == "callback_waiting" and body["callback"]["number"] == NUMBER
    assert body["arrived_at"] == placed["arrived_at"] and body["priority"] == placed["priority"]
    again = api.post(f"/api/calls/{placed['call_id']}/callback", {"number": NUMBER})
    assert again.status_code == 200 and again.headers["Idempotent-Replayed"] == "true"

    ana = Agents().create("Ana", SKILLS)
    CallCenter().make_available(ana.agent_id)
    due = api.get(f"/api/calls/{placed['call_id']}").json()
    assert due["status"] == "callback_due" and due["agent_id"] == ana.agent_id and due["answer_by"]
    reached = api.post(f"/api/calls/{placed['call_id']}/callback-result", {"result": "connected"})
    assert reached.status_code == 200 and reached.json()["status"] == "assigned"
    assert reached.json()["callback"]["attempts"][0]["result"] == "connected"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"number": "0612345678"}, "number"),
        ({"number": "+0612345678"}, "number"),
        ({"number": "+33 6 12 34 56 78"}, "number"),
        ({"number": 33612345678}, "number"),
        ({}, "number"),
    ],
)
def test_a_number_not_in_e164_form_is_refused_naming_it(api, moto_db, body, field):
    placed = api.post("/api/calls", {"preferences": SPANISH_F}).json()
    refused = api.post(f"/api/calls/{placed['call_id']}/callback", body)
    assert refused.status_code == 400, refused.content
    assert field in refused.json()["fields"], refused.json()
    assert api.get(f"/api/calls/{placed['call_id']}").json()["callback"] is None


def test_refusals_are_4xx_with_what_is_wrong(api, moto_db):
    assert api.post("/api/calls/nobody/callback", {"number": NUMBER}).status_code == 404
    placed = api.post("/api/calls", {"preferences": SPANISH_F}).json()
    wrong = api.post(f"/api/calls/{placed['call_id']}/callback-result", {"result": "maybe"})
    assert wrong.status_code == 400 and "result" in wrong.json()["fields"]
    none = api.post(f"/api/calls/{placed['call_id']}/callback-result", {"result": "busy"})
    assert none.status_code == 409 and "no callback" in none.json()["message"]


def test_the_line_says_when_a_callback_is_offered(api, moto_db):
    assert api.put("/api/lines/main", {"name": "Main", "callback_offer_after_seconds": 1}).status_code == 201
    earlier, _ = CallCenter(clock=lambda: now() - timedelta(seconds=5)).create_call(SPANISH_F, line="main")
    placed = api.post("/api/calls", {"preferences": SPANISH_F, "line": "main"}).json()
    assert api.get(f"/api/calls/{earlier.call_id}").json()["callback_offered"] is True  # waited 5 s
    assert api.get(f"/api/calls/{placed['call_id']}").json()["callback_offered"] is False  # not a second yet
    api.post(f"/api/calls/{earlier.call_id}/callback", {"number": NUMBER})
    assert api.get(f"/api/calls/{earlier.call_id}").json()["callback_offered"] is False  # one already
    line = api.get("/api/lines/main").json()
    assert line["callback_offer_after_seconds"] == 1 and line["callback_max_attempts"] is None


# --- scheduled callbacks --------------------------------------------------------------------


def test_a_scheduled_callback_enters_its_line_at_its_time_with_the_lines_priority(centre):
    center, clock = centre
    center.lines.put({"line_id": "main", "name": "Main", "callback_priority": 5})
    center.lines.forget()
    at = clock() + timedelta(hours=2)
    call, created = center.schedule_callback("main", {"language": "Spanish"}, NUMBER, at)
    assert created and call.state == CallStatus.CALLBACK_SCHEDULED and call.arrived_at == to_iso(at)
    assert call.priority == 5 and not list(center.line.everyone())
    assert [c.call_id for c in center.upcoming_callbacks()] == [call.call_id]
    assert check_once(center.db).violations == []
    clock.advance(2 * 3600 - 1)
    assert center.enter_due_callbacks() == []
    clock.advance(2)
    (entered,) = center.enter_due_callbacks()
    assert entered.state == CallStatus.CALLBACK_WAITING and entered.arrived_at == to_iso(at)
    assert center.upcoming_callbacks() == []
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    assert center.get_call(call.call_id).state == CallStatus.CALLBACK_DUE
    assert check_once(center.db).violations == []


def test_a_number_has_one_scheduled_callback_on_a_line_and_a_retry_of_the_request_is_the_same(centre):
    center, clock = centre
    at = clock() + timedelta(hours=1)
    first, created = center.schedule_callback("main", {}, NUMBER, at)
    again, created_again = center.schedule_callback("main", {}, NUMBER, at)
    assert created and not created_again and again.call_id == first.call_id
    with pytest.raises(errors.Conflict, match=first.call_id):
        center.schedule_callback("main", {}, NUMBER, at + timedelta(minutes=30))
    other, _ = center.schedule_callback("main", {}, "+33698765432", at)  # another number
    assert other.call_id != first.call_id
    center.cancel_callback(first.call_id, first.version)
    third, created = center.schedule_callback("main", {}, NUMBER, at + timedelta(minutes=30))  # cancelled: free
    assert created and third.call_id != first.call_id
    with pytest.raises(errors.NotFound):
        center.get_call(first.call_id)


def test_a_scheduled_callback_is_moved_or_cancelled_only_as_read_and_before_its_time(centre):
    center, clock = centre
    at = clock() + timedelta(hours=1)
    call, _ = center.schedule_callback("main", {}, NUMBER, at)
    moved = center.move_callback(call.call_id, call.version, at + timedelta(hours=1)).call
    assert moved.arrived_at == to_iso(at + timedelta(hours=1)) and moved.callback_retry_at == moved.arrived_at
    with pytest.raises(errors.Conflict, match="changed since"):
        center.cancel_callback(call.call_id, call.version)  # the version before the move
    with pytest.raises(errors.InvalidRequest):
        center.move_callback(call.call_id, moved.version, clock() - timedelta(minutes=1))
    clock.advance(2 * 3600 + 1)
    center.enter_due_callbacks()
    with pytest.raises(errors.Conflict, match="only a callback still to come"):
        center.cancel_callback(call.call_id, moved.version + 1)
    assert check_once(center.db).violations == []


@pytest.mark.parametrize(
    ("at", "problem"),
    [
        (lambda m: m - timedelta(minutes=1), "to come"),
        (lambda m: m + timedelta(days=367), "within 366 days"),
        (lambda m: m.replace(tzinfo=None) + timedelta(hours=1), "offset"),
    ],
)
def test_a_time_past_too_far_or_without_offset_is_refused(centre, at, problem):
    center, clock = centre
    with pytest.raises(errors.InvalidRequest, match=problem):
        center.schedule_callback("main", {}, NUMBER, at(clock()))
    with pytest.raises(errors.NotFound):
        center.schedule_callback("nowhere", {}, NUMBER, clock() + timedelta(hours=1))


def test_the_phone_system_schedules_lists_moves_and_cancels_callbacks(api, moto_db):
    at = (now() + timedelta(days=1)).astimezone(ZoneInfo("America/New_York")).replace(microsecond=0)
    body = {"line": "main", "preferences": {"language": "French"}, "number": NUMBER, "at": at.isoformat()}
    made = api.post("/api/callbacks", body)
    assert made.status_code == 201, made.content
    call = made.json()
    assert call["status"] == "callback_scheduled" and call["callback"]["retry_at"] == to_iso(at)
    assert api.post("/api/callbacks", body).headers["Idempotent-Replayed"] == "true"
    duplicate = api.post("/api/callbacks", {**body, "at": (at + timedelta(minutes=5)).isoformat()})
    assert duplicate.status_code == 409 and call["call_id"] in duplicate.json()["message"]
    assert [c["call_id"] for c in api.get("/api/callbacks").json()["callbacks"]] == [call["call_id"]]
    later = (at + timedelta(hours=1)).isoformat()
    moved = api.put(f"/api/callbacks/{call['call_id']}", {"at": later, "version": call_version(call["call_id"])})
    assert moved.status_code == 200, moved.content
    gone = api.delete(f"/api/callbacks/{call['call_id']}?version={call_version(call['call_id'])}")
    assert gone.status_code == 200 and api.get(f"/api/calls/{call['call_id']}").status_code == 404
    for bad, field in (({**body, "at": "2026-12-01T10:00:00"}, "at"), ({**body, "number": "12"}, "number")):
        refused = api.post("/api/callbacks", bad)
        assert refused.status_code == 400 and field in refused.json()["fields"], refused.content


def call_version(call_id: str) -> int:
    return CallCenter().get_call(call_id).version


def test_a_callback_costs_a_read_and_a_transaction_to_ask_and_one_transaction_to_connect(centre):
    """What the phone system's two requests cost DynamoDB (its turn costs what any
    assignment does: the agent's return reads the line's heads)."""
    from queues_app.ddb import meter

    center, clock = centre
    call, _ = center.create_call(SPANISH_F)
    with meter.measure() as asked:
        center.request_callback(call.call_id, NUMBER)
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    with meter.measure() as connected:
        center.callback_result(call.call_id, "connected")
    assert (asked.calls, asked.calls_of("TransactWriteItems")) == (2, 1)
    assert connected.calls <= 4 and connected.calls_of("TransactWriteItems") == 1
    # The call read once (the answer is conditioned on that read), the agent once.
    assert connected.calls_of("GetItem") == 2, connected.snapshot()


def test_a_result_sent_again_during_the_next_attempt_is_not_taken_for_it(centre):
    """The phone system's busy of attempt 1, retried after a timeout, arrives while attempt
    2 is being dialled: answered as it was, and attempt 2's reservation stands."""
    center, clock = centre
    asked, _ = waiting_callback(center, clock)
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    center.callback_result(asked.call_id, "busy", attempt=1)
    clock.advance(121)
    center.enter_due_callbacks()
    bea = Agents().create("Bea", SKILLS)
    center.make_available(bea.agent_id)
    due = center.get_call(asked.call_id)
    assert due.state == CallStatus.CALLBACK_DUE
    again = center.callback_result(asked.call_id, "busy", attempt=1)
    assert again.replayed and center.get_call(asked.call_id).state == CallStatus.CALLBACK_DUE
    with pytest.raises(errors.Conflict, match="reported busy already"):
        center.callback_result(asked.call_id, "connected", attempt=1)
    with pytest.raises(errors.Conflict, match="not under way"):
        center.callback_result(asked.call_id, "connected", attempt=3)
    reached = center.callback_result(asked.call_id, "connected", attempt=2)
    assert reached.call.state == CallStatus.ASSIGNED
    assert center.callback_result(asked.call_id, "connected", attempt=2).replayed


# --- figures -----------------------------------------------------------------------------


def test_callbacks_asked_connected_and_failed_are_counted_in_the_day_the_api_and_metrics(
    centre, api, supervisor_client
):
    from datetime import date

    from queues_app.figures.counters import MetricsStore
    from queues_app.figures.intervals import IntervalReader

    center, clock = centre
    clock.moment = clock.moment.replace(hour=10, minute=0)  # today (UTC), far from midnight and the hour's end
    center.lines.put({"line_id": "main", "name": "Main", "callback_max_attempts": 1})
    center.lines.forget()
    reached, _ = center.create_call(SPANISH_F, line="main")
    failed, _ = center.create_call(SPANISH_F, line="main")
    center.request_callback(reached.call_id, NUMBER)
    center.request_callback(failed.call_id, "+33698765432")
    for name in ("Ana", "Bea"):
        center.make_available(Agents().create(name, SKILLS).agent_id)
    clock.advance(30)
    center.callback_result(reached.call_id, "connected")
    center.callback_result(failed.call_id, "no_answer")  # its line allows one attempt: ended
    MetricsStore(center.db).flush()

    day = IntervalReader(center.db).day(date.fromisoformat(to_iso(clock())[:10]), 60)
    figures = [i.overall.figures for i in day.intervals]
    assert sum(f.callbacks_requested for f in figures) == 2
    assert sum(f.callbacks_connected for f in figures) == 1 and sum(f.callbacks_failed for f in figures) == 1
    connect = [f.average_callback_connect_time for f in figures if f.callbacks_connected]
    assert connect and 29 <= connect[0] <= 31  # from its request to the connection
    assert sum(i.overall.figures.abandoned for i in day.intervals) == 1  # the failed one, unanswered
    rows = api.get(f"/api/reports/intervals?date={to_iso(clock())[:10]}&interval=60").json()["intervals"]
    assert sum(r["callbacks_requested"] for r in rows if r["combination"] == "all") == 2
    metrics = api.get("/metrics").content.decode()
    assert 'switchboard_line_callbacks_connected{line="main"} 1.0' in metrics
    assert 'switchboard_line_callbacks_failed{line="main"} 1.0' in metrics
    page = supervisor_client.get(f"/reports/?date={to_iso(clock())[:10]}").content.decode()
    assert "2 callbacks asked for, 1 connected, 1 not reached" in page
    board = supervisor_client.get("/wallboard/").content.decode()
    shown = 'data-figure="callbacks">1 <small>of 2 connected, 1 not reached'
    assert board.count(shown) == 3  # the total, Spanish · F, line main


@pytest.mark.parametrize(("wait_from", "counted"), [("arrival", 130), ("request", 30)])
def test_a_connected_callbacks_wait_counts_from_where_its_line_says(centre, wait_from, counted):
    from datetime import date

    from queues_app.figures.counters import MetricsStore
    from queues_app.figures.intervals import IntervalReader

    center, clock = centre
    clock.moment = clock.moment.replace(hour=10, minute=0)
    center.lines.put({"line_id": "main", "name": "Main", "callback_wait_from": wait_from})
    center.lines.forget()
    call, _ = center.create_call(SPANISH_F, line="main")
    clock.advance(100)
    center.request_callback(call.call_id, NUMBER)
    center.make_available(Agents().create("Ana", SKILLS).agent_id)
    clock.advance(30)
    center.callback_result(call.call_id, "connected")
    MetricsStore(center.db).flush()
    day = IntervalReader(center.db).day(date.fromisoformat(to_iso(clock())[:10]), 60)
    assert sum(i.overall.figures.wait_sum for i in day.intervals) == pytest.approx(counted, abs=1)
    assert center.get_call(call.call_id).waited_seconds == pytest.approx(130, abs=1)  # the call's own: from arrival


def test_a_result_for_a_reservation_that_ran_out_is_not_taken_for_the_next_agents(centre):
    """The phone system names the agent `call.callback_due` gave it: its late result is
    refused once another agent is reserved, never applied to that reservation."""
    center, clock = centre
    asked, _ = waiting_callback(center, clock)
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    clock.advance(61)
    center.miss_expired_offers()  # Ana's reservation ran out
    bea = Agents().create("Bea", SKILLS)
    center.make_available(bea.agent_id)
    assert center.get_call(asked.call_id).agent_id == bea.agent_id
    with pytest.raises(errors.Conflict, match="reserved now, not that agent: a reservation for them ran out"):
        center.callback_result(asked.call_id, "connected", agent_id=ana.agent_id)
    assert center.get_call(asked.call_id).state == CallStatus.CALLBACK_DUE
    assert center.callback_result(asked.call_id, "connected", agent_id=bea.agent_id).call.agent_id == bea.agent_id


@pytest.mark.parametrize("result", ["connected", "busy"])
def test_a_reservation_running_out_between_the_results_reads_is_not_taken_for_the_next(centre, result, monkeypatch):
    """The result reads the call, then (connected) reads it again to answer, or (busy)
    again after a change of the agent: Ana's reservation running out and Bea reserved in
    between refuses the result, as when it ran out before the first read."""
    center, clock = centre
    asked, _ = waiting_callback(center, clock)
    ana = Agents().create("Ana", SKILLS)
    center.make_available(ana.agent_id)
    as_read = center.get_call(asked.call_id)
    reads = iter([as_read])
    real_get = center.callbacks.calls.get

    def get_then_run_out(call_id):
        stale = next(reads, None)
        if stale is None:
            return real_get(call_id)
        clock.advance(61)
        center.miss_expired_offers()  # between the first read and the next
        center.make_available(Agents().create("Bea", SKILLS).agent_id)
        return stale

    monkeypatch.setattr(center.callbacks.calls, "get", get_then_run_out)
    with pytest.raises(errors.Conflict, match="reserved now, not that agent: a reservation for them ran out"):
        center.callback_result(asked.call_id, result, agent_id=ana.agent_id)
    monkeypatch.undo()
    after = center.get_call(asked.call_id)
    assert after.state == CallStatus.CALLBACK_DUE and after.agent_id != ana.agent_id and not after.callback_results
    assert center.agents.get(after.agent_id).status == AgentStatus.RINGING
