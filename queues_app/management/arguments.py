"""What the project's management commands share about their arguments.

- Checked argument types (`float_range`, `int_range`, `text` and the usual ones built
  from them): a value out of range is refused where argparse reads it, with the option
  and the reason (`argument --rate: expected a number above 0, got '0'`): on the command
  line a usage error (exit 2), from `call_command` a `CommandError`.
- `CheckedCommand`, the commands' base: `--help` shows every option's default and the
  values it accepts, and options given to `call_command` by keyword (which skip
  argparse) get the same checks.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, DjangoHelpFormatter

from queues_app.shipments.records import DEFAULT_QUEUE, SPILLOVER_QUEUE
from queues_app.text import SHORT_NAME_PROBLEM, is_short_name

DAY = 86_400.0
SHIPMENT_QUEUES = (DEFAULT_QUEUE, SPILLOVER_QUEUE)


class Checked:
    """An argparse `type`: converts a value (a string from the command line, or a number
    given to `call_command`) and refuses one that is not what `expects` says."""

    def __init__(self, convert: Callable[[Any], Any], accept: Callable[[Any], bool], expects: str):
        self.convert = convert
        self.accept = accept
        self.expects = expects

    def __call__(self, raw: Any) -> Any:
        try:
            value = self.convert(raw)
        except (TypeError, ValueError):
            value = None
        if value is None or not self.accept(value):
            raise argparse.ArgumentTypeError(f"expected {self.expects}, got {raw!r}")
        return value

    def __repr__(self) -> str:
        return f"<{self.expects}>"


def _to_float(raw: Any) -> float:
    if isinstance(raw, bool):
        raise TypeError("a flag is not a number")
    value = float(raw.strip() if isinstance(raw, str) else raw)
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def _to_int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise TypeError("a flag is not a number")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        if not raw.is_integer():
            raise ValueError("not a whole number")
        return int(raw)
    return int(str(raw).strip(), 10)


def _fmt(number: float) -> str:
    return f"{number:g}"


def float_range(
    low: float | None = None,
    high: float | None = None,
    *,
    above: float | None = None,
    below: float | None = None,
) -> Checked:
    """A finite number, at least `low` (or more than `above`) and at most `high` (or
    less than `below`)."""
    if above is not None:
        expects = f"a number above {_fmt(above)}" + (f" and at most {_fmt(high)}" if high is not None else "")
    elif low is not None:
        expects = (
            f"a number from {_fmt(low)} to {_fmt(high)}" if high is not None else f"a number of at least {_fmt(low)}"
        )
    else:
        expects = f"a number of at most {_fmt(high)}" if high is not None else "a number"
    if below is not None:
        expects += f" {'and ' if above is not None or low is not None else ''}below {_fmt(below)}"

    def accept(value: float) -> bool:
        return (
            (above is None or value > above)
            and (low is None or value >= low)
            and (high is None or value <= high)
            and (below is None or value < below)
        )

    return Checked(_to_float, accept, expects)


def int_range(low: int | None = None, high: int | None = None) -> Checked:
    """A whole number from `low` to `high` (either end open when None)."""
    if low is not None and high is not None:
        expects = f"a whole number from {low} to {high}"
    elif low is not None:
        expects = f"a whole number of at least {low}"
    elif high is not None:
        expects = f"a whole number of at most {high}"
    else:
        expects = "a whole number"
    return Checked(_to_int, lambda value: (low is None or value >= low) and (high is None or value <= high), expects)


def text(max_length: int = 200) -> Checked:
    """A text that is not blank, at most `max_length` characters (surrounding spaces go)."""

    def convert(raw: Any) -> str:
        if not isinstance(raw, str):
            raise TypeError("not a text")
        return raw.strip()

    return Checked(
        convert,
        lambda value: 0 < len(value) <= max_length,
        f"a text that is not blank, at most {max_length} characters",
    )


# The usual ones.
share = float_range(0, 1)  # a share of work the demo handlers fail
positive_int = int_range(1)
non_negative_int = int_range(0)
positive_float = float_range(above=0)
non_negative_float = float_range(0)
interval = float_range(0.1, DAY)  # seconds between passes of a long-running command
age = float_range(0, 3650 * DAY)  # seconds something has been somewhere (ten years at most)


class DefaultsHelpFormatter(DjangoHelpFormatter):
    """Django's help layout, plus what each option accepts and its default."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        help_text = action.help or ""
        if help_text == argparse.SUPPRESS or "%(default)" in help_text:
            return action.help
        notes = []
        if isinstance(action.type, Checked):
            notes.append(action.type.expects)
        default = action.default
        if action.option_strings and default not in (None, False, argparse.SUPPRESS):
            notes.append("default: %(default)s")
        if not notes:
            return action.help
        return f"{help_text} ({'; '.join(notes)})".strip()


class CheckedCommand(BaseCommand):
    """A management command whose options are checked however it is called."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any):
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        return super().create_parser(prog_name, subcommand, **kwargs)

    def execute(self, *args: Any, **options: Any):
        self.check_options(options)
        return super().execute(*args, **options)

    def check_options(self, options: dict[str, Any]) -> None:
        """Apply each option's type and choices to the value given: what argparse did
        already on the command line, and what `call_command(name, rate=0)` skips."""
        parser = self.create_parser("manage.py", self.__module__.rsplit(".", 1)[-1])
        for action in parser._actions:
            if action.dest not in options or not action.option_strings:
                continue
            value = options[action.dest]
            if value is None or value == action.default:
                continue
            name = "/".join(action.option_strings)
            if isinstance(action.type, Checked):
                try:
                    value = [action.type(v) for v in value] if isinstance(value, list) else action.type(value)
                except argparse.ArgumentTypeError as exc:
                    raise CommandError(f"Error: argument {name}: {exc}") from None
                options[action.dest] = value
            if action.choices is not None and value not in action.choices:
                allowed = ", ".join(map(str, action.choices))
                raise CommandError(f"Error: argument {name}: invalid choice: {value!r} (choose from {allowed})")


class BackgroundCommand(CheckedCommand):
    """A process that runs until stopped (the matcher, the workers, the loops). It serves no
    page, so it leaves out Django's system checks (URLs, templates, the admin: half a second
    of each start, before a restarted matcher can take its lease back); `migrate` and
    `collectstatic`, which a deployment runs first, and `check --deploy` run them."""

    requires_system_checks: list[str] = []


# A shipment queue's name, as the API takes it (whether it exists is asked of DynamoDB).
queue_name = Checked(str, is_short_name, f"a queue name: {SHORT_NAME_PROBLEM}")
