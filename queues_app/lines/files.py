"""The lines as a reviewable file (`manage.py lines export` / `import`): TOML, one table a
line under `[lines.<line_id>]`, its settings as the API writes them (a setting with no
value left out), its `version` as read. Importing compares the file with the lines
stored and says, line by line, what it would do."""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import tomli_w

from queues_app.lines.records import Defaults, Line, LineError, check_together, parse

HEADER = (
    "# The centre's lines. Change what you need, then check and apply it:\n"
    "#   python manage.py lines import lines.toml --dry-run\n"
    "#   python manage.py lines import lines.toml\n"
    "# A line's version is the one this file was written from: a line changed since is refused.\n\n"
)


def to_toml(lines: Sequence[Line]) -> str:
    written: dict[str, Any] = {}
    for line in lines:
        data = {key: value for key, value in line.as_dict().items() if value not in (None, [], {})}
        data.pop("line_id")
        written[line.line_id] = data
    return HEADER + tomli_w.dumps({"lines": written})


def read_toml(text: str, *, dimensions: Mapping[str, Sequence[str]], defaults: Defaults) -> list[Line]:
    """Every line of a file, each checked, and all of them together; LineError naming the
    place (`lines.support.hours.mon[0]`)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LineError("file", f"not TOML: {exc}") from None
    tables = document.get("lines")
    if not isinstance(tables, dict) or set(document) - {"lines"}:
        raise LineError("file", "the file holds one table, [lines], with a [lines.<line_id>] table each")
    lines = []
    for line_id, data in tables.items():
        if not isinstance(data, dict):
            raise LineError(f"lines.{line_id}", "a table of the line's settings")
        try:
            lines.append(parse({**data, "line_id": line_id}, dimensions=dimensions, defaults=defaults))
        except LineError as exc:
            raise LineError(f"lines.{line_id}.{exc.field}", str(exc).split(": ", 1)[1]) from None
    return lines


@dataclass(frozen=True)
class Step:
    line_id: str
    action: str  # "create", "change", "unchanged", "stale", "left"
    detail: str
    line: Line | None = None  # what to store (create, change)


def plan(wanted: Sequence[Line], stored: Sequence[Line]) -> list[Step]:
    """What importing `wanted` over `stored` does to each line: a line the file has not
    is left as it is; one changed since the file's version is `stale` (nothing is
    applied while any is); the others are created, changed or unchanged."""
    by_id = {line.line_id: line for line in stored}
    check_together([*wanted, *(line for line in stored if line.line_id not in {w.line_id for w in wanted})])
    steps = []
    for line in wanted:
        now = by_id.get(line.line_id)
        if now is None:
            steps.append(Step(line.line_id, "create", "new line", dataclasses.replace(line, version=0)))
        elif _settings(line) == _settings(now):  # as the file says (imported already, maybe)
            steps.append(Step(line.line_id, "unchanged", f"version {now.version}"))
        elif line.version and line.version != now.version:
            detail = f"changed since the file (version {line.version}, now {now.version})"
            steps.append(Step(line.line_id, "stale", detail))
        else:
            changed = sorted(k for k, v in _settings(line).items() if _settings(now).get(k) != v)
            detail = f"{', '.join(changed)} (from version {now.version})"
            steps.append(Step(line.line_id, "change", detail, dataclasses.replace(line, version=now.version)))
    wanted_ids = {line.line_id for line in wanted}
    left = [line.line_id for line in stored if line.line_id not in wanted_ids]
    steps += [Step(line_id, "left", "not in the file: left as it is") for line_id in left]
    return steps


def _settings(line: Line) -> dict[str, Any]:
    data = line.as_dict()
    data.pop("version")
    return data
