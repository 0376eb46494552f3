"""What consumers do: receive a shipment with a visibility timeout (dead-lettering work
whose lease ran out for the last time), heartbeat, complete, fail with a backoff, give
it back, or dequeue at most once.

How a receive stays at three requests is explained in
docs/architecture.md.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from queues_app.ddb import errors, replay
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.contention import ContentionGauge
from queues_app.ddb.replay import Done
from queues_app.ddb.tables import SHIPMENTS_INVISIBLE, SHIPMENTS_READY
from queues_app.figures import counters
from queues_app.shipments.records import (
    DEFAULT_QUEUE,
    Receipt,
    ReceiptInvalid,
    Shipment,
    ShipmentStatus,
    ready_sort_key,
    shipment_from_item,
    shipment_to_item,
    timed_sort_key,
)
from queues_app.shipments.store import ShipmentStore, receipt_problem

MAX_FAILURE_REASONS = 10
CLAIM_ROUNDS = 3  # reads of `ready` in one receive when other consumers take every entry read
_contention = ContentionGauge()


def reset_contention() -> None:
    """Start afresh, as a process with no recent races (benchmarks measuring a lone consumer)."""
    _contention.reset()


class Consuming:
    def __init__(self, store: ShipmentStore):
        self.store = store

    def receive(self, queue: str = DEFAULT_QUEUE, *, visibility_timeout: float | None = None) -> Receipt | None:
        """Receive one shipment for `visibility_timeout` seconds (the queue's own when left
        out), or None when nothing is visible. At most three requests when uncontended."""
        if visibility_timeout is None:
            visibility_timeout = self.store.visibility_for(queue)
        moment = self.store.clock()
        stamp = to_iso(moment)
        due = self.store.db.call(
            "query",
            TableName=self.store.table_name,
            IndexName=SHIPMENTS_INVISIBLE.name,
            Limit=self.store.candidate_limit,
            KeyConditionExpression="invisible_q = :q AND invisible_sk < :now",
            ExpressionAttributeValues={":q": {"S": queue}, ":now": {"S": stamp}},
        ).get("Items", [])
        for raw in due:
            entry = unmarshal(raw)
            # The queue's retry policy is read only for a lease that ran out.
            expired = entry.get("status") == ShipmentStatus.PROCESSING
            if expired and int(entry.get("attempts", 0)) >= (limit := self.store.retry_for(queue).max_receives):
                self._dead_letter_expired(entry, stamp, limit)
                continue
            receipt = self._claim(
                entry["id"],
                "invisible_sk",
                entry["invisible_sk"],
                moment,
                visibility_timeout,
                expired_lease=entry.get("status") == ShipmentStatus.PROCESSING,
            )
            if receipt:
                return receipt
        for _round in range(CLAIM_ROUNDS):
            ready = self._ready_head(queue)
            if not ready:
                return None
            for entry in _contention.order(ready):
                receipt = self._claim(entry["id"], "ready_sk", entry["ready_sk"], moment, visibility_timeout)
                _contention.observe(lost=receipt is None)
                if receipt:
                    return receipt
            # Every entry read was taken by other consumers meanwhile: the queue is not
            # empty, so read its head again rather than report nothing visible.
        return None

    def _claim(
        self,
        shipment_id: str,
        seen_attr: str,
        seen: str,
        moment: datetime,
        timeout: float,
        *,
        expired_lease: bool = False,
        final: bool = False,
    ) -> Receipt | None:
        deadline = moment + timedelta(seconds=timeout)
        receipt = uuid.uuid4().hex
        sets, removes, values = _claim_update(shipment_id, to_iso(moment), to_iso(deadline), receipt, final=final)
        values.update({":seen": seen, ":expired": 1 if expired_lease else 0})
        try:
            response = self.store.db.call(
                "update_item",
                TableName=self.store.table_name,
                Key=marshal({"id": shipment_id}),
                UpdateExpression=f"SET {', '.join(sets)} REMOVE {', '.join(removes)} "
                "ADD version :one, receive_count :one, attempts :one, lease_expirations :expired",
                ConditionExpression=f"{seen_attr} = :seen",
                ExpressionAttributeNames={"#st": "status", **({} if final else {"#queue": "queue"})},
                ExpressionAttributeValues=marshal(values),
                ReturnValues="ALL_NEW",
            )
        except errors.Conflict:
            return None  # another consumer took it, or it moved: try the next one
        shipment = shipment_from_item(unmarshal(response["Attributes"]))
        if expired_lease:
            counters.note(self.store.db, shipment.queue, "expired_leases")
        first_enqueued = from_iso(shipment.first_enqueued_at)
        if shipment.receive_count == 1 and first_enqueued:
            # Age at the first attempt only: retries would hide how long new work waits.
            counters.note_first_attempt(self.store.db, shipment.queue, (moment - first_enqueued).total_seconds())
        return Receipt(shipment, receipt if not final else "", deadline)

    def _dead_letter_expired(self, entry: dict, stamp: str, max_receives: int) -> None:
        reason = f"lease expired after {entry.get('attempts')} receives (maximum {max_receives})"
        try:
            self.store.to_dlq_update(
                entry["id"],
                reason,
                stamp,
                condition="invisible_sk = :seen",
                values={":seen": entry["invisible_sk"]},
                change=replay.change_id("lease-expired", entry["invisible_sk"]),
            )
        except errors.Conflict:
            pass  # someone else moved it first

    def dequeue(self, queue: str = DEFAULT_QUEUE) -> Shipment | None:
        """Take the head of the queue and remove it at once (at-most-once: if the caller
        then fails, the shipment is not retried). Prefer receive + complete."""
        moment = self.store.clock()
        for entry in self._ready_head(queue):
            taken = self._claim(entry["id"], "ready_sk", entry["ready_sk"], moment, 0, final=True)
            if taken:
                return taken.shipment
        return None

    def heartbeat(self, shipment_id: str, receipt: str, *, extend_seconds: float = 30.0) -> Receipt:
        """Push the lease's deadline out while the work goes on."""
        moment = self.store.clock()
        deadline = moment + timedelta(seconds=extend_seconds)
        shipment = self._with_receipt(
            shipment_id,
            receipt,
            "heartbeat",
            "SET visible_at = :deadline, invisible_sk = :isk, updated_at = :now",
            {
                ":deadline": to_iso(deadline),
                ":isk": timed_sort_key(to_iso(deadline), shipment_id),
                ":now": to_iso(moment),
            },
        ).item
        return Receipt(shipment, receipt, deadline)

    def release(self, shipment_id: str, receipt: str) -> Shipment:
        """Give a held shipment back untouched (a worker shutting down): it returns to its
        place in the queue at once, and the receive does not count as a failure."""
        for attempt in range(5):
            current = self.store.get(shipment_id)
            if current.change == replay.change_id("release", receipt):
                return current  # given back already: this is the same request again
            self._check_receipt(current, receipt, "release")
            position = current.enqueued_at or to_iso(self.store.clock())
            try:
                # Conditioned on the version too: the sort key is built from the priority read.
                return self._with_receipt(
                    shipment_id,
                    receipt,
                    "release",
                    "SET #st = :ready, ready_q = #queue, ready_sk = :rsk, updated_at = :now "
                    "REMOVE receipt, visible_at, invisible_q, invisible_sk",
                    {
                        ":ready": ShipmentStatus.READY_TO_SHIP,
                        ":now": to_iso(self.store.clock()),
                        ":v": current.version,
                        ":rsk": ready_sort_key(current.priority, position, shipment_id),
                    },
                    names={"#queue": "queue"},
                    extra_condition="version = :v",
                ).item
            except ReceiptInvalid as exc:
                # Still ours but changed since we read it (a supervisor set its priority): read again.
                if attempt == 4 or not exc.current or receipt_problem(exc.current, receipt):
                    raise
        raise AssertionError("unreachable")

    def complete(self, shipment_id: str, receipt: str) -> Shipment:
        """Done: the shipment leaves the queue and stays in the table. Completed again with
        the same receipt (a retry whose first answer was lost), it is answered as done."""
        done = self._with_receipt(
            shipment_id,
            receipt,
            "complete",
            "SET #st = :completed, completed_at = :now, updated_at = :now "
            "REMOVE receipt, visible_at, invisible_q, invisible_sk",
            {":completed": ShipmentStatus.COMPLETED, ":now": to_iso(self.store.clock())},
        )
        if not done.replayed:
            counters.note(self.store.db, done.item.queue, "completed")
        return done.item

    def fail(self, shipment_id: str, receipt: str, reason: str) -> Shipment:
        """Processing failed: retry after an exponential backoff, or after the maximum
        number of receives, to the DLQ with the reason."""
        return self.fail_once(shipment_id, receipt, reason).item

    def fail_once(self, shipment_id: str, receipt: str, reason: str) -> Done[Shipment]:
        """`fail`, saying whether this was the same failure reported again (`replayed`)."""
        current = self.store.get(shipment_id)
        change = replay.change_id("fail", receipt)
        if current.change == change:
            return Done(current, replayed=True)
        self._check_receipt(current, receipt, "fail")
        moment = self.store.clock()
        stamp = to_iso(moment)
        entry = [{"at": stamp, "reason": (reason or "unspecified")[:500], "receive": current.receive_count}]
        reasons = (current.failure_reasons + entry)[-MAX_FAILURE_REASONS:]
        retry = self.store.retry_for(current.queue)
        if current.attempts >= retry.max_receives:
            dlq_reason = f"failed {current.attempts} times (maximum {retry.max_receives}): {reason}"
            return self.store.to_dlq_update(
                shipment_id,
                dlq_reason,
                stamp,
                condition="#st = :processing AND receipt = :receipt",
                values={":processing": ShipmentStatus.PROCESSING, ":receipt": receipt},
                failures=reasons,
                receipt_check=(receipt, "fail"),
                change=change,
            )
        visible = to_iso(moment + timedelta(seconds=retry.delay_after(current.attempts)))
        return self._with_receipt(
            shipment_id,
            receipt,
            "fail",
            "SET #st = :ready, visible_at = :visible, invisible_sk = :isk, failure_reasons = :reasons, "
            "updated_at = :now REMOVE receipt",
            {
                ":ready": ShipmentStatus.READY_TO_SHIP,
                ":visible": visible,
                ":isk": timed_sort_key(visible, shipment_id),
                ":reasons": reasons,
                ":now": stamp,
            },
        )

    def _check_receipt(self, shipment: Shipment, receipt: str, action: str) -> None:
        problem = receipt_problem(shipment_to_item(shipment), receipt)
        if problem:
            raise ReceiptInvalid(f"Cannot {action} shipment {shipment.shipment_id}: {problem}")

    def _with_receipt(
        self,
        shipment_id: str,
        receipt: str,
        action: str,
        update: str,
        values: dict,
        names: dict | None = None,
        extra_condition: str | None = None,
    ) -> Done[Shipment]:
        """A change only the holder of `receipt` may make; the same change made already with
        it (a retry whose answer was lost) is answered as done."""
        change = replay.change_id(action, receipt)
        try:
            return Done(
                self.store.update(
                    shipment_id,
                    update + " ADD version :one",
                    "#st = :processing AND receipt = :receipt" + (f" AND {extra_condition}" if extra_condition else ""),
                    {**values, ":one": 1, ":processing": ShipmentStatus.PROCESSING, ":receipt": receipt},
                    names,
                    change=change,
                )
            )
        except errors.Conflict as exc:
            if replay.made_by(exc.current, change):
                return Done(shipment_from_item(exc.current or {}), replayed=True)
            problem = receipt_problem(exc.current, receipt) or "it changed meanwhile"
            raise ReceiptInvalid(f"Cannot {action} shipment {shipment_id}: {problem}", current=exc.current) from exc

    def _ready_head(self, queue: str) -> list[dict]:
        """The first entries of the `ready` index (one Query): keys in receive order."""
        response = self.store.db.call(
            "query",
            TableName=self.store.table_name,
            IndexName=SHIPMENTS_READY.name,
            Limit=self.store.candidate_limit,
            KeyConditionExpression="ready_q = :q",
            ExpressionAttributeValues={":q": {"S": queue}},
        )
        return [unmarshal(raw) for raw in response.get("Items", [])]


def _claim_update(
    shipment_id: str, stamp: str, deadline: str, receipt: str, *, final: bool
) -> tuple[list[str], list[str], dict]:
    """What a receive sets and removes: processing under a new receipt until `deadline`
    (in the invisible index), or completed at once (`final`: a receive that finishes it)."""
    sets = [
        "#st = :status",
        "last_attempt_at = :now",
        "first_attempt_at = if_not_exists(first_attempt_at, :now)",
        "updated_at = :now",
        "change = :change",
    ]
    removes = ["ready_q", "ready_sk"]
    values = {
        ":status": ShipmentStatus.COMPLETED if final else ShipmentStatus.PROCESSING,
        ":now": stamp,
        ":one": 1,
        ":change": replay.change_id("receive", receipt),
    }
    if final:
        sets += ["completed_at = :now"]
        removes += ["invisible_q", "invisible_sk", "visible_at", "receipt"]
    else:
        sets += ["receipt = :receipt", "visible_at = :deadline", "invisible_q = #queue", "invisible_sk = :isk"]
        values.update({":receipt": receipt, ":deadline": deadline, ":isk": timed_sort_key(deadline, shipment_id)})
    return sets, removes, values
