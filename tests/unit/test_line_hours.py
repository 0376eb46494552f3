"""A line's hours of operation: ranges of the wall clock per weekday in the centre's time
zone, holidays, ranges past midnight, and the days the clocks change."""

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from queues_app.lines.hours import Hours, HoursError

NY = ZoneInfo("America/New_York")
WEEKDAYS_8_18 = {day: [["08:00", "18:00"]] for day in ("mon", "tue", "wed", "thu", "fri")}


def at(text: str) -> datetime:
    """A wall-clock time in New York, `2026-11-27 08:00` (Friday), as an aware moment."""
    return datetime.fromisoformat(text).replace(tzinfo=NY)


def test_a_line_without_hours_is_always_open():
    hours = Hours.parse(None)
    assert hours.is_open(at("2026-12-25 03:00"), NY)
    assert hours.opens_at(at("2026-12-25 03:00"), NY) == at("2026-12-25 03:00")


@pytest.mark.parametrize(
    "moment, open_now",
    [
        ("2026-11-27 07:59", False),
        ("2026-11-27 08:00", True),  # from the start, included
        ("2026-11-27 17:59", True),
        ("2026-11-27 18:00", False),  # to the end, excluded
        ("2026-11-28 12:00", False),  # Saturday: no ranges
    ],
)
def test_a_range_runs_from_its_start_to_before_its_end(moment, open_now):
    assert Hours.parse(WEEKDAYS_8_18).is_open(at(moment), NY) is open_now


def test_closed_it_says_when_it_opens_next_in_the_centres_zone():
    hours = Hours.parse(WEEKDAYS_8_18, ["2026-11-30"])  # Monday a holiday
    opens = hours.opens_at(at("2026-11-27 19:00"), NY)  # Friday evening
    assert opens == at("2026-12-01 08:00") and opens.tzinfo == NY  # not Saturday, Sunday or the holiday
    assert hours.opens_at(datetime(2026, 11, 27, 14, 0, tzinfo=UTC), NY) == datetime(2026, 11, 27, 14, 0, tzinfo=UTC)


def test_a_range_past_midnight_belongs_to_the_day_it_starts():
    hours = Hours.parse({"fri": [["22:00", "06:00"]]}, ["2026-11-28"])  # Saturday a holiday
    assert not hours.is_open(at("2026-11-27 21:59"), NY)
    assert hours.is_open(at("2026-11-27 23:00"), NY)
    assert hours.is_open(at("2026-11-28 05:59"), NY)  # Friday's night runs into the holiday
    assert not hours.is_open(at("2026-11-28 06:00"), NY)
    assert not hours.is_open(at("2026-11-26 23:00"), NY)  # Thursday has no range


def test_a_holiday_closes_the_ranges_that_start_on_it():
    hours = Hours.parse({"fri": [["22:00", "06:00"]]}, ["2026-11-27"])
    assert not hours.is_open(at("2026-11-27 23:00"), NY)
    assert not hours.is_open(at("2026-11-28 01:00"), NY)
    assert hours.opens_at(at("2026-11-27 23:00"), NY) == at("2026-12-04 22:00")


def test_until_midnight_and_a_whole_day():
    hours = Hours.parse({"sat": [["00:00", "24:00"]], "sun": [["12:00", "24:00"]]})
    assert hours.is_open(at("2026-11-28 00:00"), NY) and hours.is_open(at("2026-11-28 23:59"), NY)
    assert hours.is_open(at("2026-11-29 23:59"), NY) and not hours.is_open(at("2026-11-30 00:00"), NY)


def test_the_wall_clock_keeps_its_hours_across_the_change_to_winter_time():
    """1 Nov 2026 the clocks go back at 02:00: that day is 25 hours long."""
    hours = Hours.parse({"sun": [["08:00", "18:00"]], "sat": [["08:00", "18:00"]]})
    assert hours.is_open(at("2026-11-01 08:00"), NY) and not hours.is_open(at("2026-11-01 07:59"), NY)
    assert hours.opens_at(at("2026-10-31 19:00"), NY) == at("2026-11-01 08:00")
    assert at("2026-11-01 08:00").utcoffset().total_seconds() == -5 * 3600  # 13:00 UTC, not 12:00


def test_a_time_that_happens_twice_means_the_first_and_one_skipped_opens_after_the_gap():
    back = Hours.parse({"sun": [["01:30", "03:00"]]})  # 1 Nov: 01:30 comes twice
    first = datetime(2026, 11, 1, 5, 30, tzinfo=UTC)  # 01:30 EDT
    assert back.opens_at(datetime(2026, 11, 1, 5, 0, tzinfo=UTC), NY).astimezone(UTC) == first
    forward = Hours.parse({"sun": [["02:30", "04:00"]]})  # 8 Mar 2026: 02:00 to 03:00 skipped
    opens = forward.opens_at(datetime(2026, 3, 8, 6, 0, tzinfo=UTC), NY)  # 01:00 EST
    assert opens == datetime(2026, 3, 8, 7, 0, tzinfo=UTC)  # 03:00 EDT, where the gap ends
    assert forward.is_open(datetime(2026, 3, 8, 7, 30, tzinfo=UTC), NY)


def test_a_line_that_never_opens_says_so():
    assert Hours.parse({}).opens_at(at("2026-11-27 12:00"), NY) is None
    mondays_off = [f"2026-11-{d:02d}" for d in (2, 9, 16, 23, 30)]
    assert Hours.parse({"mon": [["08:00", "09:00"]]}, mondays_off).opens_at(at("2026-11-01 12:00"), NY) == at(
        "2026-12-07 08:00"
    )
    a_year_of_mondays = [(date(2026, 11, 2) + timedelta(weeks=n)).isoformat() for n in range(60)]
    assert Hours.parse({"mon": [["08:00", "09:00"]]}, a_year_of_mondays).opens_at(at("2026-11-01 12:00"), NY) is None


def test_hours_round_trip_through_their_written_form():
    written = {
        "hours": {"mon": [["08:00", "12:00"], ["13:00", "24:00"]], "fri": [["22:00", "06:00"]]},
        "holidays": ["2026-12-24", "2026-12-25"],
    }
    hours = Hours.parse(written["hours"], reversed(written["holidays"]))
    assert hours.as_dict() == written
    assert Hours.parse(**hours.as_dict()) == hours
    assert Hours.parse(None).as_dict() == {"hours": None, "holidays": []}


@pytest.mark.parametrize(
    "hours, holidays, field, words",
    [
        ({"monday": [["08:00", "18:00"]]}, [], "hours.monday", "a weekday is one of mon, tue"),
        ({"mon": [["8:00", "18:00"]]}, [], "hours.mon[0]", "HH:MM, not '8:00'"),
        ({"mon": [["08:00", "25:00"]]}, [], "hours.mon[0]", "not a time of day (00:00 to 23:59, or 24:00)"),
        ({"mon": [["24:00", "08:00"]]}, [], "hours.mon[0]", "not a time of day (00:00 to 23:59)"),
        ({"mon": [["08:00", "08:00"]]}, [], "hours.mon[0]", "ends when it starts is empty"),
        ({"mon": ["08:00-18:00"]}, [], "hours.mon[0]", "two times"),
        ({"mon": "08:00"}, [], "hours.mon", "list of ranges"),
        ({"mon": [["08:00", "12:00"], ["11:00", "14:00"]]}, [], "hours.mon[1]", "overlaps hours.mon[0]"),
        ({"mon": [["22:00", "06:00"]], "tue": [["05:00", "09:00"]]}, [], "hours.tue[0]", "overlaps hours.mon[0]"),
        ({"sun": [["22:00", "06:00"]], "mon": [["05:00", "09:00"]]}, [], "hours.mon[0]", "runs past Sunday"),
        (WEEKDAYS_8_18, ["25/12/2026"], "holidays[0]", "YYYY-MM-DD, not '25/12/2026'"),
        (WEEKDAYS_8_18, "2026-12-25", "holidays", "a list of dates"),
        (None, ["2026-12-25"], "holidays", "always open: give its hours too"),
    ],
)
def test_hours_that_cannot_be_kept_are_refused_naming_where(hours, holidays, field, words):
    with pytest.raises(HoursError) as refused:
        Hours.parse(hours, holidays)
    assert refused.value.field == field and words in str(refused.value)
