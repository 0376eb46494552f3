"""The base every part of `ShipmentQueue` builds on: the table, the clock and the retry
policy, the reads every part needs, and the conditional updates that every change goes
through (each bumps the version and turns a failed condition into a clear conflict)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from queues_app.ddb import batch, errors, replay
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.replay import Done
from queues_app.shipments.named import VISIBILITY_SECONDS, NamedQueues
from queues_app.shipments.records import (
    InvalidTransition,
    ReceiptInvalid,
    RetryPolicy,
    Shipment,
    ShipmentStatus,
    shipment_from_item,
    shipment_to_item,
    timed_sort_key,
)


class ShipmentStore:
    """The shipments table, with `clock` injectable for tests."""

    def __init__(
        self,
        db: Dynamo | None = None,
        *,
        retry: RetryPolicy | None = None,
        clock: Callable[[], datetime] = now,
        candidate_limit: int = 5,
    ):
        self.db = db or default()
        self._retry = retry
        self.clock = clock
        self.candidate_limit = candidate_limit

    @property
    def table_name(self) -> str:
        return self.db.table("shipments")

    def retry_for(self, queue: str) -> RetryPolicy:
        """How shipments of `queue` are retried: the policy this store was given (the
        callbacks' worker's, a benchmark's), or the queue's own settings (shipments/named.py)."""
        if self._retry is not None:
            return self._retry
        configured = NamedQueues(self.db).settings_for(queue)
        return configured.retry if configured else RetryPolicy.from_settings()

    def visibility_for(self, queue: str) -> float:
        """How long a receive of `queue` holds a shipment when the consumer does not say."""
        configured = NamedQueues(self.db).settings_for(queue)
        return float(configured.visibility_timeout_seconds if configured else VISIBILITY_SECONDS)

    # --- reads --------------------------------------------------------------------------

    def get(self, shipment_id: str) -> Shipment:
        key = marshal({"id": shipment_id})
        response = self.db.call("get_item", TableName=self.table_name, Key=key, ConsistentRead=True)
        if "Item" not in response:
            raise errors.NotFound(f"No shipment with id {shipment_id!r}.")
        return shipment_from_item(unmarshal(response["Item"]))

    def get_many(self, shipment_ids: list[str]) -> list[Shipment]:
        """BatchGetItem, in the order asked; unknown ids are skipped."""
        unique = list(dict.fromkeys(shipment_ids))
        items = batch.get_items(self.db, self.table_name, [{"id": i} for i in unique], consistent=True)
        found = {item["id"]: shipment_from_item(item) for item in items}
        return [found[i] for i in shipment_ids if i in found]

    # --- conditional updates ------------------------------------------------------------

    def update(
        self,
        shipment_id: str,
        update: str,
        condition: str,
        values: dict,
        names: dict | None = None,
        *,
        change: str,
    ) -> Shipment:
        """One conditional UpdateItem returning the new shipment, marked with the request
        that made it (`change`, ddb/replay.py: every write of a shipment passes one). A
        failed condition raises Conflict carrying the item as it was, or NotFound when
        there is no such item."""
        update = with_change(update)
        values = {**values, ":change": change}
        params = {}
        used = _used_names({"#st": "status", **(names or {})}, update, condition)
        if used:  # DynamoDB refuses an empty map as well as unused names
            params["ExpressionAttributeNames"] = used
        try:
            response = self.db.call(
                "update_item",
                TableName=self.table_name,
                Key=marshal({"id": shipment_id}),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues=marshal(values),
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **params,
            )
        except errors.Conflict as exc:
            if not exc.current:
                raise errors.NotFound(f"No shipment with id {shipment_id!r}.") from exc
            raise
        return shipment_from_item(unmarshal(response["Attributes"]))

    def change(
        self,
        shipment_id: str,
        action: str,
        update: str,
        values: dict,
        *,
        allowed: str,
        allowed_values: dict | None = None,
        expected_version: int | None = None,
        names: dict | None = None,
        named: tuple = (),
    ) -> Done[Shipment]:
        """An update allowed from some states (`allowed`), and only at `expected_version`
        when given; refused with a conflict that says why. The same request sent again
        (the action, the version and what it `named`) once it took effect is answered as
        done (`replayed`)."""
        seen = () if expected_version is None else (expected_version,)
        change = replay.change_id(action.replace(" ", "-"), *seen, *named)
        condition = f"({allowed})"
        all_values = {**values, **(allowed_values or {}), ":one": 1, ":now": values.get(":now") or to_iso(self.clock())}
        if expected_version is not None:
            condition += " AND version = :v"
            all_values[":v"] = expected_version
        update = update if "updated_at" in update else update.replace("SET ", "SET updated_at = :now, ", 1)
        try:
            return Done(
                self.update(
                    shipment_id,
                    _add_version(update),
                    "attribute_exists(id) AND " + condition,
                    all_values,
                    names,
                    change=change,
                )
            )
        except errors.Conflict as exc:
            if expected_version is not None and replay.made_by(exc.current, change):
                return Done(shipment_from_item(exc.current or {}), replayed=True)
            raise self.stale(shipment_id, action, exc.current, expected_version) from exc

    def to_dlq_update(
        self,
        shipment_id: str,
        reason: str,
        stamp: str,
        *,
        condition: str,
        values: dict,
        failures: list[dict] | None = None,
        receipt_check: tuple[str, str] | None = None,
        conflict_version: int | None = None,
        change: str,
    ) -> Done[Shipment]:
        """Into the DLQ, out of every other index: by a supervisor, after the last failure,
        or when a lease ran out for the last time; answered as done when `change` made it
        already."""
        sets = "#st = :dlq, dlq_at = :now, dlq_reason = :reason, dlq_q = #queue, dlq_sk = :dsk, updated_at = :now"
        all_values = {
            **values,
            ":dlq": ShipmentStatus.IN_DLQ,
            ":now": stamp,
            ":reason": reason[:500],
            ":dsk": timed_sort_key(stamp, shipment_id),
            ":one": 1,
        }
        if failures is not None:
            # The whole history, already capped by the caller: appending would let it grow
            # past its bound with every restore and failure.
            sets += ", failure_reasons = :failures"
            all_values[":failures"] = failures
        try:
            moved = self.update(
                shipment_id,
                f"SET {sets} REMOVE ready_q, ready_sk, invisible_q, invisible_sk, visible_at, receipt ADD version :one",
                condition,
                all_values,
                {"#queue": "queue"},
                change=change,
            )
        except errors.Conflict as exc:
            if replay.made_by(exc.current, change):
                return Done(shipment_from_item(exc.current or {}), replayed=True)
            if receipt_check:
                problem = receipt_problem(exc.current, receipt_check[0]) or "it changed meanwhile"
                raise ReceiptInvalid(
                    f"Cannot {receipt_check[1]} shipment {shipment_id}: {problem}", current=exc.current
                ) from exc
            raise self.stale(shipment_id, "send to the DLQ", exc.current, conflict_version) from exc
        return Done(moved)

    def done_or_stale(self, current: Shipment, action: str, seen_version: int, *named) -> Done[Shipment]:
        """A shipment no longer at the version a request names: made so by that very
        request (answered as done), or changed otherwise (refused, saying how)."""
        if current.change == replay.change_id(action.replace(" ", "-"), seen_version, *named):
            return Done(current, replayed=True)
        raise self.stale(current.shipment_id, action, shipment_to_item(current), seen_version)

    @staticmethod
    def stale(shipment_id: str, action: str, current: dict | None, expected_version: int | None) -> errors.Conflict:
        """The conflict to raise when a change was refused: changed since seen (another
        version), or not allowed from the state it is in."""
        current = current or {}
        state = _state_of(current)
        version = current.get("version")
        now = {"shipment": shipment_from_item(current)} if current else {}
        if expected_version is not None and version != expected_version:
            return errors.Conflict(
                f"Cannot {action} shipment {shipment_id}: it changed since you saw it "
                f"(version {expected_version} -> {version}, now {state}). Reload and try again.",
                current=current,
                now=now,
            )
        return InvalidTransition(f"Cannot {action} shipment {shipment_id}: it is {state}.", current=current, now=now)


def receipt_problem(item: dict | None, receipt: str) -> str | None:
    """Why `receipt` does not hold the shipment `item` (None when it does)."""
    item = item or {}
    status = item.get("status")
    if status == ShipmentStatus.PROCESSING and item.get("receipt") == receipt:
        return None
    if status == ShipmentStatus.PROCESSING:
        return "your lease ran out and another consumer holds it now"
    if status == ShipmentStatus.COMPLETED:
        return "it is completed already"
    if status == ShipmentStatus.IN_DLQ:
        return "it was sent to the DLQ"
    return f"it is {_state_of(item)} now (your lease ran out or it was taken back)"


def with_change(update: str) -> str:
    """The update expression, also setting `change` (an expression has one SET clause)."""
    if update.startswith("SET "):
        return update.replace("SET ", "SET change = :change, ", 1)
    return "SET change = :change " + update


def _add_version(update: str) -> str:
    """Every change bumps the version (an update expression may have one ADD clause)."""
    if " ADD " in update:
        return update.replace(" ADD ", " ADD version :one, ", 1)
    return update + " ADD version :one"


def _used_names(names: dict, *expressions: str) -> dict:
    """DynamoDB refuses placeholders an expression does not use."""
    text = " ".join(expressions)
    return {k: v for k, v in names.items() if k in text}


def _state_of(item: dict) -> str:
    if not item:
        return "gone"
    return shipment_from_item(item).state.replace("_", " ")
