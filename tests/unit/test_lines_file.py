"""`manage.py lines export` and `lines import`: the lines as a file, round trip, dry run,
a stale file refused whole, a bad one refused naming the place."""

import io

import pytest
from django.core.management import CommandError, call_command

from queues_app.centre.call_center import CallCenter

SUPPORT = {
    "line_id": "support",
    "name": "Support",
    "requires": {"language": "French"},
    "service_level_seconds": 30,
    "hours": {"mon": [["08:00", "18:00"]], "sat": [["22:00", "02:00"]]},
    "holidays": ["2026-12-25"],
    "max_wait_seconds": 600,
    "overflow": {"to_line": "general"},
}


@pytest.fixture
def centre(moto_db):
    center = CallCenter()
    center.lines.put({"line_id": "general", "name": "General"})
    center.lines.put(SUPPORT)
    return center


def run(*args) -> str:
    out = io.StringIO()
    call_command("lines", *args, stdout=out)
    return out.getvalue()


def test_an_exported_file_imports_back_unchanged(centre, tmp_path):
    text = run("export")
    assert "[lines.support]" in text and '[lines.support.requires]\nlanguage = "French"' in text
    path = tmp_path / "lines.toml"
    path.write_text(text)
    told = run("import", str(path))
    assert "unchanged support: version 1" in told and "unchanged general: version 1" in told
    assert "Nothing to change." in told
    assert [line.as_dict() for line in centre.lines.configured()][1]["hours"] == SUPPORT["hours"]


def test_a_dry_run_says_what_changes_and_changes_nothing_then_the_import_does(centre, tmp_path):
    path = tmp_path / "lines.toml"
    path.write_text(run("export").replace("service_level_seconds = 30", "service_level_seconds = 45"))
    told = run("import", str(path), "--dry-run")
    assert "change    support: service_level_seconds (from version 1)" in told and "Dry run" in told
    assert centre.lines.get("support").service_level_seconds == 30
    told = run("import", str(path))
    assert "Applied: 1 line(s)." in told
    changed = centre.lines.get("support")
    assert (changed.service_level_seconds, changed.version) == (45, 2)


def test_a_file_written_before_a_change_is_refused_whole(centre, tmp_path):
    path = tmp_path / "lines.toml"
    path.write_text(run("export").replace('name = "General"', 'name = "Everyone"'))
    centre.lines.put({**SUPPORT, "service_level_seconds": 20, "version": 1})
    with pytest.raises(CommandError, match="support changed since the file was written.*Nothing was changed"):
        run("import", str(path))
    assert centre.lines.get("general").name == "General"


@pytest.mark.parametrize(
    "text, place",
    [
        ("[lines.sales]\nname = 'Sales'\nmax_waiting = 0\n", "lines.sales.max_waiting"),
        ("[lines.sales]\nname = 'Sales'\nhours = { mon = [['9', '17']] }\n", "lines.sales.hours.mon[0]"),
        ("[lines.sales]\nname = 'Sales'\nmax_waiting = 3\noverflow = { to_line = 'nowhere' }\n", "nowhere"),
        ("[lines.Sales]\nname = 'Sales'\n", "lines.Sales.line_id"),
        ("lines = 3\n", "file"),
        ("[lines\n", "not TOML"),
    ],
)
def test_a_bad_file_is_refused_naming_the_place_and_changes_nothing(centre, tmp_path, text, place):
    path = tmp_path / "lines.toml"
    path.write_text(text)
    with pytest.raises(CommandError, match="nothing was changed") as caught:
        run("import", str(path))
    assert place in str(caught.value)
    assert [line.line_id for line in centre.lines.configured()] == ["general", "support"]


def test_a_missing_file_is_a_command_error(centre, tmp_path):
    with pytest.raises(CommandError, match="cannot be read"):
        run("import", str(tmp_path / "nope.toml"))


def test_the_readmes_two_line_centre_imports_as_it_says(moto_db, tmp_path):
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("### Lines", 1)[1].split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "lines.toml"
    path.write_text(block)
    told = run("import", str(path))
    assert "create    general: new line" in told and "create    support: new line" in told
    support = CallCenter().lines.get("support")
    assert support.overflow and support.overflow.to_line == "general" and support.max_wait_seconds == 600
    assert support.hours.as_dict()["hours"]["fri"] == [["08:00", "17:00"]] and support.requires == {
        "language": "French"
    }


def test_a_file_imported_twice_changes_nothing_the_second_time(centre, tmp_path):
    path = tmp_path / "lines.toml"
    path.write_text(run("export").replace("service_level_seconds = 30", "service_level_seconds = 45"))
    assert "Applied: 1 line(s)." in run("import", str(path))
    again = run("import", str(path))
    assert "unchanged support: version 2" in again and "Nothing to change." in again
