"""The Callbacks page: callbacks to come, soonest first, on the centre's clock; a
supervisor schedules one, moves or cancels one still to come; a time the clocks skip is
refused; and each enters its line at its moment, across a change of daylight saving."""

from datetime import UTC, datetime

import pytest
from django.urls import reverse

from queues_app.calls.records import CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.clock import to_iso

NUMBER = "+33611115678"


@pytest.fixture
def new_york(settings):
    settings.TIME_ZONE = "America/New_York"


def schedule(client, at: str, number: str = NUMBER):
    return client.post(reverse("callback-schedule"), {"line": "main", "number": number, "at": at}, follow=True)


def move(client, call, at: str):
    return client.post(reverse("callback-move", args=[call.call_id]), {"at": at, "version": call.version}, follow=True)


def test_a_supervisor_schedules_moves_and_cancels_on_the_centres_clock(supervisor_client, moto_db, new_york):
    made = schedule(supervisor_client, "2027-03-13T09:00").content.decode()  # Saturday, before clocks go forward
    assert "Callback scheduled on main" in made
    schedule(supervisor_client, "2027-03-15T09:00", "+33698765432")  # Monday, after
    first, second = CallCenter().upcoming_callbacks()
    assert first.callback_retry_at == "2027-03-13T14:00:00.000000Z"  # EST, UTC-5
    assert second.callback_retry_at == "2027-03-15T13:00:00.000000Z"  # EDT, UTC-4
    page = supervisor_client.get(reverse("callbacks")).content.decode()
    assert page.index(first.call_id) < page.index(second.call_id)
    assert 'value="2027-03-15T09:00"' in page and "…5678" in page and NUMBER not in page

    moved = move(supervisor_client, second, "2027-03-15T10:30")
    assert f"Callback {second.call_id} moved." in moved.content.decode()
    assert CallCenter().get_call(second.call_id).callback_retry_at == "2027-03-15T14:30:00.000000Z"
    stale = move(supervisor_client, second, "2027-03-15T11:00")
    assert "changed since you read it" in stale.content.decode()
    supervisor_client.post(
        reverse("callback-cancel", args=[first.call_id]), {"version": first.version, "confirmed": "1"}, follow=True
    )
    assert [c.call_id for c in CallCenter().upcoming_callbacks()] == [second.call_id]


@pytest.mark.parametrize(
    ("at", "words"),
    [
        ("2027-03-14T02:30", "does not exist in America/New_York"),  # the hour the clocks skip
        ("tomorrow", "a date and time"),
        ("2020-01-01T10:00", "a time to come"),
    ],
)
def test_a_time_that_cannot_be_is_refused_on_the_page(supervisor_client, moto_db, new_york, at, words):
    page = schedule(supervisor_client, at).content.decode()
    assert words in page and CallCenter().upcoming_callbacks() == []


def test_a_bad_number_is_refused(supervisor_client, moto_db):
    assert "E.164" in schedule(supervisor_client, "2027-03-13T09:00", "0612345678").content.decode()


def test_a_viewer_sees_the_callbacks_and_cannot_schedule(viewer_client, moto_db):
    refused = viewer_client.post(
        reverse("callback-schedule"), {"line": "main", "number": NUMBER, "at": "2027-03-13T09"}
    )
    assert refused.status_code == 403
    assert "supervisors schedule them" in viewer_client.get(reverse("callbacks")).content.decode()


def test_each_enters_its_line_at_its_moment_across_the_change(supervisor_client, backend_db, new_york):
    schedule(supervisor_client, "2027-03-13T09:00")
    schedule(supervisor_client, "2027-03-15T09:00", "+33698765432")
    first, second = CallCenter().upcoming_callbacks()

    def at(stamp: str) -> CallCenter:
        return CallCenter(clock=lambda: datetime.fromisoformat(stamp).replace(tzinfo=UTC))

    assert at("2027-03-13T13:59:59").enter_due_callbacks() == []  # 08:59:59 EST
    assert [c.call_id for c in at("2027-03-13T14:00:01").enter_due_callbacks()] == [first.call_id]
    assert at("2027-03-15T12:59:59").enter_due_callbacks() == []  # 08:59:59 EDT: not an hour early
    (entered,) = at("2027-03-15T13:00:01").enter_due_callbacks()
    assert entered.call_id == second.call_id and entered.state == CallStatus.CALLBACK_WAITING
    assert entered.arrived_at == to_iso(datetime(2027, 3, 15, 13, tzinfo=UTC))


def test_a_callback_being_dialled_reads_as_itself_on_the_calls_page(supervisor_client, moto_db):
    from queues_app.agents.roster import Agents

    center = CallCenter()
    call, _ = center.create_call({"language": "Spanish", "gender": "F"})
    center.request_callback(call.call_id, NUMBER)
    center.make_available(Agents().create("Ana", {"language": ["Spanish"], "gender": ["F"]}).agent_id)
    page = supervisor_client.get(reverse("calls")).content.decode()
    ringing = page.split('id="ringing"')[1].split("</section>")[0]
    assert call.call_id in ringing and "Callback due" in ringing and ">Offered<" not in ringing
