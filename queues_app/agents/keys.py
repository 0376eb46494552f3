"""The one place that builds primary keys.

Call-center table layout (pk / sk):

    AGENTS          AGENT#<agent_id>             an agent (one partition: listing is one Query)
    QUEUES          Q#<value>#<value>...         metadata of one skill-combination queue
    Q#<v>#<v>...    <queued_at>#<agent_id>       a message: an agent waiting in that queue;
                                                 the sort key is the agent's queue token
    WAITING         <9-priority>#<arrived>#<id>  a caller waiting for an agent (priority, then arrival)
    CALL#<call_id>  CALL                         a call and its assignment record
"""

from __future__ import annotations

AGENTS_PK = "AGENTS"
AGENT_PREFIX = "AGENT#"
QUEUES_PK = "QUEUES"
QUEUE_PREFIX = "Q#"
WAITING_PK = "WAITING"
CALL_PREFIX = "CALL#"
CALL_SK = "CALL"
MAX_PRIORITY = 9


def agent(agent_id: str) -> dict[str, str]:
    return {"pk": AGENTS_PK, "sk": AGENT_PREFIX + agent_id}


def agent_id_from_sk(sk: str) -> str:
    return sk.removeprefix(AGENT_PREFIX)


def queue_name(combination: tuple[str, ...]) -> str:
    """`("Spanish", "M")` -> `"Q#Spanish#M"`, in the order of the skill dimensions."""
    return QUEUE_PREFIX + "#".join(combination)


def queue_meta(combination: tuple[str, ...]) -> dict[str, str]:
    return {"pk": QUEUES_PK, "sk": queue_name(combination)}


def queue_token(queued_at: str, agent_id: str) -> str:
    """Sort key of an agent's message items: time order, unique per enqueue."""
    return f"{queued_at}#{agent_id}"


def queue_message(combination: tuple[str, ...], token: str) -> dict[str, str]:
    return {"pk": queue_name(combination), "sk": token}


def waiting_caller(priority: int, arrived_at: str, call_id: str) -> dict[str, str]:
    return {"pk": WAITING_PK, "sk": f"{MAX_PRIORITY - priority}#{arrived_at}#{call_id}"}


def call(call_id: str) -> dict[str, str]:
    return {"pk": CALL_PREFIX + call_id, "sk": CALL_SK}
