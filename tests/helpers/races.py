"""A caller hanging up while an agent comes back for them, the two in threads (on
DynamoDB Local only: moto is not thread-safe)."""

from __future__ import annotations

import random
import statistics
import threading
import time

from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors


class HangUpRaces:
    """Pairs of an agent coming back (made available) and their caller hanging up a moment
    later. The moments are spread over twice the time an agent's coming back takes here
    (the median of the pairs run so far, 30 ms before the first), so that both orders, and
    the moments in between, come up on a fast machine as on a loaded one."""

    def __init__(self, db, seed: int):
        self.db = db
        self.rng = random.Random(seed)
        self.coming_back: list[float] = []  # seconds each agent's coming back took

    def next_delay(self) -> float:
        typical = statistics.median(self.coming_back) if self.coming_back else 0.03
        return self.rng.uniform(0, max(0.06, 2 * typical))

    def run(self, call_id: str, agent_id: str) -> tuple[object, object]:
        """The hang-up's answer (or the Conflict it met) and the call the agent was given
        (None when they were queued instead)."""
        delay = self.next_delay()
        start = threading.Barrier(2)
        outcome: dict[str, object] = {}

        def hang_up():
            start.wait()
            time.sleep(delay)
            try:
                outcome["abandon"] = CallCenter(self.db).abandon(call_id)
            except errors.Conflict as exc:
                outcome["abandon"] = exc

        def come_back():
            start.wait()
            began = time.monotonic()
            outcome["available"] = CallCenter(self.db).make_available(agent_id)[1]
            self.coming_back.append(time.monotonic() - began)

        threads = [threading.Thread(target=hang_up), threading.Thread(target=come_back)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        return outcome["abandon"], outcome["available"]
