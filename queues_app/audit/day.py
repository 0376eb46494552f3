"""An agent's day, from their audit entries and their record now."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from queues_app.agents.records import AgentStatus, status_label
from queues_app.audit.records import target
from queues_app.audit.store import AuditTrail
from queues_app.ddb.clock import centre_day_start, from_iso

DAY_STATUSES = (
    AgentStatus.QUEUED,
    AgentStatus.RINGING,
    AgentStatus.ATTENDING,
    AgentStatus.WRAP_UP,
    AgentStatus.NOT_READY,
    AgentStatus.OFFLINE,
    AgentStatus.AVAILABLE,
)
DAY_ENTRY_LIMIT = 500  # entries of one agent's day read at most (one Query)


@dataclass
class Stretch:
    """A stretch of the day in one status (with the call, while attending)."""

    status: str
    start: datetime
    end: datetime
    call_id: str | None = None
    reason: str | None = None  # why, while not ready

    @property
    def seconds(self) -> float:
        return max(0.0, (self.end - self.start).total_seconds())

    @property
    def label(self) -> str:
        return status_label(self.status, self.reason)


@dataclass
class AgentDay:
    day_start: datetime
    until: datetime
    stretches: list[Stretch] = field(default_factory=list)
    calls: list[tuple[str, datetime]] = field(default_factory=list)  # (call id, taken at)
    capped: bool = False  # more entries than one read holds: the day shown is cut short

    @property
    def totals(self) -> list[tuple[str, float]]:
        """Seconds per status (not ready per reason) over the day so far, as (label,
        seconds), statuses in a fixed order."""
        seconds: dict[tuple[int, str], float] = {}
        for stretch in self.stretches:
            order = DAY_STATUSES.index(stretch.status) if stretch.status in DAY_STATUSES else len(DAY_STATUSES)
            key = (order, stretch.label)
            seconds[key] = seconds.get(key, 0.0) + stretch.seconds
        return [(label, total) for (_order, label), total in sorted(seconds.items())]

    @property
    def bar(self) -> list[tuple[float, float, Stretch]]:
        """(x, width, stretch) on a 0..1000 scale from the start of the day to now."""
        span = max(1.0, (self.until - self.day_start).total_seconds())
        return [
            (round((s.start - self.day_start).total_seconds() / span * 1000, 2), round(s.seconds / span * 1000, 2), s)
            for s in self.stretches
        ]


def _first_stretch(
    trail: AuditTrail, item: str, entries: list, day_start: datetime, moment: datetime, current_status: str
) -> Stretch:
    """The status the day began in: what the first entry of today changed, or the last
    entry before today said (the status now when neither says)."""
    if entries:
        first = entries[0]
        before = first.before or {}
        start = day_start if first.before else (first.moment or day_start)  # created today: from then
        status, call_id, reason = before.get("status"), before.get("call_id"), before.get("reason")
    else:
        earlier = trail.before(item, day_start)
        after = (earlier.after or {}) if earlier else {}
        start, status, call_id, reason = day_start, after.get("status"), after.get("call_id"), after.get("reason")
    return Stretch(status or current_status, start, moment, call_id, reason or None)


def _through_the_day(day: AgentDay, stretch: Stretch, entries: list) -> Stretch:
    """Today's entries in order: each change of status (or reason, or call) ends a
    stretch; each call taken is counted. Returns the stretch still going on."""
    for entry in entries:
        after = entry.after or {}
        at = entry.moment or stretch.start
        if entry.call_taken:
            day.calls.append((entry.call_taken, at))
        if "status" not in after and "reason" not in after:
            continue
        status = after.get("status", stretch.status)
        reason = (after.get("reason") or None) if "reason" in after else stretch.reason
        reason = reason if status == AgentStatus.NOT_READY else None
        if (status, reason) != (stretch.status, stretch.reason) or after.get("call_id") != stretch.call_id:
            stretch.end = at
            day.stretches.append(stretch)
            stretch = Stretch(status, at, day.until, after.get("call_id"), reason)
    return stretch


def agent_day(
    trail: AuditTrail,
    agent_id: str,
    *,
    current_status: str,
    current_since: str | None = None,
    current_call: str | None = None,
    call_started: str | None = None,
    current_reason: str | None = None,
) -> AgentDay:
    """Today's stretches (the centre's day, from its midnight) of queued, attending,
    wrap-up and offline, from the agent's audit entries (one Query of the index, and one
    Limit-1 Query for the status the day began in when nothing happened yet today) and
    what the agent's and the current call's records say now (`current_*`, `call_started`:
    the call's assigned_at, read by the caller with one GetItem)."""
    moment = trail.clock()
    day_start = centre_day_start(moment)
    item = target("agent", agent_id)
    entries = trail.day_of(item, day_start, limit=DAY_ENTRY_LIMIT)
    day = AgentDay(day_start, moment, capped=len(entries) >= DAY_ENTRY_LIMIT)
    stretch = _first_stretch(trail, item, entries, day_start, moment, current_status)
    stretch = _through_the_day(day, stretch, entries)
    # What the records say now wins over the trail's last word (a change made outside the
    # audited path, or an entry not written): from its own time when later than the trail.
    since = from_iso(call_started if current_status == AgentStatus.ATTENDING and call_started else current_since)
    changed = current_status != stretch.status or (
        current_status == AgentStatus.NOT_READY and current_reason != stretch.reason
    )
    if changed or (current_call and current_call != stretch.call_id):
        at = max(since, stretch.start) if since else moment
        stretch.end = at
        day.stretches.append(stretch)
        stretch = Stretch(current_status, at, moment, current_call, current_reason)
    day.stretches.append(stretch)
    day.stretches = [s for s in day.stretches if s.seconds > 0 or s is stretch]
    return day
