"""Audited changes of calls: a caller placed (assigned at once or waiting), a waiting
caller who hung up."""

from __future__ import annotations

from queues_app import event_names as named
from queues_app.admission import BackpressureGate
from queues_app.agents.records import Call, Outcome
from queues_app.monitoring import counters
from queues_app.operations.base import Recorded
from queues_app.operations.wording import waited


class CallOperations(Recorded):
    def create_call(
        self,
        preferences: dict,
        *,
        priority: int = 0,
        order: str | None = None,
        idempotency_key: str | None = None,
        callback: str | None = None,
    ) -> tuple[Call, bool]:
        if idempotency_key:
            # A retry is answered before the backlog gate: its call exists already, so a
            # refusal would only make the client retry something that has been done.
            key = idempotency_key
            retried = self.call_center.find_retry(preferences, priority=priority, order=order, idempotency_key=key)
            if retried:
                return retried, False
        BackpressureGate(self.db).check(counters.CALLS)
        call, created = self.call_center.create_call(
            preferences, priority=priority, order=order, idempotency_key=idempotency_key, callback=callback
        )
        if created and call.agent_id:
            summary = f"new call, assigned to {call.agent_name} after waiting {waited(call)}"
            took = self.system.agent_assigned(call)
            self._record(named.CALL_CREATED, "call", call.call_id, summary, None, call, took)
        elif created:
            self._record(named.CALL_CREATED, "call", call.call_id, "new call, waiting", None, call)
        return call, created

    def abandon_call(self, call_id: str) -> Outcome:
        """The caller hung up while waiting (the phone system, or a supervisor ending a
        waiting call as abandoned): out of line, counted in the service level. Sent again,
        answered as done."""
        with self._telling_what_changed("call", call_id):
            outcome = self.call_center.abandon(call_id)
        call = outcome.call
        if outcome.replayed or call is None:
            return outcome
        summary = f"abandoned after waiting {waited(call)}"
        self._record(named.CALL_ABANDONED, "call", call_id, summary, {"status": "waiting"}, {"status": "abandoned"})
        return outcome
