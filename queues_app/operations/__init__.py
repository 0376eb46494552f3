"""Every change a supervisor, a staff member or the phone system makes to the queues.

Pages, admin actions and the JSON API all go through `Operations`, so each change is
made by the same service call and written to the audit trail the same way (`entries`),
and what the queues do on their own is recorded from what the domain returns (`system`).
"""

from queues_app.operations.agents import AgentOperations
from queues_app.operations.calls import CallOperations
from queues_app.operations.shipments import ShipmentOperations


class Operations(AgentOperations, CallOperations, ShipmentOperations):
    """Changes made by one actor from one source: agents, calls and shipments."""


__all__ = ["Operations"]
