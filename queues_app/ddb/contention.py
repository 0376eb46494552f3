"""How often this process has lately lost races for the same item.

Matchers and consumers that read the same head of a queue collide; when they have been
colliding lately, they start at a random one of the first few entries instead of all at
the head. With few workers at once the level stays near zero and the head goes first.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")

THRESHOLD = 0.25


class ContentionGauge:
    """An exponentially weighted share of recent attempts that lost a race, which also
    fades with time (half-life `half_life` seconds): a burst of contention a while ago
    says nothing about now."""

    def __init__(self, weight: float = 0.1, half_life: float = 0.5):
        self.weight = weight
        self.half_life = half_life
        self._level = 0.0
        self._at = time.monotonic()

    @property
    def level(self) -> float:
        return self._level * 0.5 ** ((time.monotonic() - self._at) / self.half_life)

    def observe(self, *, lost: bool) -> None:
        # A racy read-modify-write between threads only blurs an estimate; no lock needed.
        current = self.level
        self._level = current + self.weight * ((1.0 if lost else 0.0) - current)
        self._at = time.monotonic()

    def reset(self) -> None:
        self._level = 0.0

    @property
    def contended(self) -> bool:
        return self.level > THRESHOLD

    def order(self, entries: Sequence[T], rng: random.Random | None = None) -> list[T]:
        """The order to try entries in: the head first unless contended, the rest shuffled
        (after a lost race, those who lost it should not all try the same next one)."""
        shuffle = rng.shuffle if rng else random.shuffle
        entries = list(entries)
        if not entries:
            return entries
        if self.contended:
            shuffle(entries)
            return entries
        head, rest = entries[0], entries[1:]
        shuffle(rest)
        return [head, *rest]
