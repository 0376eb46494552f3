"""Priority aging: a caller waiting on a line with `priority_aging_seconds` rises one
priority step each period they have waited on it, up to the top, keeping their arrival:
so a caller of a low priority is not passed over for ever by later callers of a higher
one. Each rise is one transaction conditioned on the call's version, like every move."""

from __future__ import annotations

import itertools
import logging
from datetime import datetime, timedelta

from queues_app.calls.records import Call, CallStatus
from queues_app.calls.store import Calls
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import errors
from queues_app.ddb.clock import from_iso
from queues_app.ddb.codec import marshal
from queues_app.lines.records import Line
from queues_app.routing.line import WaitingLine

log = logging.getLogger(__name__)

AGING_READ_CAP = 500  # callers past the shortest aging period read per pass, oldest first


class PriorityAging:
    def __init__(self, table: CallCenterTable, calls: Calls, line: WaitingLine):
        self.table, self.calls, self.line = table, calls, line

    def age(self, lines: list[Line]) -> list[Call]:
        """Raise the priority of every caller due on a line that ages priorities; returns
        the calls as raised."""
        periods = {line.line_id: line.priority_aging_seconds for line in lines if line.priority_aging_seconds}
        if not periods:
            return []
        moment = self.table.clock()
        raised = []
        earliest = moment - timedelta(seconds=min(periods.values()))
        for _arrived, call_id, line_id in itertools.islice(self.line.waited_past(earliest), AGING_READ_CAP):
            period = periods.get(line_id or "")
            if period is None:
                continue
            call = self.calls.find(call_id)
            if not call or call.status != CallStatus.WAITING or call.line != line_id:
                continue
            due = due_priority(call, period, moment)
            if due > call.priority:
                done = self._raise(call, due)
                if done is not None:
                    raised.append(done)
        return raised

    def _raise(self, call: Call, priority: int) -> Call | None:
        """The call at its new priority, its place moved in its partition (the count is
        the same), in one transaction conditioned on the version read."""
        risen = Call(**{**call.__dict__})
        risen.aged_from = call.priority if call.aged_from is None else call.aged_from
        risen.priority, risen.version = priority, call.version + 1
        risen.wait_sk = keys.wait_position(priority, call.arrived_at, call.call_id)
        old_place = keys.waiting_caller(self.table.wanted(call.preferences), call.wait_sk or "")
        place = self.line.wait_item(risen)
        if "relax_q" in place:  # when their next relaxing is due stays as it was
            place["relax_at"] = self._relax_at(old_place) or place["relax_at"]
        try:
            self.table.transact(
                [
                    self.table.update(
                        keys.call(call.call_id),
                        "SET priority = :priority, wait_sk = :wait_sk, aged_from = :from, version = version + :one",
                        {
                            ":priority": priority,
                            ":wait_sk": risen.wait_sk,
                            ":from": risen.aged_from,
                            ":one": 1,
                            ":waiting": CallStatus.WAITING,
                            ":version": call.version,
                        },
                        condition="#status = :waiting AND version = :version",
                    ),
                    {
                        "Delete": {
                            "TableName": self.table.name,
                            "Key": marshal(old_place),
                            "ConditionExpression": "attribute_exists(pk)",
                        }
                    },
                    {"Put": {"TableName": self.table.name, "Item": marshal(place)}},
                ]
            )
        except errors.TransactionCancelled:
            return None  # taken, hung up or moved meanwhile: the next pass looks again
        log.info("call %s: priority %s -> %s after waiting", call.call_id, call.priority, priority)
        return risen

    def _relax_at(self, place: dict) -> str | None:
        found = self.table.db.call(
            "get_item", TableName=self.table.name, Key=marshal(place), ProjectionExpression="relax_at"
        ).get("Item")
        return found["relax_at"]["S"] if found and "relax_at" in found else None


def due_priority(call: Call, period: float, moment: datetime) -> int:
    """The priority a caller has earned by waiting on their line: the one they arrived
    with, one step more each `period` since they entered the line, at most the top."""
    entered = from_iso(call.overflowed[-1]["at"] if call.overflowed else call.arrived_at)
    steps = int((moment - entered).total_seconds() // period) if entered else 0
    start = call.priority if call.aged_from is None else call.aged_from
    return min(keys.MAX_PRIORITY, start + steps)
