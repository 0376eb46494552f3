"""moto's DynamoDB, made cheaper for the unit tests without changing what it answers.

moto deep-copies every item a Query, a Scan or a GetItem returns, and (in
`tests/conftest.py`'s `moto_db`) every table of a test's world; Python's generic
deepcopy of its items costs most of a request (each copied attribute recomputes the size
of the whole item, and each copy is recorded in a process-wide list of moto's models).
These copies build the same values directly.
moto also lists its response class's methods on every request; that list never
changes, so it is read once; and it draws each request id a character at a time (52
calls of `random.choice`): here it is one call for as many characters. A transaction
deep-copies every table of the account to put them back if it is cancelled (the whole
database, for every TransactWriteItems); here it keeps what it names instead, the items
as they were and each stream's length, and puts those back.
Each `mock_aws()` registers a `requests` mock for every URL of every service moto has
(some two thousand objects, a twentieth of a unit test's time); they are the same every
time, so they are made once and registered again.
"""

from __future__ import annotations

import copy
import functools
import secrets
from decimal import Decimal
from typing import Any

from moto.core import models as core_models
from moto.core import responses, utils
from moto.dynamodb import models
from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
from moto.dynamodb.models.table import Table
from moto.utilities import aws_headers

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


class _Copies:
    """`copy` as moto's backend module sees it: the tables a transaction is about to
    copy (`kept`) are not copied; anything else is, as before."""

    kept: object = None

    @classmethod
    def deepcopy(cls, value: Any, memo: dict[int, Any] | None = None) -> Any:
        return value if value is cls.kept else copy.deepcopy(value, memo)


def _as_they_are(backend: Any, transact_items: list[dict[str, Any]]) -> list[tuple]:
    """What a transaction may change: for each item it names, its table, key and a copy of
    it now (None when absent), and each table's stream length."""
    kept = []
    for entry in transact_items:
        try:
            op_type, op = next(iter(entry.items()))
            table: Table = backend.get_table(op["TableName"])
            key = op["Item"] if op_type == "Put" else op["Key"]
            hash_key = DynamoType(key[table.hash_key_attr])
            range_key = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
        except Exception:  # moto refuses it as it reads it: nothing of it is written
            continue
        now = table.get_item(hash_key, range_key)
        stream = table.stream_shard
        kept.append((table, hash_key, range_key, now and _item_copy(now), stream and len(stream.items)))
    return kept


def _put_back(kept: list[tuple]) -> None:
    for table, hash_key, range_key, item, stream_length in reversed(kept):  # the first seen is the oldest
        if range_key is None:
            table.items.pop(hash_key, None) if item is None else table.items.__setitem__(hash_key, item)
        elif item is None:
            table.items.get(hash_key, {}).pop(range_key, None)
        else:
            table.items[hash_key][range_key] = item
        if stream_length is not None:
            del table.stream_shard.items[stream_length:]


def _transaction(write: Any) -> Any:
    @functools.wraps(write)
    def transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
        kept = _as_they_are(self, transact_items)
        _Copies.kept = self.tables
        try:
            return write(self, transact_items)
        except BaseException:
            _put_back(kept)
            raise
        finally:
            _Copies.kept = None

    transact_write_items.fast = True  # type: ignore[attr-defined]
    return transact_write_items


def _request_id(headers: dict[str, Any] | None = None) -> str:
    request_id = secrets.token_hex(26).upper()
    if isinstance(headers, dict):
        headers["x-amzn-requestid"] = request_id
    return request_id


def install() -> None:
    """Idempotent: patches moto's classes in this process."""
    if getattr(Item, "__deepcopy__", None) is _item_copy:
        return
    models.copy = _Copies  # type: ignore[attr-defined]
    backend = models.DynamoDBBackend
    backend.transact_write_items = _transaction(backend.transact_write_items)  # type: ignore[method-assign]
    DynamoType.__deepcopy__ = _type_copy  # type: ignore[attr-defined]
    Item.__deepcopy__ = _item_copy  # type: ignore[attr-defined]
    aws_headers.gen_amzn_requestid_long = responses.gen_amzn_requestid_long = _request_id  # type: ignore[assignment]
    responses.method_names_from_class = functools.cache(utils.method_names_from_class)  # type: ignore[assignment]
    core_models.CallbackResponse = functools.cache(core_models.CallbackResponse)  # type: ignore[misc]
