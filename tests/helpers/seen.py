"""What the pages' forms carry for an item as they showed it: the version, and for an
agent on a call, the call. Read from the item as it is now, as a freshly drawn page would."""

from queues_app.agents.roster import Agents
from queues_app.shipments.queue import ShipmentQueue


def shown(agent_id: str, **more) -> dict:
    """An action form's fields for the agent: the version shown and, on a call, the call."""
    now = Agents().get(agent_id)
    return {"version": now.version, **({"call_id": now.call_id} if now.call_id else {}), **more}


def ticked(agent_id: str) -> str:
    """The agent as a list's checkbox carries them: `<id>/<version>[/<call id>]`."""
    now = Agents().get(agent_id)
    return "/".join(filter(None, [agent_id, str(now.version), now.call_id]))


def shipment_version(shipment_id: str) -> dict:
    return {"version": ShipmentQueue().get(shipment_id).version}


def ticked_shipment(shipment_id: str) -> str:
    """The shipment as a list's checkbox carries it: `<id>/<version>`."""
    return f"{shipment_id}/{ShipmentQueue().get(shipment_id).version}"
