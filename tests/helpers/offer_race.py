"""One side of the answer-against-timeout race, in a process of its own:

    python -m tests.helpers.offer_race answer|result|miss STEP OFFERS_JSON

with DYNAMODB_ENDPOINT_URL and DYNAMODB_TABLE_PREFIX naming the tables. OFFERS_JSON is a
file of [{"call_id", "offer_sk", "agent_id"}]. Once connected the process prints `ready`
and reads START (epoch seconds) from its standard input: both sides start together however
long each took to boot. For the n-th offer, at START + n x STEP, the process either
confirms the call as answered by its agent (`answer`) or takes it as not picked up in time
(`miss`, the sweep's step for one offer); for a queued callback whose agent is reserved,
`result` reports the dialling's result, `connected` for even runs and `busy` for odd ones.
Each side reads the call and the agent before its transaction; one side or the other
starts 0 to 80 ms early, by the run's number, so that either may land first. Prints one
JSON object: {call_id: "won" | "lost"}.
"""

from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from queues_app.centre.call_center import CallCenter  # noqa: E402
from queues_app.ddb import errors  # noqa: E402


def main() -> None:
    side, step, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    with open(path) as handle:
        offers = json.load(handle)
    center = CallCenter()
    center.agents.get(offers[0]["agent_id"])  # connect before the first moment
    print("ready", flush=True)
    start = float(sys.stdin.readline())
    outcome = {}
    for n, offer in enumerate(offers):
        # The miss leads by -80 to 80 ms, by the run's number: both orders come up on a busy machine too,
        # where a request may take tens of milliseconds. `result` reads more: 8 ms more.
        lead = ((n % 9) - 4) * 0.020
        early = max(lead, 0.0) if side == "miss" else max(-lead, 0.0) + (0.008 if side == "result" else 0.0)
        time.sleep(max(0.0, start + n * step - early - time.time()))
        if side == "answer":
            try:
                won = not center.answered(offer["call_id"], agent_id=offer["agent_id"]).replayed
            except errors.Conflict:
                won = False
        elif side == "result":
            try:
                said = "busy" if n % 2 else "connected"
                won = not center.callback_result(offer["call_id"], said, agent_id=offer["agent_id"]).replayed
            except errors.Conflict:
                won = False
        else:
            won = center.offers.miss_offer(offer["call_id"], offer["offer_sk"]) is not None
        outcome[offer["call_id"]] = "won" if won else "lost"
    print(json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main()
