"""DynamoDB's wire format: plain Python values to attribute-value maps and back.

Nothing above `ddb` sees `{"S": ...}` maps.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

from queues_app.ddb.numbers import ExactNumber, decimal_of

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()


def marshal(item: dict[str, Any]) -> dict[str, Any]:
    """Python values to DynamoDB's attribute-value maps (None values are dropped)."""
    return {k: _serializer.serialize(_plain(v)) for k, v in item.items() if v is not None}


def unmarshal(item: dict[str, Any] | None) -> dict[str, Any]:
    """DynamoDB's attribute-value maps to Python values (numbers become int or float; a
    float that cannot hold the stored number exactly is an ExactNumber, which does)."""
    if not item:
        return {}
    return {k: _native(_deserializer.deserialize(v)) for k, v in item.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, float):
        return decimal_of(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _native(value: Any) -> Any:
    if isinstance(value, Decimal):
        if value == value.to_integral_value():
            return int(value)
        number = float(value)
        return number if Decimal(repr(number)) == value else ExactNumber(value)
    if isinstance(value, list):
        return [_native(v) for v in value]
    if isinstance(value, set):
        return {_native(v) for v in value}
    if isinstance(value, dict):
        return {k: _native(v) for k, v in value.items()}
    return value


def record_from_item[R](
    record: type[R], item: Mapping[str, Any], *, named: Mapping[str, str] | None = None, **given: Any
) -> R:
    """A record (a dataclass) from a stored item, unmarshalled: each field is the item's
    attribute of its name (or of the name `named` gives it), and keeps its default where
    the item has none or a null; `given` fields are taken as they are (what is derived
    rather than stored). Numbers come back from `unmarshal` as ints already."""
    named = named or {}
    stored = {}
    for field_ in fields(record):  # type: ignore[arg-type]
        value = item.get(named.get(field_.name, field_.name))
        if value is not None:
            stored[field_.name] = value
    return record(**{**stored, **given})
