"""The names of what happens to agents, calls, shipments and tasks: the audit trail's
actions and the events a phone system's callback hears. A fact that both record has one
name (a caller who hung up is `call.abandoned` in the trail and in the event)."""

AGENT_CREATED = "agent.create"
AGENT_EDITED = "agent.update"
AGENT_REMOVED = "agent.delete"
AGENT_AVAILABLE = "agent.available"
AGENT_ASSIGNED = "agent.assigned"
AGENT_ANSWERED = "agent.answered"  # the agent picked up the call offered to them
AGENT_RELEASED = "agent.release"
AGENT_OFFLINE = "agent.offline"
AGENT_NOT_READY = "agent.not_ready"
AGENT_DISCONNECTED = "agent.disconnected"  # no heartbeat within AGENT_PRESENCE_SECONDS: not ready
AGENT_STATUS_CHANGED = "agent.status_changed"  # an event only: every change of status, whoever made it

CALL_CREATED = "call.create"
CALL_ASSIGNED = "call.assigned"
CALL_RELAXED = "call.relaxed"
CALL_ENDED = "call.end"
CALL_ABANDONED = "call.abandoned"
CALL_ANSWERED = "call.answered"  # the agent picked up an offered call (ANSWER_TIMEOUT_SECONDS)
CALL_MISSED = "call.missed"  # an offered call not picked up in time: back to the line
CALL_TRANSFERRED = "call.transferred"
CALL_REFUSED = "call.refused"  # its line was closed or full: the caller never entered it
CALL_OVERFLOWED = "call.overflowed"  # past its line's limit: moved to another line, or ended
# Queued callbacks (calls/queued_callbacks.py): asked for, an agent reserved (dial now), not
# reached (tried again later), not reached in the line's attempts (ended).
CALLBACK_REQUESTED = "call.callback_requested"
CALLBACK_DUE = "call.callback_due"
CALLBACK_RETRY = "call.callback_retry"
CALLBACK_FAILED = "call.callback_failed"
# A scheduled callback moved or cancelled by a supervisor before its time (the audit trail's).
CALLBACK_MOVED = "call.callback_moved"
CALLBACK_CANCELLED = "call.callback_cancelled"

LINE_CREATED = "line.create"
LINE_EDITED = "line.update"
LINE_REMOVED = "line.delete"
PROFILE_CREATED = "profile.create"
PROFILE_EDITED = "profile.update"
PROFILE_REMOVED = "profile.delete"

SHIPMENT_QUEUE_CREATED = "shipment_queue.create"
SHIPMENT_QUEUE_EDITED = "shipment_queue.update"
SHIPMENT_QUEUE_REMOVED = "shipment_queue.delete"

SHIPMENT_ENQUEUED = "shipment.enqueue"
SHIPMENT_TOUCHED = "shipment.touch"
SHIPMENT_PRIORITY = "shipment.priority"
SHIPMENT_DEAD_LETTERED = "shipment.dlq"
SHIPMENT_RESTORED = "shipment.restore"
SHIPMENT_REMOVED = "shipment.remove"

TASKS_SHED = "tasks.shed"

# Each action as a supervisor reads it (the trail's details, the action filter).
ACTION_LABELS = {
    AGENT_CREATED: "Agent created",
    AGENT_EDITED: "Agent edited",
    AGENT_REMOVED: "Agent removed",
    AGENT_AVAILABLE: "Agent made available",
    AGENT_ASSIGNED: "Agent given a caller",
    AGENT_ANSWERED: "Agent picked up an offered call",
    AGENT_RELEASED: "Agent released from a call",
    AGENT_OFFLINE: "Agent logged off",
    AGENT_NOT_READY: "Agent set not ready",
    AGENT_DISCONNECTED: "Agent disconnected (no heartbeat)",
    CALL_CREATED: "Caller arrived",
    CALL_ASSIGNED: "Caller given an agent",
    CALL_RELAXED: "Caller's preferences widened",
    CALL_ENDED: "Call ended",
    CALL_ABANDONED: "Caller hung up while waiting",
    CALL_ANSWERED: "Offered call answered",
    CALL_MISSED: "Offered call not answered in time",
    CALL_TRANSFERRED: "Call transferred",
    CALL_REFUSED: "Caller refused by the line",
    CALL_OVERFLOWED: "Caller past the line's limit",
    CALLBACK_REQUESTED: "Callback asked for",
    CALLBACK_DUE: "Callback due",
    CALLBACK_RETRY: "Callback to try again",
    CALLBACK_FAILED: "Callback failed",
    CALLBACK_MOVED: "Callback moved",
    CALLBACK_CANCELLED: "Callback cancelled",
    LINE_CREATED: "Line created",
    LINE_EDITED: "Line changed",
    LINE_REMOVED: "Line removed",
    PROFILE_CREATED: "Routing profile created",
    PROFILE_EDITED: "Routing profile changed",
    PROFILE_REMOVED: "Routing profile removed",
    SHIPMENT_QUEUE_CREATED: "Shipment queue created",
    SHIPMENT_QUEUE_EDITED: "Shipment queue changed",
    SHIPMENT_QUEUE_REMOVED: "Shipment queue removed",
    SHIPMENT_ENQUEUED: "Shipment queued",
    SHIPMENT_TOUCHED: "Shipment sent to the back",
    SHIPMENT_PRIORITY: "Shipment's priority changed",
    SHIPMENT_DEAD_LETTERED: "Shipment sent to the DLQ",
    SHIPMENT_RESTORED: "Shipment restored from the DLQ",
    SHIPMENT_REMOVED: "Shipment removed",
    TASKS_SHED: "Old tasks shed",
}

# What the audit page's action filter offers, by family.
AUDIT_ACTIONS = {
    "Agents": [
        AGENT_CREATED,
        AGENT_EDITED,
        AGENT_REMOVED,
        AGENT_AVAILABLE,
        AGENT_ASSIGNED,
        AGENT_ANSWERED,
        AGENT_RELEASED,
        AGENT_OFFLINE,
        AGENT_NOT_READY,
        AGENT_DISCONNECTED,
    ],
    "Calls": [
        CALL_CREATED,
        CALL_ASSIGNED,
        CALL_ANSWERED,
        CALL_MISSED,
        CALL_TRANSFERRED,
        CALL_RELAXED,
        CALL_ENDED,
        CALL_ABANDONED,
        CALL_REFUSED,
        CALL_OVERFLOWED,
        CALLBACK_REQUESTED,
        CALLBACK_DUE,
        CALLBACK_RETRY,
        CALLBACK_FAILED,
        CALLBACK_MOVED,
        CALLBACK_CANCELLED,
    ],
    "Lines": [LINE_CREATED, LINE_EDITED, LINE_REMOVED, PROFILE_CREATED, PROFILE_EDITED, PROFILE_REMOVED],
    "Shipment queues": [SHIPMENT_QUEUE_CREATED, SHIPMENT_QUEUE_EDITED, SHIPMENT_QUEUE_REMOVED],
    "Shipments": [
        SHIPMENT_ENQUEUED,
        SHIPMENT_TOUCHED,
        SHIPMENT_PRIORITY,
        SHIPMENT_DEAD_LETTERED,
        SHIPMENT_RESTORED,
        SHIPMENT_REMOVED,
    ],
    "Tasks": [TASKS_SHED],
}
# Names entries written by an earlier version carry, and the name of their fact now.
EARLIER_NAMES = {"call.abandon": CALL_ABANDONED}

# What a token's callback hears of the calls it created.
CALL_EVENTS = (
    CALL_ASSIGNED,
    CALL_ANSWERED,
    CALL_MISSED,
    CALL_TRANSFERRED,
    CALL_ABANDONED,
    CALL_RELAXED,
    CALL_REFUSED,
    CALL_OVERFLOWED,
    CALLBACK_REQUESTED,
    CALLBACK_DUE,
    CALLBACK_RETRY,
    CALLBACK_FAILED,
)

# What a token's callback hears of every agent, when it asked for agent events.
AGENT_EVENTS = (AGENT_STATUS_CHANGED, AGENT_DISCONNECTED)
