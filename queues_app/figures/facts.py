"""Call facts: what the service-level figures are made of, written by the change itself.

A change that answers a call, ends it or lets it go unanswered also puts, in its own
transaction, one small item saying so (a fact). `figures/tally.py` adds facts to the
figures and deletes them in one transaction of its own, so that a fact is counted once
or not yet, never twice and never lost: a process that dies after its change has left
the fact behind, and whoever tallies next counts it. Design and cost: docs/scale.md,
"Counting every call once".

Items in the metrics table (no TTL: a fact stays until it is counted):

    pk FACT#<n>         sk <call id>#<kind>            n = a hash of the call id over 32 partitions
    pk AGENT_FACT#<n>   sk <agent id>#<at>#status      n = a hash of the agent id over 32

Attributes: `kind` (offered, answered, abandoned, overflowed, ended, refused, and a queued
callback's requested, connected, failed), `call_id`, `line`
(the call's line, when it has one: its figures by the line's promise), `at` (when it
happened: the interval it counts in), and for an offered, answered or abandoned call
`combination` (what the caller asked for, `Spanish#any`) and `seconds` (the wait; none
for an offered call); an answered call's `agent_id`. An ended call's handle time
and combination come from the call's record when it is counted (a fact that carries
them is counted with them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal
from queues_app.ddb.shards import Spread
from queues_app.figures import counters

ANSWERED, ABANDONED, ENDED = "answered", "abandoned", "ended"
OFFERED = "offered"  # a caller entered the line (counted in the interval they arrived in)
OVERFLOWED = "overflowed"  # a caller past their line's limit was ended unanswered (its overflow's `end`)
REFUSED = "refused"  # a caller their line turned away (closed, or full with nowhere to go): never offered
# Queued callbacks (calls/queued_callbacks.py): asked for; connected (its `seconds` from the
# request to the connection); not reached in its line's attempts.
CALLBACK_REQUESTED, CALLBACK_CONNECTED, CALLBACK_FAILED = "callback_requested", "callback_connected", "callback_failed"
KINDS = (
    OFFERED,
    ANSWERED,
    ABANDONED,
    ENDED,
    OVERFLOWED,
    REFUSED,
    CALLBACK_REQUESTED,
    CALLBACK_CONNECTED,
    CALLBACK_FAILED,
)
# Each fact is written once and deleted once: 32 partitions keep each under a tenth of its
# write limit at 1,000 calls a second (docs/scale.md).
FACTS = Spread("FACT", 32)
# An agent's changes of status, about three a call, in partitions of their own: with the
# calls' in the same 32, each would take about 650 WCU at 1,000 calls a second.
STATUS_FACTS = Spread("AGENT_FACT", 32)


def combination_name(combination: str | Mapping | Sequence | None) -> str:
    """`{"language": "Spanish", "gender": None}`, `("Spanish", None)` or `"Spanish#any"`
    -> `"Spanish#any"`: the values in the order of the skill dimensions, `any` for no
    preference."""
    if isinstance(combination, str) or combination is None:
        return combination or "any"
    values = combination.values() if isinstance(combination, Mapping) else combination
    return "#".join(str(v) if v is not None else "any" for v in values) or "any"


def partition(call_id: str) -> str:
    return FACTS.of(call_id)


def partitions() -> list[str]:
    """Every partition a fact may wait in: the calls' and the agents'."""
    return FACTS.partitions() + STATUS_FACTS.partitions()


def key(call_id: str, kind: str) -> dict[str, str]:
    return {"pk": partition(call_id), "sk": f"{call_id}#{kind}"}


def item(
    kind: str,
    call_id: str,
    at: str,
    combination=None,
    seconds: float | None = None,
    line: str | None = None,
    agent: str | None = None,
) -> dict:
    if kind not in KINDS:
        raise ValueError(f"a call fact is one of {', '.join(KINDS)}, not {kind!r}")
    fact: dict = {**key(call_id, kind), "kind": kind, "call_id": call_id, "at": at}
    if line:
        fact["line"] = line
    if agent and kind == ANSWERED:  # who answered: the agents' report counts it for them
        fact["agent_id"] = agent
    if kind != ENDED or seconds is not None:  # an ended call's are read from its record
        fact["combination"] = combination_name(combination)
        fact["seconds"] = round(max(0.0, float(seconds or 0.0)), 3)
    return fact


def put_action(db: Dynamo, fact: dict) -> dict:
    """The Put of a fact (`item`, `status_item`), for the change's own transaction. This
    process's next flush counts it (`counters.Recorder.expect_fact`); if the transaction
    fails, there is nothing to count and the flush forgets the key."""
    counters.recorder.expect_fact(fact["pk"], fact["sk"])
    return {"Put": {"TableName": db.table("metrics"), "Item": marshal(fact)}}


# An agent's change of status is a fact too: the agents' report (figures/agent_days.py)
# adds the time spent in the status left, the call handled or missed, and the not ready
# begun. Keyed by the agent: `AGENT_FACT#<n>` / `<agent id>#<at>#status`.
STATUS = "status"


def status_item(change) -> dict:
    """The fact of a change of an agent's status (`agents.records.StatusChange`)."""
    fact: dict = {
        "pk": STATUS_FACTS.of(change.agent_id),
        "sk": f"{change.agent_id}#{change.at}#{STATUS}",
        "kind": STATUS,
        "agent_id": change.agent_id,
        "name": change.name,
        "from": change.was,
        "to": change.to,
        "at": change.at,
    }
    optional = {
        "since": change.since,
        "from_reason": change.was_reason,
        "reason": change.reason,
        "call_id": change.call_id,
    }
    fact.update({name: value for name, value in optional.items() if value})
    return fact
