"""What queueing theory predicts for a steady stretch of a contact centre's day.

Erlang C (M/M/c): callers arrive at random (Poisson, `rate` a second), `agents` agents
each take a call of exponential length (mean `handle` seconds), callers wait as long as
it takes. Erlang A (M/M/c+M): callers also give up after an exponential patience (mean
`patience` seconds). Both from the birth-death chain of the number of callers in the
centre, which for Erlang C is the textbook closed form (`erlang_c` checks one against
the other in the tests).

Figures, for a caller arriving at a random moment (PASTA: arrivals see the chain's
steady state): `wait_probability` (finds every agent busy), `mean_wait` (seconds in line,
until answered or gone), `abandon_probability`, and under Erlang C `service_level(t)`,
P(wait <= t), and `asa` (the mean wait of the answered, which is every caller there).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass


@dataclass(frozen=True)
class Prediction:
    agents: int
    offered_load: float  # erlangs: rate x handle
    wait_probability: float
    mean_wait: float  # seconds, every caller (answered or not)
    abandon_probability: float
    asa: float | None  # seconds, the answered callers' mean wait (Erlang C only)
    threshold: float
    service_level: float | None  # P(wait <= threshold) (Erlang C only)


def erlang_c(agents: int, load: float) -> float:
    """The probability that a caller waits, in closed form (Erlang B's recursion, then C)."""
    if load >= agents:
        return 1.0
    blocking = 1.0
    for n in range(1, agents + 1):
        blocking = load * blocking / (n + load * blocking)
    return blocking / (1 - (load / agents) * (1 - blocking))


def predict(agents: int, rate: float, handle: float, threshold: float, patience: float | None = None) -> Prediction:
    """Erlang C (no `patience`) or Erlang A for `rate` callers a second and `agents` agents."""
    if agents < 1 or rate <= 0 or handle <= 0:
        raise ValueError("a steady stretch needs agents, callers and a handle time")
    load = rate * handle
    if patience is None:
        if load >= agents:
            raise ValueError(f"{load:.2f} erlangs on {agents} agents: the line grows without end (Erlang C)")
        waits = erlang_c(agents, load)
        drain = agents / handle - rate  # how fast the line empties, a second
        return Prediction(
            agents,
            load,
            waits,
            waits / drain,
            0.0,
            waits / drain,
            threshold,
            1 - waits * math.exp(-drain * threshold),
        )
    in_line = _chain(agents, rate, 1 / handle, 1 / patience)
    waiting = sum(p for n, p in enumerate(in_line) if n >= agents)
    queued = sum((n - agents) * p for n, p in enumerate(in_line) if n > agents)
    return Prediction(agents, load, waiting, queued / rate, queued / patience / rate, None, threshold, None)


def _chain(agents: int, rate: float, service: float, giving_up: float) -> list[float]:
    """The steady-state probabilities of n callers in the centre (n = 0, 1, ...), cut where
    they no longer count."""
    weights, weight, n = [1.0], 1.0, 0
    while True:
        n += 1
        weight *= rate / (min(n, agents) * service + max(n - agents, 0) * giving_up)
        weights.append(weight)
        if n > agents and weight < 1e-16 * sum(weights):
            break
        if n > 100_000:
            raise ValueError("the chain does not settle: give the callers a patience")
    total = sum(weights)
    return [w / total for w in weights]


T_975 = {  # Student's t, two-sided 95%, by degrees of freedom
    1: 12.706,
    2: 4.303,
    3: 3.182,
    4: 2.776,
    5: 2.571,
    6: 2.447,
    7: 2.365,
    8: 2.306,
    9: 2.262,
    10: 2.228,
    11: 2.201,
    12: 2.179,
    13: 2.160,
    14: 2.145,
    15: 2.131,
    16: 2.120,
    17: 2.110,
    18: 2.101,
    19: 2.093,
    20: 2.086,
}


def batch_means(values: list[float]) -> tuple[float, float]:
    """(mean, half-width of its 95% confidence interval) of one figure measured in each of
    several consecutive batches of a steady run: the batches are long enough to be about
    independent, so Student's t over them holds where callers one by one do not."""
    batches = len(values)
    if batches < 2:
        raise ValueError("batch means need two batches or more")
    mean = sum(values) / batches
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (batches - 1))
    return mean, T_975[min(batches - 1, 20)] * spread / math.sqrt(batches)


def fifo(callers: list[tuple[float, float, float | None]], agents: int) -> list[tuple[float, bool]]:
    """The ideal queue those theories describe, fed given callers (arrival, handle time,
    patience) in arrival order: `agents` agents, first come first served, no agent idle
    while a caller waits, a caller gone once their patience runs out. Returns each caller's
    (seconds waited, answered)."""
    events = [(at, 1, n) for n, (at, _handle, _patience) in enumerate(callers)]  # 0 an ending, 1 an arrival
    heapq.heapify(events)
    free, line, lived = agents, deque(), [(0.0, False)] * len(callers)
    while events:
        moment, kind, n = heapq.heappop(events)
        if kind == 1 and free:
            free -= 1
            lived[n] = (0.0, True)
            heapq.heappush(events, (moment + callers[n][1], 0, n))
        elif kind == 1:
            line.append(n)
            if callers[n][2] is not None:
                heapq.heappush(events, (moment + callers[n][2], 2, n))
        elif kind == 2:
            if n in line:
                line.remove(n)
                lived[n] = (moment - callers[n][0], False)
        elif line:
            m = line.popleft()
            lived[m] = (moment - callers[m][0], True)
            heapq.heappush(events, (moment + callers[m][1], 0, m))
        else:
            free += 1
    return lived
