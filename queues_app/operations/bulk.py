"""Bulk actions: a selection of items, each as the list showed it (`Seen`); what the
action would do to each, read from the items as they are now (`Effect`, for the
confirmation); and what it did (`BulkReport`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from queues_app.agents.records import AgentStatus
from queues_app.ddb import errors, replay
from queues_app.shipments.queue import ShipmentState

# Why a bulk action passes over an item: (said of one, said of several).
Reason = tuple[str, str]
GONE: Reason = ("no longer exists", "no longer exist")
CHANGED_SINCE: Reason = ("changed since you looked", "changed since you looked")
DONE_ALREADY: Reason = ("was done already (by this same request)", "were done already (by this same request)")
CHANGED_LISTED = 10  # items changed since they were shown, named in a bulk action's message

AGENT_REASONS: dict[str, dict[str, Reason]] = {
    "available": {
        AgentStatus.QUEUED: ("is already queued", "are already queued"),
        AgentStatus.ATTENDING: ("is on a call", "are on a call"),
    },
    "release": {
        status: ("is not on a call", "are not on a call") for status in AgentStatus.ALL if status != "attending"
    },
    "offline": {
        AgentStatus.OFFLINE: ("is already offline", "are already offline"),
        AgentStatus.ATTENDING: ("is on a call (release it first)", "are on a call (release them first)"),
    },
}
AGENT_EFFECTS = {"available": "made available", "release": "released", "offline": "logged off"}
NOT_READY_ACTION = "not-ready:"  # + a reason: set the agents not ready for that reason
NOT_READY_REASONS: dict[str, Reason] = {
    AgentStatus.ATTENDING: ("is on a call (release it first)", "are on a call (release them first)")
}


def not_ready_action(reason: str) -> str:
    return f"{NOT_READY_ACTION}{reason}"


def not_ready_reason(action: str) -> str | None:
    """The reason of a bulk action that sets agents not ready (`not-ready:lunch`), else None."""
    if not action.startswith(NOT_READY_ACTION):
        return None
    return action.removeprefix(NOT_READY_ACTION) or None


def agent_action(action: str) -> tuple[dict[str, Reason], str] | None:
    """The statuses a bulk agent action passes over (with why) and what it does, or None
    for an action there is not."""
    reason = not_ready_reason(action)
    if reason:
        return NOT_READY_REASONS, f"set not ready ({reason})"
    if action in AGENT_REASONS:
        return AGENT_REASONS[action], AGENT_EFFECTS[action]
    return None


SHIPMENT_STATES: dict[str, Reason] = {
    ShipmentState.UNDER_CONSTRUCTION: ("is under construction", "are under construction"),
    ShipmentState.READY: ("is in no queue", "are in no queue"),
    ShipmentState.QUEUED: ("is queued", "are queued"),
    ShipmentState.DELAYED: ("is delayed", "are delayed"),
    ShipmentState.PROCESSING: ("is in flight", "are in flight"),
    ShipmentState.COMPLETED: ("is completed", "are completed"),
    ShipmentState.IN_DLQ: ("is in the DLQ already", "are in the DLQ already"),
}
# action -> (what it does, the states it acts on); the same rules as the service's conditions.
SHIPMENT_EFFECTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "restore": ("restored", (ShipmentState.IN_DLQ,)),
    "touch": ("sent to the back", (ShipmentState.QUEUED,)),
    "dlq": (
        "sent to the DLQ",
        (ShipmentState.QUEUED, ShipmentState.DELAYED, ShipmentState.PROCESSING, ShipmentState.READY),
    ),
}
# action -> the change a shipment is left with, from the version shown (shipments/supervising.py).
SHIPMENT_CHANGES: dict[str, Callable[[int], str]] = {
    "restore": lambda version: replay.change_id("restore", version),
    "touch": lambda version: replay.change_id("touch", version),
    "dlq": lambda version: replay.change_id("send-to-the-DLQ", version),
}


@dataclass(frozen=True)
class Seen:
    """An item as a list showed it to the person acting on it: its id, the version shown,
    and, for an agent on a call, that call. A bulk action acts on each item only as seen."""

    item_id: str
    version: int
    call_id: str | None = None

    @classmethod
    def parse(cls, token: str) -> Seen:
        """`<id>/<version>[/<call id>]`, as a list's checkbox carries it (ids never hold a
        slash). InvalidRequest for anything else: the page is older than this version."""
        parts = token.split("/")
        if len(parts) not in (2, 3) or not parts[0] or not parts[1].isdigit():
            raise errors.InvalidRequest(
                "The selection does not say which version of each item you saw; reload the page and select again."
            )
        return cls(parts[0], int(parts[1]), (parts[2] or None) if len(parts) == 3 else None)

    @property
    def token(self) -> str:
        return "/".join([self.item_id, str(self.version), *([self.call_id] if self.call_id else [])])


def agent_change(action: str, seen: Seen) -> str:
    """The change a bulk agent action leaves on an agent, from the version (or call) shown."""
    if action == "release":
        return replay.change_id("end", seen.call_id or "", "queue")
    return replay.change_id(action, seen.version)


def _count(n: int, singular: str, plural: str) -> str:
    return f"{n} {singular if n == 1 else plural}"


def _reason(n: int, reason: Reason, changed: list[tuple[str, str]]) -> str:
    """ "2 are on a call"; those changed since they were shown are named with what they are now."""
    text = _count(n, *reason)
    if reason == CHANGED_SINCE and changed:
        named = "; ".join(f"{name}: {now}" for name, now in changed[:CHANGED_LISTED])
        text += f" ({named}{'; ...' if len(changed) > CHANGED_LISTED else ''})"
    return text


@dataclass
class Effect:
    """What a bulk action would do to each selected item, read from the items as they are
    now: the ids it would change, the others grouped by why it would pass them over, and
    those changed since they were shown, by name with what they are now."""

    did: str  # what happens to the ones it changes: "released"
    acting: list[Seen] = field(default_factory=list)
    passed: dict[Reason, list[str]] = field(default_factory=dict)
    changed: list[tuple[str, str]] = field(default_factory=list)  # (name, what it is now)

    @property
    def selected(self) -> int:
        return len(self.acting) + sum(len(ids) for ids in self.passed.values())

    def pass_over(self, item_id: str, reason: Reason) -> None:
        self.passed.setdefault(reason, []).append(item_id)

    def changed_since(self, item_id: str, name: str, now: str) -> None:
        self.pass_over(item_id, CHANGED_SINCE)
        self.changed.append((name, now))

    def reasons(self) -> list[str]:
        return [_reason(len(ids), reason, self.changed) for reason, ids in self.passed.items()]

    @property
    def question(self) -> str:
        """For the confirmation: "3 selected; 1 will be released, 2 are not on a call"."""
        will = f"{len(self.acting)} will be {self.did}" if self.acting else f"none will be {self.did}"
        return "; ".join([f"{self.selected} selected", ", ".join([will, *self.reasons()])])

    def apply(self, action: Callable[[Seen], object]) -> BulkReport:
        """Act on each item it acts on; one item's conflict does not stop the rest, an
        outage stops the batch (what was done is in the report and the trail)."""
        report = BulkReport(did=self.did, passed=self.passed, changed=self.changed)
        for seen in {s.item_id: s for s in self.acting}.values():
            try:
                action(seen)
                report.done.append(seen.item_id)
            except (errors.Unavailable, errors.Throttled, errors.TableMissing):
                raise
            except errors.DynamoError as exc:
                report.skipped.append((seen.item_id, exc.message))
        report.skipped += [(i, reason[0]) for reason, ids in self.passed.items() for i in ids]
        return report


@dataclass
class BulkReport:
    """What a bulk action did: the ids it changed, and why it skipped the others (those it
    passed over from the start, grouped in `passed`, those changed since they were shown,
    by name, and those that failed)."""

    done: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    did: str = "done"
    passed: dict[Reason, list[str]] = field(default_factory=dict)
    changed: list[tuple[str, str]] = field(default_factory=list)

    @property
    def summary(self) -> str:
        passed = {i for ids in self.passed.values() for i in ids}
        failed = [(i, why) for i, why in self.skipped if i not in passed]
        reasons = (_reason(len(ids), r, self.changed) for r, ids in self.passed.items())
        text = ", ".join([f"{len(self.done)} {self.did}", *reasons])
        if failed:
            text += f", {len(failed)} failed ({'; '.join(f'{i}: {why}' for i, why in failed[:3])}"
            text += ", ..." if len(failed) > 3 else ""
            text += ")"
        return text


def each_seen(selection: Iterable[Seen]) -> dict[str, Seen]:
    """The selection by id, each item once (the last time it was shown)."""
    return {s.item_id: s for s in selection}
