"""The commands' argument types and their base class: ranges refused with the reason,
the same checks for options given to call_command by keyword, defaults in --help."""

import argparse
import importlib
import io
import pkgutil
import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from queues_app.management import arguments
from queues_app.management import commands as commands_package
from queues_app.management.arguments import Checked, CheckedCommand, float_range, int_range, share, text

# Owned elsewhere and not built on CheckedCommand.
NOT_CHECKED = {"run_local", "create_api_token"}
COMMANDS = sorted(name for _, name, _ in pkgutil.iter_modules(commands_package.__path__) if name not in NOT_CHECKED)


def command(name):
    return importlib.import_module(f"queues_app.management.commands.{name}").Command()


def refused(kind, raw):
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        kind(raw)
    return str(caught.value)


# --- the types ------------------------------------------------------------------------


def test_a_share_is_from_zero_to_one():
    assert share("0") == 0.0 and share("1") == 1.0 and share(" 0.25 ") == 0.25
    assert refused(share, "7") == "expected a number from 0 to 1, got '7'"
    assert "got '-0.1'" in refused(share, "-0.1")
    assert refused(share, "1.0001")


def test_numbers_must_be_finite_and_numbers():
    positive = float_range(above=0)
    assert positive("1e-3") == 0.001
    assert refused(positive, "0") == "expected a number above 0, got '0'"
    for raw in ("nan", "inf", "-inf", "abc", "", "1,5"):
        assert refused(positive, raw).startswith("expected a number above 0")
    assert refused(float_range(above=0, high=10), "11") == "expected a number above 0 and at most 10, got '11'"
    assert refused(float_range(1), "0.5") == "expected a number of at least 1, got '0.5'"


def test_a_share_may_leave_its_upper_end_out():
    # A service level of 1 no number of agents reaches; a shrinkage of 1 leaves no one on the phones.
    target, away = float_range(above=0, below=1), float_range(0, below=1)
    assert target("0.999") == 0.999 and away("0") == 0.0
    assert refused(target, "1") == "expected a number above 0 and below 1, got '1'"
    assert refused(away, "1") == "expected a number of at least 0 and below 1, got '1'"
    assert refused(away, "-0.1").startswith("expected a number of at least 0 and below 1")


def test_whole_numbers_refuse_fractions_and_flags():
    count = int_range(0, 100)
    assert count("42") == 42 and count(" 7 ") == 7 and count(3) == 3 and count(4.0) == 4
    assert refused(count, "1.5") == "expected a whole number from 0 to 100, got '1.5'"
    assert refused(count, 1.5) == "expected a whole number from 0 to 100, got 1.5"
    assert refused(count, "-1") == "expected a whole number from 0 to 100, got '-1'"
    assert refused(count, "101")
    assert refused(count, "1e3")
    assert refused(count, True)  # a flag given where a count belongs
    assert int_range(1)("100000000") == 100000000
    assert refused(int_range(1), "0") == "expected a whole number of at least 1, got '0'"
    assert int_range()("-5") == -5


def test_text_is_stripped_and_not_blank():
    name = text(5)
    assert name("  abc ") == "abc"
    assert refused(name, "   ") == "expected a text that is not blank, at most 5 characters, got '   '"
    assert refused(name, "abcdef")
    assert refused(name, 3)


def test_every_command_is_checked():
    assert COMMANDS  # the listing found them
    for name in COMMANDS:
        assert isinstance(command(name), CheckedCommand), name


# --- --help ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", COMMANDS)
def test_help_shows_every_default_and_range(name):
    parser = command(name).create_parser("manage.py", name)
    shown = " ".join(parser.format_help().split())  # as one line: wrapping cuts anywhere
    for action in parser._actions:
        if not action.option_strings or action.help == argparse.SUPPRESS:
            continue
        if action.default not in (None, False, argparse.SUPPRESS):
            assert f"default: {action.default}" in shown, (name, action.dest)
        if isinstance(action.type, Checked):
            assert action.type.expects in shown, (name, action.dest)


def test_help_of_the_worker_reads_well():
    parser = command("run_shipment_worker").create_parser("manage.py", "run_shipment_worker")
    shown = " ".join(parser.format_help().split())
    assert "share of shipments the demo handler fails (a number from 0 to 1; default: 0.1)" in shown
    assert "--queue QUEUE the queue to consume: live, spillover or a named queue" in shown
    assert "--until-empty stop when nothing is visible --fair" in shown  # flags: no "default: False"


# --- options given by keyword to call_command ------------------------------------------


def test_keyword_options_get_the_same_checks(moto_db):
    with pytest.raises(CommandError, match=r"^Error: argument --rate: expected a number above 0 .*got 0$"):
        call_command("run_task_processor", rate=0)
    with pytest.raises(CommandError, match=r"^No shipment queue 'bogus': the queues are live, spillover\.$"):
        call_command("run_shipment_worker", queue="bogus", until_empty=True)
    with pytest.raises(CommandError, match="argument --fail-share: expected a number from 0 to 1, got 7"):
        call_command("run_shipment_worker", fail_share=7, until_empty=True)


def test_keyword_options_are_converted_like_command_line_ones(moto_db):
    out = io.StringIO()
    # A count given as text, as a script might pass it on.
    call_command("seed_demo", agents="2", shipments=0, tasks=0, callers=0, stdout=out)
    assert "2 agents written" in out.getvalue()


def test_the_usual_types_are_what_they_are_called():
    assert arguments.positive_float("0.5") == 0.5 and refused(arguments.positive_float, "0")
    assert arguments.non_negative_float("0") == 0 and refused(arguments.non_negative_float, "-0.5")
    assert arguments.non_negative_int("0") == 0 and refused(arguments.non_negative_int, "-1")
    assert arguments.positive_int("1") == 1 and refused(arguments.positive_int, "0")
    assert arguments.SHIPMENT_QUEUES == ("live", "spillover")


def test_the_checked_type_shows_what_it_expects():
    assert repr(arguments.interval) == "<a number from 0.1 to 86400>"
    assert re.fullmatch(r"expected .*, got '0'", refused(arguments.positive_int, "0"))
