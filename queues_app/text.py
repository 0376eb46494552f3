"""Text a person types is data, never layout or direction: what a name (or a reason) may
not hold, and how what an earlier version let in is shown.

Refused at input (`hidden_characters`): control characters (line breaks and tabs
included), the Unicode bidirectional controls (embeddings, overrides, isolates and marks)
and other invisible format characters, and line or paragraph separators. A right-to-left
override in a name would reverse the sentence it is shown in ("…by supervisor on the
dashboard" read backwards) and can make one name look like another. Zero-width joiner and
non-joiner stay allowed: they are parts of words in Persian, the Indic scripts and emoji.

Shown: pages put each name, each audit sentence and who made it in `<bdi>` (the `isolate`
template filter), so that a right-to-left name leaves the words around it in their order,
as Unicode's bidirectional algorithm (UAX #9) asks of text inserted into a sentence; and
what an earlier version let in is shown without its embeddings and overrides (`visible`).
"""

from __future__ import annotations

import re
import unicodedata

BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
JOINERS = frozenset("\u200c\u200d")  # parts of words: allowed
# Embeddings and overrides: never in what this version accepts, removed from what an earlier
# one kept before it is shown.
_OVERRIDES = dict.fromkeys(map(ord, "\u202a\u202b\u202c\u202d\u202e"))


def is_hidden(character: str) -> bool:
    if character in JOINERS:
        return False
    return character in BIDI_CONTROLS or unicodedata.category(character) in {"Cc", "Cf", "Zl", "Zp"}


def hidden_characters(text: str) -> list[str]:
    """The characters of `text` a name may not hold, each once, in order, as `U+202E
    RIGHT-TO-LEFT OVERRIDE`."""
    found = dict.fromkeys(ch for ch in text if is_hidden(ch))
    return [f"U+{ord(ch):04X} {unicodedata.name(ch, 'CONTROL CHARACTER')}" for ch in found]


def hidden_problem(text: str) -> str | None:
    """What is wrong with `text` as a name, or None."""
    hidden = hidden_characters(text)
    if not hidden:
        return None
    return f"must not hold invisible or direction-changing characters ({', '.join(hidden)})"


def visible(text: str) -> str:
    """Text an earlier version kept, without the embeddings and overrides it let in."""
    return text.translate(_OVERRIDES)


def counted(number: float, noun: str) -> str:
    """'1 agent', '2 agents', '0 agents': a count with its noun, singular only for one."""
    return f"{number:g} {noun}{'' if number == 1 else 's'}"


# A queue's or a tenant's name: a part of keys and of the figures' labels.
SHORT_NAME_MAX = 64
SHORT_NAME_PATTERN = rf"^[A-Za-z0-9._-]{{1,{SHORT_NAME_MAX}}}$"
SHORT_NAME_PROBLEM = f"1 to {SHORT_NAME_MAX} letters, digits, '.', '_' or '-'"
_SHORT_NAME = re.compile(SHORT_NAME_PATTERN)


def is_short_name(value: object) -> bool:
    return isinstance(value, str) and bool(_SHORT_NAME.fullmatch(value))


NAME_MAX = 100  # a name a person reads (an agent's, a line's, a queue's), and a search for one
VERSION_MAX = 2**53 - 1  # an item's version: the largest whole number JSON clients keep exactly
