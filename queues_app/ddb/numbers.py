"""Numbers kept exactly: DynamoDB stores decimals of up to 38 significant digits, a float
holds about 17. A number with a fraction is an `ExactNumber`: a float to the code that
computes with it, carrying the decimal it was sent as or read as, which is what is
stored (`codec`) and what JSON answers write (`ExactJSONEncoder`).
"""

from __future__ import annotations

import json
from decimal import Context, Decimal
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder


class ExactNumber(float):
    """A float that remembers its exact decimal (`.decimal`); `str` and `repr` show it."""

    decimal: Decimal

    def __new__(cls, value: Decimal | str) -> ExactNumber:
        decimal = Decimal(value)
        number = super().__new__(cls, decimal)
        number.decimal = decimal
        return number

    def __repr__(self) -> str:
        return str(self.decimal)

    __str__ = __repr__

    def __reduce__(self):
        return (ExactNumber, (str(self.decimal),))


# DynamoDB's precision; an int of more digits would be written digit by digit, past it.
DIGITS = 38
EXACT = Context(prec=DIGITS)  # Decimal's default context keeps 28 digits


def as_stored(number: Decimal) -> int | ExactNumber:
    """`number` as DynamoDB keeps it and gives it back: without trailing zeros, an int
    when it is whole (a whole number like 9.99E+125 keeps its short form)."""
    if number == number.to_integral_value() and number.adjusted() < DIGITS:
        return int(number)
    return ExactNumber(number.normalize(EXACT))


def decimal_of(value: float) -> Decimal:
    """The decimal a float stands for: its own for an ExactNumber, its shortest repr otherwise."""
    return value.decimal if isinstance(value, ExactNumber) else Decimal(repr(value))


class ExactJSONEncoder(DjangoJSONEncoder):
    """Django's JSON encoder, writing an ExactNumber with every digit it has. (json's C
    encoder writes each float with float.__repr__; its Python encoder takes the function
    that writes them.)"""

    def iterencode(self, o: Any, _one_shot: bool = False):
        markers: dict | None = {} if self.check_circular else None
        encode = json.encoder.encode_basestring_ascii if self.ensure_ascii else json.encoder.encode_basestring
        plain = json.JSONEncoder(allow_nan=self.allow_nan)

        def floatstr(value: float) -> str:
            if isinstance(value, ExactNumber):
                return str(value.decimal)
            return plain.encode(float(value))

        encoder = json.encoder._make_iterencode(  # type: ignore[attr-defined]
            markers,
            self.default,
            encode,
            self.indent,
            floatstr,
            self.key_separator,
            self.item_separator,
            self.sort_keys,
            self.skipkeys,
            _one_shot,
        )
        return encoder(o, 0)
