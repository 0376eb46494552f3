"""Audited changes of calls: a caller placed (assigned at once or waiting), a waiting
caller who hung up, an offered call picked up, a call transferred."""

from __future__ import annotations

from datetime import datetime

from queues_app import event_names as named
from queues_app.admission import BackpressureGate
from queues_app.agents.skills import describe_preferences
from queues_app.calls.records import Call, Outcome
from queues_app.calls.transfers import Transfer
from queues_app.ddb.clock import on_the_clock
from queues_app.figures import counters
from queues_app.operations.base import Recorder
from queues_app.operations.wording import waited, waited_until


class CallOperations:
    """Audited changes of calls."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder
        self.db, self.call_center, self.agents = recorder.db, recorder.call_center, recorder.agents
        self.system = recorder.system

    def create_call(
        self,
        preferences: dict,
        *,
        priority: int = 0,
        order: str | None = None,
        idempotency_key: str | None = None,
        callback: str | None = None,
        line: str | None = None,
        steps: list | None = None,
        preferred: tuple[str, int] | None = None,
    ) -> tuple[Call, bool]:
        if idempotency_key:
            # A retry is answered before the backlog gate: its call exists already, so a
            # refusal would only make the client retry something that has been done.
            key = idempotency_key
            retried = self.call_center.find_retry(
                preferences,
                priority=priority,
                order=order,
                idempotency_key=key,
                line=line,
                steps=steps,
                preferred=preferred,
            )
            if retried:
                return retried, False
        BackpressureGate(self.db).check(counters.CALLS)
        call, created = self.call_center.create_call(
            preferences,
            priority=priority,
            order=order,
            idempotency_key=idempotency_key,
            callback=callback,
            line=line,
            steps=steps,
            preferred=preferred,
        )
        if created and call.agent_id:
            given = "offered" if call.offer_sk else "assigned"
            summary = f"new call, {given} to {call.agent_name} after waiting {waited(call)}"
            assigned = self.system.agent_assigned(call, self.recorder.actor, self.recorder.source)
            self.recorder.record(named.CALL_CREATED, "call", call.call_id, summary, None, call, assigned)
        elif created:
            summary = "new call, waiting" + (f" on {call.line}" if call.line else "")
            if call.overflowed:
                summary += f" (line {call.overflowed[0]['from']} was full)"
            self.recorder.record(named.CALL_CREATED, "call", call.call_id, summary, None, call)
        return call, created

    def abandon_call(self, call_id: str) -> Outcome:
        """The caller hung up while waiting (the phone system, or a supervisor ending a
        waiting call as abandoned): out of line, counted in the service level. Sent again,
        answered as done."""
        with self.recorder.telling_what_changed("call", call_id):
            outcome = self.call_center.abandon(call_id)
        call = outcome.call
        if outcome.replayed or call is None:
            return outcome
        summary = f"abandoned after waiting {waited(call)}"
        self.recorder.record(
            named.CALL_ABANDONED, "call", call_id, summary, {"status": "waiting"}, {"status": "abandoned"}
        )
        return outcome

    def answered(self, call_id: str, *, agent_id: str | None = None) -> Outcome:
        """The agent picked up the offered call (ANSWER_TIMEOUT_SECONDS); `agent_id`: the
        agent it rang for, refused once the call is offered to another."""
        with self.recorder.telling_what_changed("call", call_id):
            outcome = self.call_center.answered(call_id, agent_id=agent_id)
        call = outcome.call
        if not outcome.replayed and call is not None:
            summary = f"answered by {call.agent_name} after waiting {waited_until(call, call.answered_at)}"
            picked = self.recorder.entry(
                named.AGENT_ANSWERED,
                "agent",
                call.agent_id or "",
                f"{call.agent_name} picked up call {call_id}",
                {"status": "ringing", "call_id": call_id},
                {"status": "attending", "call_id": call_id},
            )
            before, after = {"answered_at": None}, {"answered_at": call.answered_at}
            self.recorder.record(named.CALL_ANSWERED, "call", call_id, summary, before, after, picked)
        return outcome

    def request_callback(self, call_id: str, number: str) -> Outcome:
        """The waiting caller is to be called back on `number`, keeping their place."""
        with self.recorder.telling_what_changed("call", call_id):
            outcome = self.call_center.request_callback(call_id, number)
        call = outcome.call
        if not outcome.replayed and call is not None:
            summary = f"to be called back on …{(call.callback_number or '')[-4:]} after waiting {waited(call)}"
            after = {"callback_requested_at": call.callback_requested_at}
            self.recorder.record(named.CALLBACK_REQUESTED, "call", call_id, summary, {"status": "waiting"}, after)
        return outcome

    def callback_result(
        self, call_id: str, result: str, *, attempt: int | None = None, agent_id: str | None = None
    ) -> Outcome:
        """How dialling a callback went: connected (in progress), or not reached (its agent
        freed; tried again later, or ended past its line's attempts)."""
        with self.recorder.telling_what_changed("call", call_id):
            outcome = self.call_center.callback_result(call_id, result, attempt=attempt, agent_id=agent_id)
        call = outcome.call
        if outcome.replayed or call is None:
            return outcome
        if call.answered_at and call.agent_id:
            summary = f"called back: connected with {call.agent_name}"
            self.recorder.record(named.CALL_ANSWERED, "call", call_id, summary, None, {"answered_at": call.answered_at})
        elif call.callback_retry_at:
            summary = (
                f"callback not reached ({result.replace('_', ' ')}); tried again {on_the_clock(call.callback_retry_at)}"
            )
            self.recorder.record(named.CALLBACK_RETRY, "call", call_id, summary, None, {"status": call.status})
        else:
            summary = f"callback not reached ({result.replace('_', ' ')}) in {len(call.callback_results)} attempts"
            self.recorder.record(named.CALLBACK_FAILED, "call", call_id, summary, None, {"status": call.status})
        return outcome

    def schedule_callback(
        self, line: str, preferences: dict, number: str, at: datetime, *, callback: str | None = None
    ) -> tuple[Call, bool]:
        """A callback on `line` at `at`: (call, created); the same request again, (call, False)."""
        call, created = self.call_center.schedule_callback(line, preferences, number, at, callback=callback)
        if created:
            summary = (
                f"callback scheduled on {line} for {on_the_clock(call.arrived_at)}, to a number ending {number[-4:]}"
            )
            self.recorder.record(named.CALLBACK_REQUESTED, "call", call.call_id, summary, None, call)
        return call, created

    def move_callback(self, call_id: str, version: int, at: datetime) -> Outcome:
        with self.recorder.telling_what_changed("call", call_id):
            before = self.call_center.get_call(call_id)
            outcome = self.call_center.move_callback(call_id, version, at)
        moved = outcome.call
        if moved is not None:
            summary = f"callback moved from {on_the_clock(before.arrived_at)} to {on_the_clock(moved.arrived_at)}"
            self.recorder.record(
                named.CALLBACK_MOVED, "call", call_id, summary, {"at": before.arrived_at}, {"at": moved.arrived_at}
            )
        return outcome

    def cancel_callback(self, call_id: str, version: int) -> Outcome:
        with self.recorder.telling_what_changed("call", call_id):
            outcome = self.call_center.cancel_callback(call_id, version)
        call = outcome.call
        if call is not None:
            summary = f"callback for {on_the_clock(call.arrived_at)} cancelled before its time"
            self.recorder.record(named.CALLBACK_CANCELLED, "call", call_id, summary, {"status": call.status}, None)
        return outcome

    def transfer(self, request: Transfer) -> Outcome:
        """Hand a call in progress on: to new preferences (at its place in line) or to a
        named queued agent; its agent then goes `then`."""
        call_id = request.call_id
        before = self.call_center.get_call(call_id)
        from_agent = self.agents.get(before.agent_id) if before.agent_id else None
        with self.recorder.telling_what_changed("call", call_id):
            outcome = self.call_center.transfer(request)
        call, agent = outcome.call, outcome.agent
        if call is None or agent is None or outcome.replayed:
            return outcome
        where = f"to {call.agent_name}" if call.agent_id else f"to wait for {describe_preferences(call.preferences)}"
        summary = f"transferred by {agent.name} {where}"
        entries = [
            self.recorder.entry(
                named.AGENT_RELEASED,
                "agent",
                agent.agent_id,
                f"{agent.name} transferred call {call_id}",
                from_agent,
                agent,
            )
        ]
        if call.agent_id:
            by = (self.recorder.actor, self.recorder.source)  # the transfer brought the assignment about
            entries += [self.system.call_assigned(call, *by), self.system.agent_assigned(call, *by)]
        self.recorder.record(
            named.CALL_TRANSFERRED,
            "call",
            call_id,
            summary,
            {"agent_name": before.agent_name, "preferences": before.preferences},
            {"agent_name": call.agent_name, "preferences": call.preferences, "status": call.status},
            *entries,
        )
        return outcome
