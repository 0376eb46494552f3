"""Escalation: a caller who waited too long has preferences relaxed, one dimension at a
time, then is offered to the queues again."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from queues_app.agents import keys
from queues_app.agents.calls import Calls
from queues_app.agents.matching import Matcher
from queues_app.agents.records import Call, CallStatus
from queues_app.agents.skills import ANY
from queues_app.agents.waiting import WaitingLine
from queues_app.agents.writes import CallCenterTable
from queues_app.ddb import errors
from queues_app.ddb.clock import from_iso, to_iso

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
        each `after_seconds` waited; the call records what was relaxed and when.
        """
        policy, changed = self.policy, []
        moment = self.table.clock()
        for waiting in self.line.everyone():
            arrived = from_iso(waiting["arrived_at"])
            steps_due = int((moment - arrived).total_seconds() // policy.after_seconds) if arrived else 0
            if steps_due <= 0:
                continue
            call = self.calls.find(waiting["call_id"])
            if not call or call.status != CallStatus.WAITING:
                continue
            relaxable = [d for d in policy.order[:steps_due] if call.preferences.get(d) is not ANY]
            if not relaxable:
                continue
            relaxed = self._relax(call, relaxable, moment)
            if relaxed:
                changed.append(self.matcher.match(relaxed, new_call=False) or relaxed)
        return changed

    def _relax(self, call: Call, dimensions: list[str], moment: datetime) -> Call | None:
        stamp = to_iso(moment)
        entries = [{"dimension": d, "from": call.preferences[d], "at": stamp} for d in dimensions]
        preferences = {**call.preferences, **{d: ANY for d in dimensions}}
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
                    self.table.update(
                        {"pk": keys.WAITING_PK, "sk": call.wait_sk},
                        "REMOVE " + ", ".join(f"#d{i}" for i in range(len(dimensions))),
                        condition="attribute_exists(pk)",
                        names={f"#d{i}": f"p_{d}" for i, d in enumerate(dimensions)},
                    ),
                ]
            )
        except errors.TransactionCancelled:
            return None  # assigned or changed meanwhile
        log.info("call %s: relaxed %s after waiting", call.call_id, ", ".join(dimensions))
        call.preferences, call.relaxed, call.version = preferences, call.relaxed + entries, call.version + 1
        return call
