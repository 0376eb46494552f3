"""The lines as every host shares them: stored, read back whole, changed only from the
version read, and checked together as they change."""

import pytest

from queues_app.ddb import errors
from queues_app.lines.store import LineStore
from tests.helpers.lines import CENTRE, DIMENSIONS

SUPPORT = {
    "line_id": "support",
    "name": "Support",
    "requires": {"language": "French"},
    "service_level_seconds": 30,
    "service_level_target": 0.9,
    "hours": {"mon": [["08:00", "18:00"]], "fri": [["22:00", "06:00"]]},
    "holidays": ["2026-12-25"],
    "max_wait_seconds": 600,
    "overflow": {"to_line": "general"},
}
GENERAL = {"line_id": "general", "name": "General"}


@pytest.fixture
def lines(moto_db):
    return LineStore(moto_db, dimensions=DIMENSIONS, defaults=CENTRE)


def test_without_lines_the_centre_has_main(lines):
    assert lines.configured() == []
    assert [line.line_id for line in lines.all()] == ["main"]
    assert lines.get("main").service_level_seconds == 20
    with pytest.raises(errors.NotFound, match="No line 'sales'"):
        lines.get("sales")


def test_a_line_is_stored_and_read_back_as_written(lines):
    general = lines.put(GENERAL)
    support = lines.put(SUPPORT)
    assert (general.version, support.version) == (1, 1)
    assert lines.configured() == [general, support]  # by id; main is not added
    assert lines.get("support").as_dict() == {**support.as_dict()}
    assert lines.get("support").hours.as_dict()["hours"] == {"mon": [["08:00", "18:00"]], "fri": [["22:00", "06:00"]]}


def test_a_change_names_the_version_it_was_made_from_and_the_first_of_two_is_kept(lines):
    lines.put(GENERAL)
    first = lines.put({**GENERAL, "name": "General enquiries", "version": 1})
    assert first.version == 2
    with pytest.raises(errors.Conflict, match="changed since version 1: it is at version 2"):
        lines.put({**GENERAL, "name": "Everything else", "version": 1})  # a second tab, from version 1
    assert lines.get("general").name == "General enquiries"
    with pytest.raises(errors.Conflict, match="exists already"):
        lines.put(GENERAL)  # created again
    with pytest.raises(errors.NotFound, match="No line 'sales' to change"):
        lines.put({"line_id": "sales", "name": "Sales", "version": 4})


def test_lines_are_checked_together_as_they_change(lines):
    with pytest.raises(errors.InvalidRequest, match="overflow.to_line: no line 'general'"):
        lines.put(SUPPORT)
    lines.put(GENERAL)
    lines.put(SUPPORT)
    with pytest.raises(errors.InvalidRequest, match="overflows in a circle: general -> support -> general"):
        lines.put({**GENERAL, "max_waiting": 10, "overflow": {"to_line": "support"}, "version": 1})
    assert lines.get("general").overflow is None
