"""The shipments' invariants: each item of the shipments table checked on its own (a
known status, index attributes that agree with it, sort keys as the code writes them)."""

from __future__ import annotations

from queues_app.ddb.client import Dynamo
from queues_app.ddb.scan import Violation, scan_all
from queues_app.shipments.records import (
    DEFAULT_QUEUE,
    INDEX_KEYS,
    ShipmentState,
    ShipmentStatus,
    ready_sort_key,
    shipment_from_item,
    timed_sort_key,
)

SHIPMENT_STATES = (
    ShipmentState.UNDER_CONSTRUCTION,
    ShipmentState.READY,
    ShipmentState.QUEUED,
    ShipmentState.DELAYED,
    ShipmentState.PROCESSING,
    ShipmentState.COMPLETED,
    ShipmentState.IN_DLQ,
)


def shipments_summary(c: dict[str, int]) -> str:
    """ "N shipments (a under construction, b ready, ...)": every state, zeros included."""
    total = c.get("shipments", 0)
    if not total:
        return "0 shipments"
    parts = [
        f"{c.get(f'shipments_{state}', 0)} {state.replace('_', ' ').replace('dlq', 'DLQ')}" for state in SHIPMENT_STATES
    ]
    unknown = c.get("shipments_unknown", 0)
    if unknown:
        parts.append(f"{unknown} with an unknown status")
    return f"{total} shipments ({', '.join(parts)})"


def read_shipments(db: Dynamo) -> list[dict]:
    """Every item of the shipments table."""
    return list(scan_all(db, "shipments"))


# Which indexes each status allows. A READY_TO_SHIP shipment is in at most one of its
# two (ready: queued; invisible: delayed); the other statuses are in exactly the listed
# ones (required) or in none.
_INDEXES_REQUIRED = {
    ShipmentStatus.UNDER_CONSTRUCTION: set(),
    ShipmentStatus.READY_TO_SHIP: set(),
    ShipmentStatus.PROCESSING: {"invisible"},
    ShipmentStatus.COMPLETED: set(),
    ShipmentStatus.IN_DLQ: {"dlq"},
}
_INDEXES_ALLOWED = {
    ShipmentStatus.UNDER_CONSTRUCTION: set(),
    ShipmentStatus.READY_TO_SHIP: {"ready", "invisible"},
    ShipmentStatus.PROCESSING: {"invisible"},
    ShipmentStatus.COMPLETED: set(),
    ShipmentStatus.IN_DLQ: {"dlq"},
}


def check_shipments(items: list[dict]) -> list[Violation]:
    """Every violation among the items of the shipments table, in id order."""
    found: list[Violation] = []
    for item in sorted(items, key=lambda i: str(i.get("id", ""))):
        found.extend(check_shipment(item))
    return found


def check_shipment(item: dict) -> list[Violation]:
    """The invariants of one shipment item: a known status, index attributes that agree
    with it (one state only), complete index pairs in the shipment's queue, sort keys as
    the code writes them, and a receipt and deadline exactly when they belong."""
    subject = f"shipment {item.get('id', '?')}"
    status = item.get("status")
    problems: list[tuple[str, str]] = []
    if status not in ShipmentStatus.ALL:
        problems.append(("status", f"unknown status {status!r} (expected one of {', '.join(ShipmentStatus.ALL)})"))
    present = _index_pairs(item, problems)
    if status in ShipmentStatus.ALL and isinstance(status, str):
        problems += _state(item, status, present)
    return [Violation(f"shipments.{check}", subject, detail) for check, detail in problems]


def _has(item: dict, attr: str) -> bool:
    return item.get(attr) is not None


def _index_pairs(item: dict, problems: list[tuple[str, str]]) -> set[str]:
    """The indexes the item is in; each index pair complete, in the shipment's queue, with
    the sort key the code writes (what is not goes into `problems`)."""
    sid, queue = str(item.get("id", "?")), item.get("queue", DEFAULT_QUEUE)
    present = set()
    for index, (q_attr, sk_attr) in INDEX_KEYS.items():
        if not (_has(item, q_attr) or _has(item, sk_attr)):
            continue
        present.add(index)
        if not _has(item, sk_attr):
            problems.append(("index", f"{q_attr} without {sk_attr} (an incomplete {index} index entry)"))
        elif not _has(item, q_attr):
            problems.append(("index", f"{sk_attr} without {q_attr} (an incomplete {index} index entry)"))
        if _has(item, q_attr) and item[q_attr] != queue:
            problems.append(("index", f"{q_attr} is {item[q_attr]!r} but the shipment's queue is {queue!r}"))
        if _has(item, sk_attr):
            expected, why = _expected_sort_key(index, item, sid)
            if expected is None:
                problems.append(("sort_key", f"{sk_attr} is {item[sk_attr]!r} but {why}"))
            elif item[sk_attr] != expected:
                problems.append(("sort_key", f"{sk_attr} is {item[sk_attr]!r}, expected {expected!r} ({why})"))
    return present


def _state(item: dict, status: str, present: set[str]) -> list[tuple[str, str]]:
    """The indexes agree with the status (exactly one state); a receipt only while
    processing; a deadline exactly while in `invisible`; a DLQ entry says when and why."""

    def has(attr: str) -> bool:
        return _has(item, attr)

    label = ShipmentStatus.LABELS[status][0].lower() + ShipmentStatus.LABELS[status][1:]  # "in DLQ"
    problems = []
    for index in sorted(present - _INDEXES_ALLOWED[status]):
        problems.append(
            ("index", f"{label} but in the {index} index ({', '.join(a for a in INDEX_KEYS[index] if has(a))})")
        )
    for index in sorted(_INDEXES_REQUIRED[status] - present):
        problems.append(("index", f"{label} but not in the {index} index (no {' or '.join(INDEX_KEYS[index])})"))
    if status == ShipmentStatus.READY_TO_SHIP and {"ready", "invisible"} <= present:
        problems.append(("index", "ready to ship but both queued and delayed: in the ready and the invisible index"))
    if status == ShipmentStatus.PROCESSING:
        if not has("receipt"):
            problems.append(("lease", "processing without a receipt"))
        if not has("visible_at"):
            problems.append(("lease", "processing without a deadline (visible_at)"))
    elif has("receipt"):
        problems.append(("lease", f"{label} but holds a receipt ({item['receipt']})"))
    if has("visible_at") and "invisible" not in present and status != ShipmentStatus.PROCESSING:
        problems.append(("lease", f"{label} with visible_at {item['visible_at']} but not in the invisible index"))
    if status == ShipmentStatus.IN_DLQ:
        problems += [("index", f"in DLQ without {attr}") for attr in ("dlq_at", "dlq_reason") if not has(attr)]
    return problems


def _expected_sort_key(index: str, item: dict, sid: str) -> tuple[str | None, str]:
    """The sort key the code writes for this index, and what it is made of (or why it
    cannot be known)."""
    if index == "ready":
        enqueued_at = item.get("enqueued_at")
        if not enqueued_at:
            return None, "the shipment has no enqueued_at"
        try:
            priority = int(item.get("priority", 0))
        except (TypeError, ValueError):
            return None, f"the priority {item.get('priority')!r} is not a number"
        return ready_sort_key(priority, enqueued_at, sid), f"priority {priority}, enqueued at {enqueued_at}"
    moment_attr = "visible_at" if index == "invisible" else "dlq_at"
    moment = item.get(moment_attr)
    if not moment:
        return None, f"the shipment has no {moment_attr}"
    return timed_sort_key(moment, sid), f"{moment_attr} {moment}"


def shipment_counts(items: list[dict]) -> dict[str, int]:
    """How many shipments, and how many in each state (`shipments_<state>`)."""
    result = {"shipments": len(items), "shipments_unknown": 0}
    result.update({f"shipments_{state}": 0 for state in SHIPMENT_STATES})
    for item in items:
        if item.get("status") not in ShipmentStatus.ALL or "id" not in item:
            result["shipments_unknown"] += 1
            continue
        result[f"shipments_{shipment_from_item(item).state}"] += 1
    return result
