"""Reading a request body as JSON without letting any input reach a 500.

- a body larger than `MAX_BODY_BYTES` (or Django's DATA_UPLOAD_MAX_MEMORY_SIZE, when
  smaller) is refused before it is read (413);
- malformed JSON, or JSON nested deeper than `MAX_DEPTH` levels, is a 400 naming `body`
  (the depth is DynamoDB's own limit on nested attributes, and far below the recursion
  that would fail the parser);
- `NaN`, `Infinity` and integers too long for DynamoDB are read as values (not refused
  here), so that the schema can name the field that holds them;
- a number with a fraction or an exponent is an ExactNumber: a float to the schemas that
  take one, keeping every digit sent for shipment data.
"""

from __future__ import annotations

import json
from decimal import Decimal

from django.conf import settings
from ninja.parser import Parser

from queues_app.ddb.numbers import ExactNumber
from queues_app.http.errors import invalid

MAX_BODY_BYTES = 256 * 1024
MAX_DEPTH = 32


def body_limit() -> int:
    """The largest body the API reads: MAX_BODY_BYTES, or Django's
    DATA_UPLOAD_MAX_MEMORY_SIZE when that is smaller."""
    django_limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return MAX_BODY_BYTES if django_limit is None else min(MAX_BODY_BYTES, django_limit)


# Integers longer than this are kept as Decimal (Python refuses to make an int of more
# than 4300 digits from text); the schema refuses them, naming their field.
_INT_DIGITS = 100


def _parse_int(text: str) -> int | Decimal:
    return int(text) if len(text) <= _INT_DIGITS else Decimal(text)


def _parse_constant(name: str) -> float:
    return float(name)  # NaN, Infinity, -Infinity: refused by the schema, by field


def depth_of(value) -> int:
    """How many objects and arrays deep `value` goes (a scalar is 0), without recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        current, level = stack.pop()
        if isinstance(current, dict):
            children = list(current.values())
        elif isinstance(current, list):
            children = current
        else:
            continue
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children)
    return deepest


def loads(raw: bytes | str):
    """The body as a JSON value; None for an empty (or blank) body; ApiProblem (400) when
    it is not JSON or nests deeper than MAX_DEPTH."""
    if not raw.strip():
        return None
    try:
        value = json.loads(raw, parse_int=_parse_int, parse_float=ExactNumber, parse_constant=_parse_constant)
    except RecursionError as exc:
        raise _too_deep() from exc
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise invalid({"body": f"not valid JSON: {exc}"}, "The request body is not valid JSON.") from exc
    if depth_of(value) > MAX_DEPTH:
        raise _too_deep()
    return value


def _too_deep():
    return invalid(
        {"body": f"nested deeper than {MAX_DEPTH} levels of objects and arrays"},
        f"The request body nests deeper than {MAX_DEPTH} levels.",
    )


class JsonBodyParser(Parser):
    """django-ninja's parser for the API's request bodies."""

    def parse_body(self, request):
        return loads(request.body)
