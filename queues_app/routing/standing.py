"""Where a waiting caller stands: their position (the callers any agent who fits them
takes first, plus one) and an estimate of their wait from how fast such callers have been
answered lately. Design and its measured error: docs/architecture.md, "Where a caller stands"."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from queues_app.agents.skills import ANY
from queues_app.calls.records import Call, CallStatus
from queues_app.centre import keys
from queues_app.ddb.merge import query_each
from queues_app.figures import facts
from queues_app.figures.service_level import ServiceLevelReader
from queues_app.routing.line import WaitingLine

# Below this occupancy the centre's agents are mostly idle: a caller waiting then waits for
# the few agents who fit them, whose pace the centre's occupancy says nothing of.
OCCUPANCY_FLOOR = 0.5


@dataclass(frozen=True)
class Standing:
    position: int
    estimated_wait_seconds: float | None  # None: nobody like them was answered lately (no basis)
    answered_recently: int  # callers like them answered in the last RECENT_MINUTES minutes


def ahead_partitions(names: tuple[str, ...], preferences: dict) -> list[tuple[str, ...]]:
    """The waiting partitions whose callers every agent who fits this caller fits too:
    in each dimension the caller's value or any (only any where the caller said any)."""
    choices = [
        (keys.ANY_VALUE,) if preferences.get(name) in (None, ANY) else (str(preferences[name]), keys.ANY_VALUE)
        for name in names
    ]
    return list(itertools.product(*choices))


def combinations_like(partitions: list[tuple[str, ...]]) -> set[str]:
    """The figures' combination names (`French#any`) of those partitions."""
    return {facts.combination_name([None if v == keys.ANY_VALUE else v for v in p]) for p in partitions}


def standing_of(line: WaitingLine, reader: ServiceLevelReader, call: Call) -> Standing | None:
    """A waiting caller's position and estimated wait (None for a call that does not wait):
    one COUNT Query per partition ahead (4 for two dimensions), run together, and the
    recent figures (one Query). The estimate: the callers ahead at the pace callers like
    them were answered lately, and one answer of any caller's (`answer_rates`), both paces
    taken while the agents are busy (over the occupancy), with callers ahead giving up."""
    if call.status != CallStatus.WAITING or not call.wait_sk:
        return None
    partitions = ahead_partitions(line.catalog.names, call.preferences)
    queries = [
        {
            "TableName": line.table.name,
            "KeyConditionExpression": "pk = :pk AND sk < :me",
            "ExpressionAttributeValues": {
                ":pk": {"S": keys.waiting_caller(p, "")["pk"]},
                ":me": {"S": call.wait_sk},
            },
            "Select": "COUNT",
        }
        for p in partitions
    ]
    ahead = sum(response["Count"] for response in query_each(line.db, queries))
    position = ahead + 1
    rates = reader.answer_rates(combinations_like(partitions))
    estimate = None
    if rates.like and rates.every:
        # The callers ahead go at the pace callers like this one are answered; then this
        # caller's own turn comes at the pace agents free up, which is every answer's. A
        # caller waits while the agents are busy: answers then come as fast as busy agents
        # free up, faster than on average by 1 / occupancy (at 85% occupancy answers come at
        # the arrival rate, 0.85 of the agents' pace: estimates were 18% long).
        busy = min(1.0, max(rates.occupancy or 1.0, OCCUPANCY_FLOOR))
        like, every = rates.like / busy, rates.every / busy
        # Callers ahead also give up: with j of them ahead, the next leaves at the agents'
        # pace plus j times the callers' rate of giving up (Erlang A).
        estimate = round(sum(1 / (like + j * rates.patience) for j in range(1, ahead + 1)) + 1 / every, 1)
    return Standing(position, estimate, rates.answered_like)
