"""A partition key spread over several partitions, so that no one partition takes every
write of a busy key (DynamoDB gives each partition 1,000 write units and 3,000 read units
a second; docs/scale.md): which partition a value goes to, by a stable hash (the same in
every process and on every host), and every partition of the key, for readers that read
them all and merge them (`merge.SortedMerge`) or sum them."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


def shard_of(value: str, count: int) -> int:
    """Which of `count` partitions `value` goes to."""
    return int.from_bytes(hashlib.blake2b(value.encode(), digest_size=4).digest()) % count


@dataclass(frozen=True)
class Spread:
    """`base` spread over `count` partitions, named `<base><separator><n>`."""

    base: str
    count: int
    separator: str = "#"

    def partition(self, n: int) -> str:
        return f"{self.base}{self.separator}{n}"

    def of(self, value: str) -> str:
        """The partition `value` goes to."""
        return self.partition(shard_of(value, self.count))

    def partitions(self) -> list[str]:
        """Every partition, in order."""
        return [self.partition(n) for n in range(self.count)]
