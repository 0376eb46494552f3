"""One side of the routing-steps race, from a process of its own:

    python -m tests.helpers.step_traffic callers SEED COUNT
    python -m tests.helpers.step_traffic line-callers SEED COUNT LINE
    python -m tests.helpers.step_traffic agents SEED AGENT_ID...

with DYNAMODB_ENDPOINT_URL and DYNAMODB_TABLE_PREFIX naming the tables. `callers` places
COUNT French callers whose one step (an hour long) admits only agents at language level 4
or above; `line-callers` places COUNT callers on LINE, with no preference (routing profiles
choose who may take them); `agents` makes the agents named available, in an order of its own. Both start
together (at the next whole second) and print what they did, one line each.
"""

from __future__ import annotations

import os
import random
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from queues_app.centre.call_center import CallCenter  # noqa: E402
from queues_app.routing.escalation import EscalationPolicy  # noqa: E402

STEPS = [{"min_level": {"language": 4}, "seconds": 3600}]


def main(role: str, seed: int, rest: list[str]) -> None:
    rng = random.Random(seed)
    centre = CallCenter(escalation=EscalationPolicy(after_seconds=10**6))
    time.sleep(1 - time.time() % 1)  # every process starts on the same second
    if role == "callers":
        for _ in range(int(rest[0])):
            call, _ = centre.create_call({"language": "French"}, steps=STEPS)
            print(call.call_id, call.status, call.agent_id, flush=True)
            time.sleep(rng.uniform(0, 0.01))
    elif role == "line-callers":
        for _ in range(int(rest[0])):
            call, _ = centre.create_call({}, line=rest[1])
            print(call.call_id, call.status, call.agent_id, flush=True)
            time.sleep(rng.uniform(0, 0.01))
    else:
        rng.shuffle(rest)
        for agent_id in rest:
            outcome = centre.make_available(agent_id)
            print(agent_id, outcome.agent.status, outcome.call.call_id if outcome.call else None, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
