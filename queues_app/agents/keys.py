"""The one place that builds primary keys.

Call-center table layout (pk / sk):

    AGENTS#<n>      AGENT#<agent_id>             an agent, in one of AGENT_SHARDS partitions (n: a hash
                                                 of the id); lists go through the agents' indexes
    QUEUES#<n>      Q#<value>#<value>...         one of QUEUE_META_SHARDS counters of a skill-combination
                                                 queue's metadata (depth, version: the sums over n)
    Q#<v>#<v>..@<n> <queued_at>#<agent_id>       a message: an agent waiting in that queue, in one of
                                                 its QUEUE_SPLIT sub-queues (n: a hash of the token);
                                                 the sort key is the agent's queue token
    WAIT#<v>#<v>... <9-priority>#<arrived>#<id>  a caller waiting for an agent, in the partition of
                                                 their preferences (`*` for "any"), by priority then arrival
    WAITCOUNT#<v>.. COUNT                        how many callers wait in that partition, kept in
    WAITCOUNT#<v>..@1                            WAIT_COUNT_COPIES partitions written together (the
                                                 count of `*#*` is read by nearly every agent)
    CALL#<call_id>  CALL                         a call and its assignment record
    LEASE           matching-dispatcher          the matching dispatcher's lease (ddb.lease: holder, address,
                                                 lease_until, generation)

Agents carry `status_q` = `<status>#<n>`, the partition of the `agents_by_status_shard`
index they are in: n is a hash of the agent id over STATUS_SHARDS, so that the agents
moving through one status (every call moves one queued -> attending -> wrap-up) spread
their index writes over 8 partitions. Every write of an agent's status writes it too
(`writes.status_clause`); a status's agents in name order are its partitions merged.

Waiting callers carry keys of two sparse indexes, spread over LINE_SHARDS index
partitions by a hash of the call id: by arrival (`waiting_by_arrival`), and by when
their preferences are next relaxed (`waiting_to_relax`). Design: docs/architecture.md, "The waiting line".
"""

from __future__ import annotations

import hashlib

AGENTS_PK = "AGENTS"  # before the roster was spread over AGENT_SHARDS partitions
AGENT_PARTITION_PREFIX = "AGENTS#"
AGENT_SHARDS = 16
AGENT_PREFIX = "AGENT#"
STATUS_SHARDS = 8
QUEUES_PK = "QUEUES"  # before the metadata was spread over QUEUE_META_SHARDS partitions
QUEUE_META_PREFIX = "QUEUES#"
QUEUE_META_SHARDS = 16
QUEUE_PREFIX = "Q#"
QUEUE_SPLIT = 4
SUB_QUEUE_SEPARATOR = "@"  # not in any skill value, so the queue name is what comes before it
OLD_WAITING_PK = "WAITING"  # the single partition of the line before it was split
WAIT_PREFIX = "WAIT#"
WAIT_COUNT_PREFIX = "WAITCOUNT#"
WAIT_COUNT_SK = "COUNT"
WAIT_COUNT_COPIES = 2
ANY_VALUE = "*"
LINE_SHARDS = 4
CALL_PREFIX = "CALL#"
CALL_SK = "CALL"
LEASE_PK = "LEASE"
MAX_PRIORITY = 9


def _shard(text: str, shards: int) -> int:
    """A stable spread of ids over `shards` partitions (the same in every process)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest()) % shards


def agent(agent_id: str) -> dict[str, str]:
    # Spread, so that no single partition takes every agent's writes (docs/scale.md).
    return {"pk": f"{AGENT_PARTITION_PREFIX}{_shard(agent_id, AGENT_SHARDS)}", "sk": AGENT_PREFIX + agent_id}


def agent_partitions() -> list[str]:
    return [f"{AGENT_PARTITION_PREFIX}{n}" for n in range(AGENT_SHARDS)]


def status_partition(status: str, agent_id: str) -> str:
    """The agent's partition of the status index: `queued#3`."""
    return f"{status}#{_shard(agent_id, STATUS_SHARDS)}"


def status_partitions(status: str) -> list[str]:
    return [f"{status}#{n}" for n in range(STATUS_SHARDS)]


def agent_id_from_sk(sk: str) -> str:
    return sk.removeprefix(AGENT_PREFIX)


def queue_name(combination: tuple[str, ...]) -> str:
    """`("Spanish", "M")` -> `"Q#Spanish#M"`, in the order of the skill dimensions."""
    return QUEUE_PREFIX + "#".join(combination)


def queue_meta(combination: tuple[str, ...], shard: int = 0) -> dict[str, str]:
    """One of a queue's metadata counters. Every enqueue and dequeue adds to a counter
    picked at random, so that no single partition takes every queue's writes
    (docs/scale.md); the depth and version are the sums over the shards."""
    return {"pk": f"{QUEUE_META_PREFIX}{shard}", "sk": queue_name(combination)}


def queue_meta_partitions() -> list[str]:
    return [f"{QUEUE_META_PREFIX}{n}" for n in range(QUEUE_META_SHARDS)]


def queue_token(queued_at: str, agent_id: str) -> str:
    """Sort key of an agent's message items: time order, unique per enqueue."""
    return f"{queued_at}#{agent_id}"


def queue_message(combination: tuple[str, ...], token: str) -> dict[str, str]:
    """A message item, in the sub-queue a hash of its token picks: whoever writes or
    deletes it finds the same partition from the token alone. One partition per queue
    would take more than half of DynamoDB's per-partition write limit at 1,000 calls a
    second (docs/scale.md); the readers merge the sub-queues' heads by token."""
    return {"pk": _sub_queue(queue_name(combination), _shard(token, QUEUE_SPLIT)), "sk": token}


def queue_partitions(combination: tuple[str, ...]) -> list[str]:
    """The partitions of a queue's sub-queues."""
    return [_sub_queue(queue_name(combination), n) for n in range(QUEUE_SPLIT)]


def queue_of_partition(pk: str) -> str:
    """`"Q#Spanish#F@2"` -> `"Q#Spanish#F"`; an unsplit queue partition (an earlier
    version's) is its own name."""
    return pk.rsplit(SUB_QUEUE_SEPARATOR, 1)[0]


def _sub_queue(name: str, n: int) -> str:
    return f"{name}{SUB_QUEUE_SEPARATOR}{n}"


def wait_position(priority: int, arrived_at: str, call_id: str) -> str:
    """Sort key of a waiting caller: higher priority first, then earlier arrival."""
    return f"{MAX_PRIORITY - priority}#{arrived_at}#{call_id}"


def parse_wait_position(position: str) -> tuple[int, str, str]:
    """(priority, arrived_at, call_id) of a waiting caller's sort key."""
    inverted, arrived_at, call_id = position.split("#", 2)
    return MAX_PRIORITY - int(inverted), arrived_at, call_id


def wanted(names: tuple[str, ...], preferences: dict) -> tuple[str, ...]:
    """A caller's preference per dimension, in catalog order, `*` for any (None or absent):
    the name of the waiting-line partition they wait in."""
    return tuple(ANY_VALUE if preferences.get(name) is None else str(preferences[name]) for name in names)


def waiting_caller(wanted: tuple[str, ...], position: str) -> dict[str, str]:
    """A waiting caller's item; `wanted` is their preference per dimension, `*` for any."""
    return {"pk": WAIT_PREFIX + "#".join(wanted), "sk": position}


def waiting_count(wanted: tuple[str, ...], copy: int = 0) -> dict[str, str]:
    """One copy of a waiting partition's count. Every change writes all copies in its
    transaction and a reader reads any one, so that an agent's reads of the busiest counts
    spread over partitions (docs/scale.md). Copy 0 is where the count lived before."""
    pk = WAIT_COUNT_PREFIX + "#".join(wanted)
    return {"pk": f"{pk}@{copy}" if copy else pk, "sk": WAIT_COUNT_SK}


def waiting_count_copy(pk: str) -> tuple[str, int]:
    """(the waiting partition's pk, the copy) of a count item's pk."""
    partition, _, copy = pk.removeprefix(WAIT_COUNT_PREFIX).partition("@")
    return WAIT_PREFIX + partition, int(copy or 0)


def line_shard(call_id: str) -> str:
    """The index partition of a waiting caller: a stable hash of the call id, so that the
    line's index writes spread over LINE_SHARDS partitions."""
    return f"LINE#{_shard(call_id, LINE_SHARDS)}"


def line_shards() -> list[str]:
    return [f"LINE#{n}" for n in range(LINE_SHARDS)]


def call(call_id: str) -> dict[str, str]:
    return {"pk": CALL_PREFIX + call_id, "sk": CALL_SK}


def lease(name: str) -> dict[str, str]:
    return {"pk": LEASE_PK, "sk": name}
