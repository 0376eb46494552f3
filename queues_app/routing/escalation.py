"""Escalation: a caller who waited too long has preferences relaxed, one dimension at a
time, then is offered to the queues again."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from queues_app.agents.skills import ANY
from queues_app.calls.records import Call, CallStatus
from queues_app.calls.store import RELAXED, Calls
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import errors
from queues_app.ddb.clock import from_iso, to_iso
from queues_app.ddb.codec import marshal
from queues_app.routing.line import WaitingLine
from queues_app.routing.matching import Matcher

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EscalationPolicy:
    """After `after_seconds` of waiting, relax the next dimension in `order`, and so on."""

    after_seconds: float = 60.0
    order: tuple[str, ...] = ("gender", "language")

    @classmethod
    def from_settings(cls) -> EscalationPolicy:
        from django.conf import settings

        config = getattr(settings, "SWITCHBOARD_ESCALATION", {}) or {}
        return cls(
            after_seconds=float(config.get("after_seconds", 60)),
            order=tuple(config.get("order", ("gender", "language"))),
        )


class Escalator:
    def __init__(
        self,
        table: CallCenterTable,
        calls: Calls,
        line: WaitingLine,
        matcher: Matcher,
        policy: EscalationPolicy | None = None,
    ):
        self.table, self.calls, self.line, self.matcher = table, calls, line, matcher
        self._policy = policy

    @property
    def policy(self) -> EscalationPolicy:
        if self._policy is None:
            self._policy = EscalationPolicy.from_settings()
        return self._policy

    def escalate(self) -> list[Call]:
        """Relax the preferences of callers who waited too long, then try to match them.

        Dimensions are relaxed one at a time in the configured order, one more for
        each `after_seconds` waited; the call records what was relaxed and when. Only
        callers due (the `waiting_to_relax` index: last change before now minus
        `after_seconds`) are read, however long the line.
        """
        policy, changed = self.policy, []
        moment = self.table.clock()
        for waiting in list(self.line.due_for_relaxing(moment - timedelta(seconds=policy.after_seconds))):
            _priority, arrived_at, call_id = keys.parse_wait_position(waiting["sk"])
            arrived = from_iso(arrived_at)
            steps_due = int((moment - arrived).total_seconds() // policy.after_seconds) if arrived else 0
            call = self.calls.find(call_id)
            if not call or call.status != CallStatus.WAITING:
                continue
            relaxable = [d for d in policy.order[:steps_due] if call.preferences.get(d) is not ANY]
            if not relaxable:
                self._nothing_to_relax(call, policy)
                continue
            relaxed = self._relax(call, relaxable, moment, policy)
            if relaxed:
                changed.append(self.matcher.match(relaxed, new_call=False) or relaxed)
        return changed

    def _nothing_to_relax(self, call: Call, policy: EscalationPolicy) -> None:
        """A due caller with nothing to relax yet waits for the next step; with nothing the
        policy would ever relax, they leave the index for good."""
        left = [d for d in policy.order if call.preferences.get(d) is not ANY]
        update = "SET relax_at = :now" if left else "REMOVE relax_q, relax_at"
        try:
            self.table.transact(
                [
                    self.table.update(
                        keys.waiting_caller(self.table.wanted(call.preferences), call.wait_sk or ""),
                        update,
                        {":now": to_iso(self.table.clock())} if left else None,
                        condition="attribute_exists(pk)",
                    )
                ]
            )
        except errors.TransactionCancelled:
            return  # assigned meanwhile

    def _relax(self, call: Call, dimensions: list[str], moment: datetime, policy: EscalationPolicy) -> Call | None:
        """Relax the dimensions and move the caller to the partition of their new
        preferences, keeping their place (priority, then arrival), in one transaction."""
        stamp = to_iso(moment)
        entries = [{"dimension": d, "from": call.preferences[d], "at": stamp} for d in dimensions]
        preferences = {**call.preferences, **{d: ANY for d in dimensions}}
        relaxed = Call(**{**call.__dict__, "preferences": preferences, "relaxed": call.relaxed + entries})
        relaxed.version = call.version + 1
        more = any(preferences.get(d) is not ANY for d in policy.order)
        new_place = self.line.wait_item(relaxed, relax_from=stamp)
        if not more:
            new_place.pop("relax_q", None)
            new_place.pop("relax_at", None)
        try:
            self.table.transact(
                [
                    self.table.update(
                        keys.call(call.call_id),
                        "SET preferences = :prefs, relaxed = list_append(relaxed, :entries), version = version + :one",
                        {
                            ":prefs": {k: v for k, v in preferences.items() if v is not ANY},
                            ":entries": entries,
                            ":one": 1,
                            ":waiting": CallStatus.WAITING,
                            ":version": call.version,
                        },
                        condition="#status = :waiting AND version = :version",
                    ),
                    *self.table.leave_line_actions(call),
                    {"Put": {"TableName": self.table.name, "Item": marshal(new_place)}},
                    *self.table.count_updates(self.table.wanted(preferences), +1),
                    *self.table.event_actions(RELAXED, relaxed),
                ]
            )
        except errors.TransactionCancelled:
            return None  # assigned or changed meanwhile
        log.info("call %s: relaxed %s after waiting", call.call_id, ", ".join(dimensions))
        return relaxed
