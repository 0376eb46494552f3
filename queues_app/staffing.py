"""Staffing advice by Erlang C: how many agents a queue needs to answer a share of its
calls within a time, and what a given number of agents would achieve.

Erlang C, as in ITU-T Recommendation E.600 and Koole, Call Center Optimization (2013),
ch. 4: the M/M/N queue (calls arrive at random, handle times are exponential, callers
wait as long as it takes). With A the traffic, N the agents, t the answer time and AHT
the average handle time:

    A             = calls per hour x AHT / 3600                  (erlangs)
    Pw            = N B / (N - A (1 - B))                         (a call waits)
    service level = 1 - Pw exp(-(N - A) t / AHT)                  (answered within t)
    ASA           = Pw AHT / (N - A)                              (average wait)
    occupancy     = A / N

where B is Erlang B's loss for N servers, B(0) = 1, B(k) = A B(k-1) / (k + A B(k-1)):
the recursion stays within [0, 1], where the textbook form's A^N / N! overflows a float
beyond about 170 agents. Only N > A is a queue that empties; at N <= A it grows
without end. Erlang C leaves out callers who hang up, so it errs towards more agents.

Pure arithmetic: no Django, no DynamoDB, so the overview and the reports can use it too.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from queues_app.text import counted

SECONDS_PER_HOUR = 3600.0
# Figures computed in floating point that land on a target must meet it, not miss it by
# 1e-16: 21 agents over 1 - 0.3 of them present is 30.000000000000004, not 31 to schedule.
TOLERANCE = 1e-9


class UnstableQueue(ValueError):
    """Fewer agents than erlangs of traffic: the calls arrive faster than they are
    handled, the line grows without end, and no service level or wait can be given."""

    def __init__(self, agents: int, traffic: float):
        self.agents = agents
        self.traffic = traffic
        self.needed = minimum_stable_agents(traffic)
        super().__init__(
            f"Unstable queue: {counted(agents, 'agent')} for {counted(traffic, 'erlang')} of traffic: calls arrive "
            "at least as fast as they are handled and the line grows without end (service level 0, no average "
            "speed of answer); "
            f"at least {counted(self.needed, 'agent')} {'is' if self.needed == 1 else 'are'} needed."
        )


@dataclass(frozen=True)
class Staffing:
    """What `agents` agents achieve on a queue, by Erlang C."""

    agents: int
    agents_with_shrinkage: int  # to schedule, so that `agents` are on the phones
    service_level: float  # share of calls answered within the answer time
    asa_seconds: float  # average speed of answer, over all calls
    wait_probability: float  # share of calls that wait at all
    occupancy: float  # share of the agents' time on calls
    traffic_erlangs: float

    def as_dict(self) -> dict[str, int | float]:
        return {
            "agents": self.agents,
            "agents_with_shrinkage": self.agents_with_shrinkage,
            "service_level": self.service_level,
            "asa_seconds": self.asa_seconds,
            "wait_probability": self.wait_probability,
            "occupancy": self.occupancy,
            "traffic_erlangs": self.traffic_erlangs,
        }


def traffic_erlangs(calls_per_hour: float, aht_seconds: float) -> float:
    """Hours of handling that arrive per hour."""
    return calls_per_hour * aht_seconds / SECONDS_PER_HOUR


def minimum_stable_agents(traffic: float) -> int:
    """The fewest agents under which the line does not grow without end: more than A."""
    return math.floor(traffic) + 1


def with_shrinkage(agents: int, shrinkage: float) -> int:
    """Agents to schedule so that `agents` are available when a share `shrinkage` of
    the time goes to breaks, training, meetings and absence."""
    return math.ceil(agents / (1.0 - shrinkage) - TOLERANCE)


def _erlang_b(agents: int, traffic: float) -> Iterator[tuple[int, float]]:
    """(n, Erlang B loss for n servers) for n = 1, 2, ... by the recursion: each next
    agent count costs one step, so a search upwards is linear in the agents."""
    loss = 1.0
    n = 0
    while True:
        n += 1
        loss = traffic * loss / (n + traffic * loss)
        if n >= agents:
            yield n, loss


def _figures(
    agents: int, loss: float, traffic: float, aht_seconds: float, answer_within_seconds: float, shrinkage: float
) -> Staffing:
    spare = agents - traffic
    wait = agents * loss / (agents - traffic * (1.0 - loss))
    return Staffing(
        agents=agents,
        agents_with_shrinkage=with_shrinkage(agents, shrinkage),
        service_level=1.0 - wait * math.exp(-spare * answer_within_seconds / aht_seconds),
        asa_seconds=wait * aht_seconds / spare,
        wait_probability=wait,
        occupancy=traffic / agents,
        traffic_erlangs=traffic,
    )


def wait_probability(agents: int, traffic: float) -> float:
    """Erlang C: the probability that a call waits, for `agents` > `traffic`."""
    if agents <= traffic:
        raise UnstableQueue(agents, traffic)
    _, loss = next(_erlang_b(agents, traffic))
    return agents * loss / (agents - traffic * (1.0 - loss))


def for_agents(
    agents: int,
    *,
    calls_per_hour: float,
    aht_seconds: float,
    answer_within_seconds: float,
    shrinkage: float = 0.0,
) -> Staffing:
    """What `agents` agents achieve. Raises `UnstableQueue` when they are no more than
    the traffic."""
    traffic = traffic_erlangs(calls_per_hour, aht_seconds)
    if agents <= traffic:
        raise UnstableQueue(agents, traffic)
    _, loss = next(_erlang_b(agents, traffic))
    return _figures(agents, loss, traffic, aht_seconds, answer_within_seconds, shrinkage)


def required(
    *,
    calls_per_hour: float,
    aht_seconds: float,
    answer_within_seconds: float,
    service_level: float,
    max_occupancy: float | None = None,
    shrinkage: float = 0.0,
) -> Staffing:
    """The fewest agents that answer `service_level` of the calls within
    `answer_within_seconds` and, when given, keep occupancy at most `max_occupancy`.

    The service level rises with every agent added towards 1 and the occupancy falls,
    so the first agent count from A upwards that meets both is the answer."""
    if not 0.0 < service_level < 1.0:
        raise ValueError(f"the service level is a share above 0 and below 1, not {service_level:g}")
    if max_occupancy is not None and not 0.0 < max_occupancy <= 1.0:
        raise ValueError(f"the maximum occupancy is a share above 0 and at most 1, not {max_occupancy:g}")
    traffic = traffic_erlangs(calls_per_hour, aht_seconds)
    if traffic == 0:  # no calls: nobody needed, and nobody waits
        return Staffing(0, 0, 1.0, 0.0, 0.0, 0.0, 0.0)
    for agents, loss in _erlang_b(minimum_stable_agents(traffic), traffic):
        figures = _figures(agents, loss, traffic, aht_seconds, answer_within_seconds, shrinkage)
        if figures.service_level >= service_level - TOLERANCE and (
            max_occupancy is None or figures.occupancy <= max_occupancy + TOLERANCE
        ):
            return figures
    raise AssertionError("unreachable: the service level tends to 1 as agents are added")
