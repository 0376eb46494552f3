"""The events a token's callback hears of, and the outbox they wait in.

An event is a shipment of the `callbacks` queue, put in the same transaction as the
change it tells of, so no change goes untold and no event tells of a change that did not
happen. Its id is derived from the call and the call's new version: a delivery retried
after a failure carries the same id, which receivers use to drop duplicates.
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from queues_app.calls.records import Call
from queues_app.centre.table import CallEvents
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import to_iso
from queues_app.event_names import CALL_EVENTS
from queues_app.serializers import call_to_json
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.records import queued_shipment

CALLBACK_QUEUE = "callbacks"
EVENT_TYPES = CALL_EVENTS


def event_id(kind: str, call: Call) -> str:
    return "ev" + hashlib.sha256(f"{call.call_id}:{kind}:{call.version}".encode()).hexdigest()[:14]


def event_body(kind: str, call: Call, moment: datetime) -> dict:
    """What the receiver gets: the event's id, type and time, and the call as
    `GET /api/calls/<id>` shows it right after the change."""
    return {"id": event_id(kind, call), "type": kind, "created_at": to_iso(moment), "call": call_to_json(call)}


def outbox(db: Dynamo) -> CallEvents:
    """SWITCHBOARD_CALL_EVENTS: the Put of the event's shipment, for the change's transaction."""
    shipments = ShipmentQueue(db)

    def actions(kind: str, call: Call, moment: datetime) -> list[dict]:
        event = event_body(kind, call, moment)
        shipment = queued_shipment(
            {"event": event, "token": call.callback},
            moment=moment,
            queue=CALLBACK_QUEUE,
            shipment_id=event["id"],
            tenant=f"token {call.callback}",
        )
        return [shipments.put_new_action(shipment)]

    return actions
