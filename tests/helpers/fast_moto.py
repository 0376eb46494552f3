"""moto's DynamoDB, made cheaper for the unit tests without changing what it answers.

moto deep-copies every item a Query, a Scan or a GetItem returns, every table a
transaction names, and (in `tests/conftest.py`'s `moto_db`) every table of a test's
world; Python's generic deepcopy of its items costs most of a request (each copied
attribute recomputes the size of the whole item, and each copy is recorded in a
process-wide list of moto's models). These copies build the same values directly.
moto also lists its response class's methods on every request; that list never
changes, so it is read once.
"""

from __future__ import annotations

import copy
import functools
from decimal import Decimal
from typing import Any

from moto.core import responses, utils
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict

IMMUTABLE = (str, int, float, bool, bytes, Decimal, type(None))


def _copied(value: Any) -> Any:
    """A deep copy of what moto keeps in an item: DynamoTypes, lists, dicts, scalars.
    (Nothing in an item is shared with another part of it, so no memo is needed.)"""
    kind = type(value)
    if kind is DynamoType:
        return _type_copy(value)
    if kind in IMMUTABLE:
        return value
    if kind is list:
        return [_copied(v) for v in value]
    if kind is dict:
        return {k: _copied(v) for k, v in value.items()}
    return copy.deepcopy(value)


def _type_copy(self: DynamoType, memo: dict[int, Any] | None = None) -> DynamoType:
    new = object.__new__(DynamoType)
    new.__dict__.update(self.__dict__)
    new.value = _copied(self.value)
    return new


def _item_copy(self: Item, memo: dict[int, Any] | None = None) -> Item:
    new = object.__new__(Item)  # not Item.__new__: moto would keep every copy in `Item.instances`
    new.__dict__.update({k: _copied(v) for k, v in self.__dict__.items() if k != "attrs"})
    attrs = LimitedSizeDict.__new__(LimitedSizeDict)
    # dict.update, not LimitedSizeDict's __setitem__: the copy is as large as the item, already checked.
    dict.update(attrs, {key: _copied(value) for key, value in self.attrs.items()})
    new.attrs = attrs
    return new


def install() -> None:
    """Idempotent: patches moto's classes in this process."""
    if getattr(Item, "__deepcopy__", None) is _item_copy:
        return
    DynamoType.__deepcopy__ = _type_copy  # type: ignore[attr-defined]
    Item.__deepcopy__ = _item_copy  # type: ignore[attr-defined]
    responses.method_names_from_class = functools.cache(utils.method_names_from_class)  # type: ignore[assignment]
