"""Escalation: a caller who waited too long has preferences relaxed, one dimension at a
time, then is offered to the queues again."""

from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from queues_app import steps
from queues_app.agents.skills import ANY
from queues_app.calls.records import Call, CallStatus
from queues_app.calls.store import ENDED_CALL_RETENTION, RELAXED, Calls
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import errors
from queues_app.ddb.clock import centre_zone, from_iso, to_iso
from queues_app.ddb.codec import marshal
from queues_app.event_names import CALL_OVERFLOWED
from queues_app.figures import facts
from queues_app.lines import entry
from queues_app.lines.records import Line
from queues_app.lines.store import LineStore
from queues_app.routing.aging import PriorityAging
from queues_app.routing.line import WaitingLine, with_line_requires, without_line_requires
from queues_app.routing.matching import Matcher

log = logging.getLogger(__name__)

# Callers past the shortest `max_wait_seconds` read per pass, oldest first: the next pass
# reads on from the same place when a pass could not move them all.
OVERFLOW_READ_CAP = 500


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
        lines: LineStore | None = None,
    ):
        self.table, self.calls, self.line, self.matcher = table, calls, line, matcher
        self._policy = policy
        self.lines = lines
        self._delays_seen: set[tuple[str, int]] = set()

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
        policy, changed = self.policy, self.overflow()
        self.count_new_delays()
        changed += self.widen_steps()
        if self.lines is not None:
            changed += PriorityAging(self.table, self.calls, self.line).age(self.lines.current())
        moment = self.table.clock()
        required = {line.line_id: line.requires for line in self.lines.current()} if self.lines else {}
        for waiting in list(self.line.due_for_relaxing(moment - timedelta(seconds=policy.after_seconds))):
            _priority, arrived_at, call_id = keys.parse_wait_position(waiting["sk"])
            arrived = from_iso(arrived_at)
            steps_due = int((moment - arrived).total_seconds() // policy.after_seconds) if arrived else 0
            call = self.calls.find(call_id)
            if not call or call.status != CallStatus.WAITING:
                continue
            kept = required.get(call.line or "", {})  # what the line requires is never relaxed
            relaxable = [d for d in policy.order[:steps_due] if call.preferences.get(d) is not ANY and d not in kept]
            if not relaxable:
                self._nothing_to_relax(call, policy, kept)
                continue
            relaxed = self._relax(call, relaxable, moment, policy)
            if relaxed:
                changed.append(self.matcher.match(relaxed, new_call=False) or relaxed)
        return changed

    def count_new_delays(self) -> None:
        """A delay of agents' routing profiles this process has not seen yet (a profile made
        or changed while callers wait, or this process starting): the callers waiting on
        its line are offered again now, and their place notes when it next widens."""
        pairs = self.line.profiles.delay_pairs()
        new, self._delays_seen = pairs - self._delays_seen, pairs
        lines = {line_id for line_id, _ in new}
        if not lines:
            return
        moment = self.table.clock()
        for _arrived, call_id, line_id in itertools.islice(self.line.waited_past(moment), OVERFLOW_READ_CAP):
            call = self.calls.find(call_id) if line_id in lines else None
            if not call or call.status != CallStatus.WAITING or not call.wait_sk:
                continue
            try:  # due now: the widening pass that follows offers them again
                self.table.transact(
                    [
                        self.table.update(
                            keys.waiting_caller(self.table.wanted(call.preferences), call.wait_sk),
                            "SET step_q = :q, step_due = :due",
                            {":q": keys.line_shard(call.call_id), ":due": to_iso(moment)},
                            condition="attribute_exists(pk)",
                        )
                    ]
                )
            except errors.TransactionCancelled:
                continue  # taken meanwhile

    def widen_steps(self) -> list[Call]:
        """Offer again every caller whose routing step expired (or whose time kept for their
        preferred agent ran out, or who waited past a delay of agents' routing profiles), to
        the agents now admitted; their place in line notes when
        that next widens. Only callers due are read (`waiting_by_step`)."""
        moment, changed = self.table.clock(), []
        for due in list(self.line.step_expired(moment)):
            call = self.calls.find(keys.parse_wait_position(due["sk"])[2])
            if not call or call.status != CallStatus.WAITING:
                continue
            delays = self.line.profiles.delays(call.line)
            next_due = steps.next_widening(call.steps, call.arrived_at, call.preferred_until, moment, delays)
            update = "SET step_due = :due" if next_due else "REMOVE step_q, step_due"
            try:
                self.table.transact(
                    [
                        self.table.update(
                            {"pk": due["pk"], "sk": due["sk"]},
                            update,
                            {":due": to_iso(next_due)} if next_due else None,
                            condition="attribute_exists(pk)",
                        )
                    ]
                )
            except errors.TransactionCancelled:
                continue  # assigned or gone meanwhile
            changed.append(self.matcher.match(call, new_call=False) or call)
        return changed

    def _nothing_to_relax(self, call: Call, policy: EscalationPolicy, kept=None) -> None:
        """A due caller with nothing to relax yet waits for the next step; with nothing the
        policy would ever relax (what their line requires stays), they leave the index."""
        left = [d for d in policy.order if call.preferences.get(d) is not ANY and d not in (kept or {})]
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
                    *self.table.leave_line_actions(call, line_too=False),  # same line, new place
                    {"Put": {"TableName": self.table.name, "Item": marshal(new_place)}},
                    *self.table.count_updates(self.table.wanted(preferences), +1),
                    *self.table.event_actions(RELAXED, relaxed),
                ]
            )
        except errors.TransactionCancelled:
            return None  # assigned or changed meanwhile
        log.info("call %s: relaxed %s after waiting", call.call_id, ", ".join(dimensions))
        return relaxed

    # --- callers past their line's max_wait_seconds --------------------------------------

    def overflow(self) -> list[Call]:
        """Move every caller who has waited on their line past its `max_wait_seconds` to
        where its overflow leads (another line, keeping their arrival), or end their call
        (`overflowed`, with the overflow's reason): exactly once, each move conditioned on
        the call's version, so a caller answered at the same moment ends in one place.
        Time on a line counts from when the caller entered it."""
        if self.lines is None:
            return []
        lines = self.lines.current()
        limits = {line.line_id: line.max_wait_seconds for line in lines if line.max_wait_seconds}
        if not limits:
            return []
        by_id = {line.line_id: line for line in lines}
        moment = self.table.clock()
        moved: list[Call] = []
        earliest = moment - timedelta(seconds=min(limits.values()))
        for _arrived, call_id, line_id in itertools.islice(self.line.waited_past(earliest), OVERFLOW_READ_CAP):
            limit = limits.get(line_id or "")
            if limit is None or line_id is None:
                continue
            call = self.calls.find(call_id)
            if not call or call.status != CallStatus.WAITING or call.line != line_id:
                continue
            entered = from_iso(call.overflowed[-1]["at"] if call.overflowed else call.arrived_at)
            if entered and (moment - entered).total_seconds() < limit:
                continue
            done = self._overflow(call, by_id[line_id], lines, moment)
            if done is not None:
                moved.append(done)
        return moved

    def _overflow(self, call: Call, line: Line, lines: list[Line], moment: datetime) -> Call | None:
        target = entry.overflow_target(line, lines, moment, centre_zone())
        stamp = to_iso(moment)
        if target is None:
            return self._end_overflowed(call, entry.end_reason(line, lines), stamp, moment)
        moved = Call(**{**call.__dict__})
        moved.preferences = with_line_requires(without_line_requires(call.preferences, line), target)
        moved.line, moved.version = target.line_id, call.version + 1
        moved.overflowed = [*call.overflowed, {"from": line.line_id, "to": target.line_id, "at": stamp}]
        moved.relaxed = []  # the new line's requirements are where relaxing starts again
        place = self.line.wait_item(moved, relax_from=stamp)
        old_wanted, new_wanted = self.table.wanted(call.preferences), self.table.wanted(moved.preferences)
        if old_wanted == new_wanted:  # the same partition: the place is rewritten where it is
            places = [
                {
                    "Put": {
                        "TableName": self.table.name,
                        "Item": marshal(place),
                        "ConditionExpression": "attribute_exists(pk)",
                    }
                },
                *self.table.line_count_update(call.line, -1),
            ]
        else:
            places = [
                *self.table.leave_line_actions(call),
                {"Put": {"TableName": self.table.name, "Item": marshal(place)}},
                *self.table.count_updates(new_wanted, +1),
            ]
        try:
            self.table.transact(
                [
                    self._call_update(
                        call,
                        "SET preferences = :prefs, line = :line, overflowed = :overflowed, relaxed = :relaxed, "
                        "version = version + :one",
                        {
                            ":prefs": {k: v for k, v in moved.preferences.items() if v is not ANY},
                            ":line": target.line_id,
                            ":overflowed": moved.overflowed,
                            ":relaxed": [],
                        },
                    ),
                    *places,
                    *self.table.line_count_update(target.line_id, +1, below=target.max_waiting),
                    *self.table.event_actions(CALL_OVERFLOWED, moved),
                ]
            )
        except errors.TransactionCancelled:
            return None  # answered, abandoned or moved meanwhile, or the target is full: next pass
        log.info("call %s: overflowed from line %s to %s", call.call_id, line.line_id, target.line_id)
        return self.matcher.match(moved, new_call=False) or moved

    def _end_overflowed(self, call: Call, reason: str, stamp: str, moment: datetime) -> Call | None:
        ended = Call(**{**call.__dict__})
        ended.status, ended.ended_at, ended.end_reason, ended.wait_sk = CallStatus.OVERFLOWED, stamp, reason, None
        ended.version = call.version + 1
        ended.overflowed = [*call.overflowed, {"from": call.line, "end": reason, "at": stamp}]
        try:
            self.table.transact(
                [
                    self._call_update(
                        call,
                        "SET #status = :new_status, ended_at = :now, end_reason = :reason, overflowed = :overflowed, "
                        "expires_at = :expires, version = version + :one REMOVE wait_sk",
                        {
                            ":overflowed": ended.overflowed,
                            ":now": stamp,
                            ":reason": reason,
                            ":expires": int((moment + ENDED_CALL_RETENTION).timestamp()),
                        },
                        status=CallStatus.OVERFLOWED,
                    ),
                    *self.table.leave_line_actions(call),
                    *self.table.event_actions(CALL_OVERFLOWED, ended),
                    self.table.fact_action(facts.OVERFLOWED, ended, stamp),
                ]
            )
        except errors.TransactionCancelled:
            return None  # answered or abandoned meanwhile
        log.info("call %s: ended past line %s's max wait (%s)", call.call_id, call.line, reason)
        return ended

    def _call_update(self, call: Call, update: str, values: dict, *, status: str | None = None) -> dict:
        """The change of a waiting call, conditioned on it still waiting at the version read."""
        return self.table.update(
            keys.call(call.call_id),
            update,
            {**values, ":new_status": status, ":one": 1, ":waiting": CallStatus.WAITING, ":version": call.version},
            condition="#status = :waiting AND version = :version",
        )
