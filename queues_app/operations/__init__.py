"""Every change a supervisor, a staff member or the phone system makes to the queues.

Pages, admin actions and the JSON API all go through `Operations`, so each change is
made by the same service call and written to the audit trail the same way (`entries`),
and what the queues do on their own is recorded from what the domain returns (`system`).
"""

from __future__ import annotations

from queues_app.ddb.client import Dynamo
from queues_app.facades import Verb
from queues_app.operations.agents import AgentOperations
from queues_app.operations.base import Recorder
from queues_app.operations.calls import CallOperations
from queues_app.operations.lines import LineOperations
from queues_app.operations.shipment_queues import ShipmentQueueOperations
from queues_app.operations.shipments import ShipmentOperations


class Operations:
    """Changes made by one actor from one source: agents, calls and shipments, each part
    sharing one `Recorder`. Each verb is the method of the part that owns it."""

    create_agent = Verb("on_agent", AgentOperations.create_agent)
    update_agent = Verb("on_agent", AgentOperations.update_agent)
    remove_agent = Verb("on_agent", AgentOperations.remove_agent)
    make_available = Verb("on_agent", AgentOperations.make_available)
    release = Verb("on_agent", AgentOperations.release)
    end_call = Verb("on_agent", AgentOperations.end_call)
    log_off = Verb("on_agent", AgentOperations.log_off)
    set_not_ready = Verb("on_agent", AgentOperations.set_not_ready)
    cancel_next_status = Verb("on_agent", AgentOperations.cancel_next_status)
    agents_effect = Verb("on_agent", AgentOperations.agents_effect)
    on_agents = Verb("on_agent", AgentOperations.on_agents)

    create_call = Verb("on_call", CallOperations.create_call)
    abandon_call = Verb("on_call", CallOperations.abandon_call)
    answered = Verb("on_call", CallOperations.answered)
    request_callback = Verb("on_call", CallOperations.request_callback)
    callback_result = Verb("on_call", CallOperations.callback_result)
    schedule_callback = Verb("on_call", CallOperations.schedule_callback)
    move_callback = Verb("on_call", CallOperations.move_callback)
    cancel_callback = Verb("on_call", CallOperations.cancel_callback)
    transfer = Verb("on_call", CallOperations.transfer)

    put_line = Verb("on_line", LineOperations.put_line)
    delete_line = Verb("on_line", LineOperations.delete_line)
    put_profile = Verb("on_line", LineOperations.put_profile)
    delete_profile = Verb("on_line", LineOperations.delete_profile)

    put_shipment_queue = Verb("on_shipment_queue", ShipmentQueueOperations.put_shipment_queue)
    delete_shipment_queue = Verb("on_shipment_queue", ShipmentQueueOperations.delete_shipment_queue)

    submit_shipment = Verb("on_shipment", ShipmentOperations.submit_shipment)
    touch = Verb("on_shipment", ShipmentOperations.touch)
    set_priority = Verb("on_shipment", ShipmentOperations.set_priority)
    send_to_dlq = Verb("on_shipment", ShipmentOperations.send_to_dlq)
    restore = Verb("on_shipment", ShipmentOperations.restore)
    remove = Verb("on_shipment", ShipmentOperations.remove)
    shipments_effect = Verb("on_shipment", ShipmentOperations.shipments_effect)
    on_shipments = Verb("on_shipment", ShipmentOperations.on_shipments)
    restore_many = Verb("on_shipment", ShipmentOperations.restore_many)
    send_many_to_dlq = Verb("on_shipment", ShipmentOperations.send_many_to_dlq)
    touch_many = Verb("on_shipment", ShipmentOperations.touch_many)

    def __init__(self, actor: str, source: str, *, trace_id: str | None = None, db: Dynamo | None = None):
        self.recorder = Recorder(actor, source, trace_id=trace_id, db=db)
        self.db, self.call_center, self.agents = self.recorder.db, self.recorder.call_center, self.recorder.agents
        self.shipments, self.trail = self.recorder.shipments, self.recorder.trail
        self.on_agent = AgentOperations(self.recorder)
        self.on_call = CallOperations(self.recorder)
        self.on_shipment = ShipmentOperations(self.recorder)
        self.on_line = LineOperations(self.recorder)
        self.on_shipment_queue = ShipmentQueueOperations(self.recorder)

    @classmethod
    def for_request(cls, request, source: str = "page") -> Operations:
        """Changes made by the request's user, recorded with its trace id."""
        return cls(request.user.get_username(), source, trace_id=getattr(request, "trace_id", None))


__all__ = ["Operations"]
