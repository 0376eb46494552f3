"""The events a token's callback hears of (its calls', and every agent's when it asked),
and the outbox they wait in.

An event is a shipment of the `callbacks` queue, put in the same transaction as the
change it tells of, so no change goes untold and no event tells of a change that did not
happen. Its id is derived from the call and the call's new version: a delivery retried
after a failure carries the same id, which receivers use to drop duplicates.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from queues_app.agents.records import StatusChange
from queues_app.calls.records import Call
from queues_app.centre import keys
from queues_app.centre.table import AgentEvents, CallEvents
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.codec import marshal, unmarshal
from queues_app.ddb.recent import RecentReads
from queues_app.event_names import AGENT_EVENTS, AGENT_STATUS_CHANGED, CALL_EVENTS
from queues_app.serializers import call_to_json
from queues_app.shipments.queue import ShipmentQueue
from queues_app.shipments.records import queued_shipment

CALLBACK_QUEUE = "callbacks"
EVENT_TYPES = CALL_EVENTS
AGENT_EVENT_TYPES = AGENT_EVENTS
_LISTENING: RecentReads[list[str]] = RecentReads(5.0)


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


def listening(db: Dynamo) -> list[str]:
    """The tokens whose callbacks hear of every agent (ids), read at most 5 s ago: one
    strongly consistent GetItem per process every 5 s, whatever the rate of changes."""
    known = _LISTENING.get(db)
    if known is not None:
        return known
    response = db.call(
        "get_item", TableName=db.table("callcenter"), Key=marshal(keys.AGENT_LISTENERS), ConsistentRead=True
    )
    return _LISTENING.keep(db, sorted(unmarshal(response.get("Item") or {}).get("tokens") or ()))


def listen(db: Dynamo, token_id: object, on: bool) -> None:
    """Start (or stop) sending every agent's changes to the token's callback."""
    db.call(
        "update_item",
        TableName=db.table("callcenter"),
        Key=marshal(keys.AGENT_LISTENERS),
        UpdateExpression=("ADD" if on else "DELETE") + " tokens :token",
        ExpressionAttributeValues={":token": {"SS": [str(token_id)]}},
    )
    _LISTENING.forget(db)


def agent_event_id(kind: str, change: StatusChange) -> str:
    mark = change.version if change.version is not None else change.at
    return "ev" + hashlib.sha256(f"agent:{change.agent_id}:{kind}:{mark}".encode()).hexdigest()[:14]


def agent_event_body(kind: str, change: StatusChange, moment: datetime) -> dict:
    """What the receiver gets of a change of an agent's status: from what to what, why,
    when, and the agent's version after it (events of one agent are ordered by it)."""
    return {
        "id": agent_event_id(kind, change),
        "type": kind,
        "created_at": to_iso(moment),
        "agent": {"agent_id": change.agent_id, "name": change.name},
        "from": change.was,
        "from_reason": change.was_reason,
        "to": change.to,
        "reason": change.reason,
        "at": change.at,
        "version": change.version,
        "call_id": change.call_id,
    }


def agent_outbox(db: Dynamo) -> AgentEvents:
    """SWITCHBOARD_AGENT_EVENTS: the Puts of an agent change's events, one per listening
    token, for the change's transaction."""
    shipments = ShipmentQueue(db)

    def actions(change: StatusChange, also: tuple[str, ...]) -> list[dict]:
        tokens = listening(db)
        if not tokens:
            return []
        moment = from_iso(change.at) or datetime.now(UTC)
        puts = []
        for kind in (AGENT_STATUS_CHANGED, *also):
            event = agent_event_body(kind, change, moment)
            for token in tokens:
                shipment = queued_shipment(
                    {"event": event, "token": token},
                    moment=moment,
                    queue=CALLBACK_QUEUE,
                    shipment_id=f"{event['id']}t{token}",
                    tenant=f"token {token}",
                )
                puts.append(shipments.put_new_action(shipment))
        return puts

    return actions
