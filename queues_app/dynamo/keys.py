"""The one place that builds primary keys.

Call-center table layout (pk / sk):

    AGENTS          AGENT#<agent_id>       an agent (one partition, so listing is a Query)
    QUEUES          Q#<value>#<value>...   metadata of one skill-combination queue
"""

from __future__ import annotations

AGENTS_PK = "AGENTS"
AGENT_PREFIX = "AGENT#"
QUEUES_PK = "QUEUES"
QUEUE_PREFIX = "Q#"


def agent(agent_id: str) -> dict[str, str]:
    return {"pk": AGENTS_PK, "sk": AGENT_PREFIX + agent_id}


def agent_id_from_sk(sk: str) -> str:
    return sk.removeprefix(AGENT_PREFIX)


def queue_name(combination: tuple[str, ...]) -> str:
    """`("Spanish", "M")` -> `"Q#Spanish#M"`, in the order of the skill dimensions."""
    return QUEUE_PREFIX + "#".join(combination)


def queue_meta(combination: tuple[str, ...]) -> dict[str, str]:
    return {"pk": QUEUES_PK, "sk": queue_name(combination)}
