"""The rules of what people and programs may send, each written once: the pages' forms,
the API's schemas and the admin all read them, so that a value is taken or refused
alike wherever it is sent. Plain values and checks: no Django forms, no pydantic.

- an item's id (an agent's, a call's, a shipment's);
- an item's version, as a change names the one it was decided on;
- `then`: where an agent goes once their part in a call ends;
- a caller's preferences: one value of each skill dimension, or any;
- names: an agent's name (and a search for one), a queue's or a tenant's short name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from queues_app.agents.records import AFTER_CALL
from queues_app.agents.skills import SkillCatalog, SkillError, validate_preferences

# A name's length, a version's bound and a queue's or tenant's name are defined in
# queues_app/text.py (the stores below read them too), and are rules of this module.
from queues_app.text import NAME_MAX as NAME_MAX
from queues_app.text import SHORT_NAME_MAX as SHORT_NAME_MAX
from queues_app.text import SHORT_NAME_PATTERN as SHORT_NAME_PATTERN
from queues_app.text import SHORT_NAME_PROBLEM as SHORT_NAME_PROBLEM
from queues_app.text import VERSION_MAX as VERSION_MAX
from queues_app.text import hidden_problem
from queues_app.text import is_short_name as is_short_name

# --- an item's id ------------------------------------------------------------------------

# Ids made here are 12 to 32 characters; 200 leaves room for ids given by imports and
# keeps every key that holds one (`AGENT#<id>`, a queue entry's `<time>#<id>`) well under
# DynamoDB's 1 KB sort key even at 4 bytes a character. No whitespace or control
# character (logs, URLs), and no slash or backslash: an id is a URL segment and the first
# part of a list's `<id>/<version>` selection.
ID_MAX = 200
ID_CHARACTER = r"[^\s/\\\x00-\x1f\x7f]"
ID_PATTERN = rf"^{ID_CHARACTER}+$"  # with the length, as JSON Schema says it
ID_RULE = f"1 to {ID_MAX} characters, without spaces, slashes or control characters"
ID_PROBLEM = f"must be an id: {ID_RULE}"
_ITEM_ID = re.compile(rf"{ID_CHARACTER}{{1,{ID_MAX}}}")


def is_item_id(value: object) -> bool:
    """True for something that can be an agent's, a call's or a shipment's id."""
    return isinstance(value, str) and bool(_ITEM_ID.fullmatch(value))


# --- an item's version -------------------------------------------------------------------

# Versions start at 1 and go up by one a change. The largest is the largest integer every
# JSON reader keeps exactly (I-JSON, RFC 7493: 2**53 - 1, JavaScript's MAX_SAFE_INTEGER),
# far inside a DynamoDB number: a forged value is refused here, not by DynamoDB.
VERSION_MIN = 1
VERSION_RANGE = f"a whole number from {VERSION_MIN} to {VERSION_MAX}"
_DIGITS = re.compile(r"[0-9]{1,16}")  # ASCII digits only: int() takes "٧", "+7" and "7_0" too


def parse_version(text: object) -> int | None:
    """A version sent as text (a form's hidden field, a list's selection), or None when
    it is not one."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        return None
    version = int(text)
    return version if is_version(version) else None


def is_version(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and VERSION_MIN <= value <= VERSION_MAX


# --- then: where an agent goes once their part in a call ends -------------------------------

THEN: dict[str, str] = dict(AFTER_CALL)  # the value sent -> in words
THEN_DEFAULT = "queue"
THEN_PROBLEM = f"must be one of {', '.join(THEN)}"
if TYPE_CHECKING:
    ThenName = str
else:
    ThenName = Literal[tuple(THEN)]  # the API's enum, from the same values


# --- a caller's preferences ------------------------------------------------------------------

ANY_WORD = "any"  # what the pages send for no preference (the API also takes "" and "*")


def preference_problems(catalog: SkillCatalog, preferences: Mapping[str, object]) -> dict[str, str]:
    """Each preference that is not one value of its skill dimension or any, by dimension,
    with what is wrong: every one at once. A dimension left out is any."""
    problems: dict[str, str] = {}
    for name, value in preferences.items():
        if name not in catalog.names:
            problems[str(name)] = f"unknown skill dimension {name!r}; allowed: {', '.join(catalog.names)}"
            continue
        try:
            validate_preferences(catalog, {name: value})
        except SkillError as exc:
            problems[exc.field or name] = exc.message
    return problems


# --- names ------------------------------------------------------------------------------------

NAME_PROBLEM = f"1 to {NAME_MAX} characters"


def text_problem(value: str) -> str | None:
    """What is wrong with text a person typed (a name, a reason), or None: control,
    invisible and direction-changing characters are refused (queues_app/text.py)."""
    return hidden_problem(value)
