"""The one place that builds the call-center table's keys: agents, queue metadata and
messages, waiting callers and their counts, calls, and the keys of the sparse indexes
agents and waiting callers carry. The layout, and why each is spread the way it is:
docs/architecture.md, "Key layout of every table" and "The waiting line".
"""

from __future__ import annotations

from queues_app.ddb.shards import Spread

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
LINE_WAITING_PREFIX = "LINEWAIT#"
LINE_MARK = "#line="
LINE_WAITING_SK = "COUNT"
CALL_PREFIX = "CALL#"
CALL_SK = "CALL"
LEASE_PK = "LEASE"
# The last upgrade step the table has had (queues_app/upgrades).
LAYOUT = {"pk": "LAYOUT", "sk": "LAYOUT"}
# The API tokens whose callbacks hear of every agent (a string set, `tokens`).
AGENT_LISTENERS = {"pk": "CALLBACKS", "sk": "AGENTS"}
MAX_PRIORITY = 9


# Spread, so that no single partition takes every agent's writes (docs/scale.md).
AGENTS = Spread(AGENTS_PK, AGENT_SHARDS)
QUEUE_METAS = Spread(QUEUES_PK, QUEUE_META_SHARDS)
LINE = Spread("LINE", LINE_SHARDS)
# Calls offered to an agent and not picked up yet (ANSWER_TIMEOUT_SECONDS), by deadline:
# written and deleted once per assignment, so spread like the line.
OFFERS = Spread("OFFER", 16)
# Queued callbacks not reached, each until it enters the line again (calls/queued_callbacks.py).
CALLBACK_RETRIES = Spread("CALLBACKRETRY", 4)


def agent(agent_id: str) -> dict[str, str]:
    return {"pk": AGENTS.of(agent_id), "sk": AGENT_PREFIX + agent_id}


def agent_partitions() -> list[str]:
    return AGENTS.partitions()


def status_spread(status: str) -> Spread:
    """A status's partitions of the status index: `queued#0` .. `queued#7`."""
    return Spread(status, STATUS_SHARDS)


def status_partition(status: str, agent_id: str) -> str:
    """The agent's partition of the status index: `queued#3`."""
    return status_spread(status).of(agent_id)


def status_partitions(status: str) -> list[str]:
    return status_spread(status).partitions()


def agent_id_from_sk(sk: str) -> str:
    return sk.removeprefix(AGENT_PREFIX)


def queue_name(combination: tuple[str, ...]) -> str:
    """`("Spanish", "M")` -> `"Q#Spanish#M"`, in the order of the skill dimensions."""
    return QUEUE_PREFIX + "#".join(combination)


def queue_meta(combination: tuple[str, ...], shard: int = 0) -> dict[str, str]:
    """One of a queue's metadata counters. Every enqueue and dequeue adds to a counter
    picked at random, so that no single partition takes every queue's writes
    (docs/scale.md); the depth and version are the sums over the shards."""
    return {"pk": QUEUE_METAS.partition(shard), "sk": queue_name(combination)}


def queue_meta_partitions() -> list[str]:
    return QUEUE_METAS.partitions()


def queue_token(queued_at: str, agent_id: str) -> str:
    """Sort key of an agent's message items: time order, unique per enqueue."""
    return f"{queued_at}#{agent_id}"


def queue_message(combination: tuple[str, ...], token: str) -> dict[str, str]:
    """A message item, in the sub-queue a hash of its token picks: whoever writes or
    deletes it finds the same partition from the token alone. One partition per queue
    would take more than half of DynamoDB's per-partition write limit at 1,000 calls a
    second (docs/scale.md); the readers merge the sub-queues' heads by token."""
    return {"pk": sub_queues(combination).of(token), "sk": token}


def sub_queues(combination: tuple[str, ...]) -> Spread:
    """A queue's sub-queues: `Q#Spanish#F@0` .. `@3`."""
    return Spread(queue_name(combination), QUEUE_SPLIT, SUB_QUEUE_SEPARATOR)


def queue_partitions(combination: tuple[str, ...]) -> list[str]:
    """The partitions of a queue's sub-queues."""
    return sub_queues(combination).partitions()


def queue_of_partition(pk: str) -> str:
    """`"Q#Spanish#F@2"` -> `"Q#Spanish#F"`; an unsplit queue partition (an earlier
    version's) is its own name."""
    return pk.rsplit(SUB_QUEUE_SEPARATOR, 1)[0]


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
    return LINE.of(call_id)


def line_shards() -> list[str]:
    return LINE.partitions()


def wait_since(arrived_at: str, call_id: str, line_id: str | None) -> str:
    """A waiting caller's sort key in the line by arrival: when they arrived, then (for the
    same moment) their call id, and their line, so that a read by arrival knows each
    caller's line without reading the call (the index holds keys only)."""
    return f"{arrived_at}#{call_id}" + (f"{LINE_MARK}{line_id}" if line_id else "")


def parse_wait_since(value: str) -> tuple[str, str | None]:
    """(arrival, line or None) of a `wait_since`."""
    rest, mark, line_id = value.partition(LINE_MARK)
    return rest.split("#", 1)[0], (line_id if mark else None)


def line_waiting(line_id: str) -> dict[str, str]:
    """How many callers wait on a line (lines/): exact, changed in the transaction of every
    arrival and departure, and the condition that keeps a line under its `max_waiting`.
    One partition per line: two writes per caller, so one line takes up to about 500
    callers a second (docs/scale.md)."""
    return {"pk": LINE_WAITING_PREFIX + line_id, "sk": LINE_WAITING_SK}


def call(call_id: str) -> dict[str, str]:
    return {"pk": CALL_PREFIX + call_id, "sk": CALL_SK}


def preferred(agent_id: str, call_id: str) -> dict[str, str]:
    """A waiting caller's note that they prefer this agent (read when the agent comes back):
    in the agent's own partition, expiring with the preference."""
    return {"pk": f"PREFER#{agent_id}", "sk": call_id}


def offer(call_id: str, deadline: str) -> dict[str, str]:
    """An offered call's item: its partition by call id, sorted by when the offer runs out."""
    return {"pk": OFFERS.of(call_id), "sk": f"{deadline}#{call_id}"}


def offer_deadline(offer_sk: str) -> str:
    """When the offer of this sort key runs out (ISO 8601)."""
    return offer_sk.split("#", 1)[0]


def callback_retry(call_id: str, retry_at: str) -> dict[str, str]:
    """A callback's wait before it is dialled again: by call id, sorted by when it is due."""
    return {"pk": CALLBACK_RETRIES.of(call_id), "sk": f"{retry_at}#{call_id}"}


def callback_number(line_id: str, number: str) -> dict[str, str]:
    """The marker of a number's scheduled callback on a line: one at a time."""
    return {"pk": f"CALLBACKNUMBER#{line_id}#{number}", "sk": "-"}


def offer_partitions() -> list[str]:
    return OFFERS.partitions()


def lease(name: str) -> dict[str, str]:
    return {"pk": LEASE_PK, "sk": name}
