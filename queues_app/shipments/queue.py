"""The shipments priority queue: a queue over an existing table, with visibility
timeouts, retries with backoff, a dead-letter queue and selective restore.

`ShipmentQueue` is every operation on shipments: what brings them into the queue
(intake.py), consuming (consuming.py), supervising (supervising.py) and listing
(listing.py), over one store (store.py). The index layout and the states are explained in
docs/architecture.md.
"""

from __future__ import annotations

from functools import cached_property

from queues_app.facades import Verb
from queues_app.shipments.consuming import Consuming
from queues_app.shipments.intake import Intake
from queues_app.shipments.listing import Listing
from queues_app.shipments.records import (
    DEFAULT_QUEUE,
    SPILLOVER_QUEUE,
    Counts,
    InvalidTransition,
    Receipt,
    ReceiptInvalid,
    RestoreReport,
    RetryPolicy,
    Shipment,
    ShipmentState,
    ShipmentStatus,
    ready_sort_key,
    shipment_from_item,
    shipment_to_item,
    timed_sort_key,
)
from queues_app.shipments.store import ShipmentStore
from queues_app.shipments.supervising import Supervising

# The records are part of this module's interface: callers import them from here too.
__all__ = [
    "DEFAULT_QUEUE",
    "SPILLOVER_QUEUE",
    "Counts",
    "InvalidTransition",
    "Receipt",
    "ReceiptInvalid",
    "RestoreReport",
    "RetryPolicy",
    "Shipment",
    "ShipmentQueue",
    "ShipmentState",
    "ShipmentStatus",
    "ready_sort_key",
    "shipment_from_item",
    "shipment_to_item",
    "timed_sort_key",
]


class ShipmentQueue(ShipmentStore):
    """Every operation on shipments, each the method of the part that owns it: `intake`,
    `consuming` (workers), `supervising` (people), `listing`, over this store (the table,
    the clock, injectable for tests, and the retry policy)."""

    create = Verb("intake", Intake.create)
    submit = Verb("intake", Intake.submit)
    put_new_action = Verb("intake", Intake.put_new_action)
    create_many = Verb("intake", Intake.create_many)
    mark_ready = Verb("intake", Intake.mark_ready)
    enqueue = Verb("intake", Intake.enqueue)
    sideline_stale = Verb("intake", Intake.sideline_stale)

    receive = Verb("consuming", Consuming.receive)
    dequeue = Verb("consuming", Consuming.dequeue)
    heartbeat = Verb("consuming", Consuming.heartbeat)
    release = Verb("consuming", Consuming.release)
    complete = Verb("consuming", Consuming.complete)
    fail = Verb("consuming", Consuming.fail)
    fail_once = Verb("consuming", Consuming.fail_once)

    remove = Verb("supervising", Supervising.remove)
    restore = Verb("supervising", Supervising.restore)
    touch = Verb("supervising", Supervising.touch)
    set_priority = Verb("supervising", Supervising.set_priority)
    send_to_dlq = Verb("supervising", Supervising.send_to_dlq)
    restore_many = Verb("supervising", Supervising.restore_many)
    dlq_matching = Verb("supervising", Supervising.dlq_matching)

    list_filtered = Verb("listing", Listing.list_filtered)
    list_queue = Verb("listing", Listing.list_queue)
    list_in_flight = Verb("listing", Listing.list_in_flight)
    list_delayed = Verb("listing", Listing.list_delayed)
    list_dlq = Verb("listing", Listing.list_dlq)
    counts = Verb("listing", Listing.counts)
    count_queued = Verb("listing", Listing.count_queued)
    oldest_queued_at = Verb("listing", Listing.oldest_queued_at)

    @cached_property
    def intake(self) -> Intake:
        return Intake(self)

    @cached_property
    def consuming(self) -> Consuming:
        return Consuming(self)

    @cached_property
    def supervising(self) -> Supervising:
        return Supervising(self)

    @cached_property
    def listing(self) -> Listing:
        return Listing(self)
