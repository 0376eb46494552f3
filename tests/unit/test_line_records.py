"""A line's settings, checked once whichever way they arrive: what a line leaves out is
the centre's, every bad value is named, and lines that overflow into each other are
checked together."""

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from queues_app.lines.records import MAIN, Defaults, LineError, check_together, main_line, parse
from tests.helpers.lines import CENTRE, DIMENSIONS

SUPPORT = {
    "line_id": "support",
    "name": "Support",
    "requires": {"language": "French"},
    "service_level_seconds": 30,
    "service_level_target": 0.9,
    "short_abandon_seconds": 5,
    "hours": {"mon": [["08:00", "18:00"]]},
    "holidays": ["2026-12-25"],
    "max_waiting": 50,
    "max_wait_seconds": 600,
    "overflow": {"to_line": "general"},
    "priority_aging_seconds": 60,
    "steps": [{"min_level": {"language": 4}, "seconds": 20}],
    "wrap_up_seconds": 45,
    "callback_retry_seconds": 120,
    "callback_max_attempts": 2,
    "callback_offer_after_seconds": 90,
    "callback_offer_wait_seconds": None,
    "callback_priority": 4,
    "callback_wait_from": "request",
    "version": 3,
}


def line(**changes):
    return parse({**SUPPORT, **changes}, dimensions=DIMENSIONS, defaults=CENTRE)


def test_a_line_reads_back_as_it_was_written():
    support = line()
    assert support.as_dict() == {**SUPPORT, "requires": {"language": "French"}}
    assert parse(support.as_dict(), dimensions=DIMENSIONS, defaults=CENTRE) == support


def test_what_a_line_leaves_out_is_the_centres():
    sales = parse({"line_id": "sales", "name": "Sales"}, dimensions=DIMENSIONS, defaults=CENTRE)
    assert (sales.service_level_seconds, sales.service_level_target) == (20, 0.8)
    assert sales.requires == {} and sales.max_waiting is None and sales.overflow is None
    assert sales.hours.is_open(datetime(2026, 12, 25, 3, tzinfo=UTC), ZoneInfo("UTC"))  # no hours: always open


def test_a_centre_without_lines_has_main_with_todays_settings():
    main = main_line(Defaults(service_level_seconds=15, service_level_target=0.95))
    assert main.line_id == MAIN and main.requires == {} and main.overflow is None
    assert (main.service_level_seconds, main.service_level_target) == (15, 0.95)


@pytest.mark.parametrize(
    "changes, field, words",
    [
        ({"line_id": "Support Line"}, "line_id", "lowercase letters"),
        ({"name": " "}, "name", "1 to 100 characters"),
        ({"name": "Sup\u202eport"}, "name", "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ({"requires": {"planet": "Mars"}}, "requires.planet", "not a skill dimension; they are language, gender"),
        ({"requires": {"language": "Klingon"}}, "requires.language", "allowed: English, French, Spanish"),
        ({"service_level_target": 1}, "service_level_target", "above 0 and below 1"),
        ({"service_level_target": True}, "service_level_target", "above 0 and below 1"),
        ({"service_level_seconds": 20.5}, "service_level_seconds", "a whole number from 0"),
        ({"short_abandon_seconds": 30}, "short_abandon_seconds", "under service_level_seconds"),
        ({"max_waiting": 0}, "max_waiting", "from 1 to 1,000,000, or null"),
        ({"overflow": None}, "overflow", "says where callers go past them"),
        ({"max_waiting": None, "max_wait_seconds": None}, "overflow", "nothing overflows"),
        ({"overflow": {"to_line": "support"}}, "overflow.to_line", "cannot overflow to itself"),
        ({"overflow": {"to_line": "general", "end": "full"}}, "overflow", "either"),
        ({"overflow": {"end": "Too Busy"}}, "overflow.end", "a reason of 1 to 40"),
        ({"hours": {"mon": [["8:00", "18:00"]]}}, "hours.mon[0]", "HH:MM"),
        ({"holidays": ["25/12"]}, "holidays[0]", "YYYY-MM-DD"),
        ({"colour": "red"}, "colour", "not a setting of a line"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(changes, field, words):
    with pytest.raises(LineError) as refused:
        line(**changes)
    assert refused.value.field == field and words in str(refused.value)


def test_lines_are_checked_together_for_their_overflows():
    general = parse({"line_id": "general", "name": "General"}, dimensions=DIMENSIONS, defaults=CENTRE)
    check_together([line(), general])  # support overflows to general: fine
    with pytest.raises(LineError, match="no line 'general'"):
        check_together([line()])
    loop = parse(
        {"line_id": "general", "name": "General", "max_waiting": 5, "overflow": {"to_line": "support"}},
        dimensions=DIMENSIONS,
        defaults=CENTRE,
    )
    with pytest.raises(LineError, match="overflows in a circle: support -> general -> support"):
        check_together([line(), loop])
    with pytest.raises(LineError, match="given twice"):
        check_together([general, general])
