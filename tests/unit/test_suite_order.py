"""The suite's own order (tests/conftest.py): the longest modules it names exist, so none
is left to start when the other worker is almost done."""

from pathlib import Path

from tests.conftest import LONGEST_FIRST, TESTS_DIR


def test_the_longest_modules_named_first_are_there():
    missing = [name for name in LONGEST_FIRST if not (TESTS_DIR.parent / name).is_file()]
    assert missing == [] and len(LONGEST_FIRST) > 1
    assert all(Path(name).parts[:2] == ("tests", "integration") for name in LONGEST_FIRST)
