"""In-process claims between the matchers of one process (see docs/architecture.md)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Hashable, Sequence


class Claims:
    """Which entries this process's threads are trying to take right now, which they
    saw taken lately, how many matchers run, and their recent reads of each queue.

    Keys must name one state of an entry that never comes back once gone (a queue
    token). Gone keys are kept `memory` seconds, at most `capacity` of them."""

    def __init__(self, memory: float = 60.0, capacity: int = 4096):
        self.memory = memory
        self.capacity = capacity
        self._changed = threading.Condition()
        self._held: dict[Hashable, int] = {}
        self._gone: OrderedDict[Hashable, float] = OrderedDict()
        self._reads: dict[Hashable, tuple[float, list]] = {}
        self.active = 0  # matchers running right now

    def enter(self) -> None:
        with self._changed:
            self.active += 1

    def leave(self) -> None:
        with self._changed:
            self.active -= 1

    def publish_read(self, key: Hashable, entries: list) -> None:
        """What a read of `key` just returned, for the matchers running at the same moment."""
        with self._changed:
            self._reads[key] = (time.monotonic(), entries)

    def recent_read(self, key: Hashable, max_age: float) -> list | None:
        with self._changed:
            found = self._reads.get(key)
            if found is None or time.monotonic() - found[0] > max_age:
                return None
            return found[1]

    def is_gone(self, key: Hashable) -> bool:
        with self._changed:
            return self._gone_locked(key)

    def _gone_locked(self, key: Hashable) -> bool:
        at = self._gone.get(key)
        if at is None:
            return False
        if time.monotonic() - at > self.memory:
            del self._gone[key]
            return False
        return True

    def is_held(self, key: Hashable) -> bool:
        with self._changed:
            return key in self._held

    def claim(self, key: Hashable) -> bool:
        """Claim `key` unless another thread holds it or it is gone."""
        with self._changed:
            if key in self._held or self._gone_locked(key):
                return False
            self._held[key] = 1
            return True

    def claim_first(self, keys: Sequence[Hashable]) -> int | None:
        """Claim the first key of `keys` that nobody holds and that is not gone; its
        index, or None when there is none."""
        with self._changed:
            for index, key in enumerate(keys):
                if key not in self._held and not self._gone_locked(key):
                    self._held[key] = 1
                    return index
            return None

    def release(self, key: Hashable) -> None:
        """End this thread's claim on `key` (say first with `mark_gone` if it is gone)."""
        with self._changed:
            self._held.pop(key, None)
            self._changed.notify_all()

    def mark_gone(self, key: Hashable) -> None:
        """`key` was taken (by this process or, as a failed condition said, by another)."""
        with self._changed:
            self._gone[key] = time.monotonic()
            self._gone.move_to_end(key)
            while len(self._gone) > self.capacity:
                self._gone.popitem(last=False)

    def wait_while_held(self, keys: Sequence[Hashable], timeout: float) -> bool:
        """Wait until one of `keys` is no longer held by another thread (or `timeout`
        seconds). False on timeout."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while all(key in self._held for key in keys):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
            return True
