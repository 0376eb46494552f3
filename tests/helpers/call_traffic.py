"""Call traffic from a process of its own, for the counting reconciliation test:

    python -m tests.helpers.call_traffic SEED ROUNDS [--dispatched] [--seeded] [--forever] [--flush-every S]
                                         [--hold-when-told]

with DYNAMODB_ENDPOINT_URL and DYNAMODB_TABLE_PREFIX naming the tables. Its own agents
take callers in every way a call is answered: at once, from the line when an agent comes
back or is released to the queue, by escalation, through the matching dispatcher
(`--dispatched`: new callers go to the lease's holder) and as the demo data does
(`--seeded`: callers loaded into the line, then agents made available). Callers hang up
while waiting; agents end calls to the queue, to wrap-up or offline. The process counts
its facts every `--flush-every` seconds (0.2 by default; a process killed with a longer
one leaves facts behind). Prints one line per round; `--forever` runs until killed.
With `--hold-when-told`, a SIGUSR1 makes it go on only until it holds facts that its
changes wrote and it has not counted yet (of callers who hung up, of calls its agents
ended): it prints `holding N uncounted facts` and waits to be killed, counting nothing
more.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import time
import uuid
from datetime import timedelta

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django  # noqa: E402

django.setup()

from queues_app.agents.records import AgentStatus  # noqa: E402
from queues_app.calls.records import Call, CallStatus  # noqa: E402
from queues_app.centre.call_center import CallCenter  # noqa: E402
from queues_app.ddb import errors  # noqa: E402
from queues_app.ddb.clock import now, to_iso  # noqa: E402
from queues_app.ddb.codec import marshal  # noqa: E402
from queues_app.figures import counters, facts  # noqa: E402
from queues_app.routing import dispatch  # noqa: E402
from queues_app.routing.escalation import EscalationPolicy  # noqa: E402


def _held(holder) -> bool:
    return bool(holder and holder.address and holder.live(time.time()))


def uncounted_facts(db) -> int:
    """How many facts that this process wrote are in the table, not counted yet: of the
    facts it expects to count, those of its own callers who hung up and of the calls its
    own agents ended, which no other process writes. (It expects the fact of a failed
    transaction too, and another process may have written that one: an assignment that
    both tried. That process counts it.)"""
    expected = counters.recorder.take_facts()
    counters.recorder.give_back_facts(expected)
    table = db.table("metrics")
    own = [(pk, sk) for pk, sk in expected if sk.endswith((f"#{facts.ABANDONED}", f"#{facts.ENDED}"))]
    return sum(
        1
        for pk, sk in own
        if "Item" in db.call("get_item", TableName=table, Key=marshal({"pk": pk, "sk": sk}), ConsistentRead=True)
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("seed", type=int)
    parser.add_argument("rounds", type=int)
    parser.add_argument("--dispatched", action="store_true")
    parser.add_argument("--seeded", action="store_true")
    parser.add_argument("--forever", action="store_true")
    parser.add_argument("--flush-every", type=float, default=0.2)
    parser.add_argument("--hold-when-told", action="store_true")
    args = parser.parse_args()
    told: list[int] = []
    if args.hold_when_told:
        signal.signal(signal.SIGUSR1, lambda signum, frame: told.append(signum))
    counters.recorder.period = args.flush_every
    rng = random.Random(args.seed)
    center = CallCenter(escalation=EscalationPolicy(after_seconds=0.3, order=("gender", "language")))
    if args.dispatched:
        # From the moment the matcher holds its lease, so that new callers go through it.
        deadline = time.monotonic() + 30
        while not _held(dispatch.current_holder(center.db)) and time.monotonic() < deadline:
            time.sleep(0.1)
        # A machine running the whole suite can keep the matcher busier than the
        # production bound allows: callers then match where they arrive, none through it.
        dispatch.send_new_callers(bound=15.0)
    dims = dict(center.catalog.dimensions)

    def preferences() -> dict:
        if args.dispatched and rng.random() < 0.5:  # anyone will do: most go through at once
            return {name: None for name in dims}
        return {name: rng.choice([*values, None]) for name, values in dims.items()}

    agents = [
        center.agents.create(
            f"Agent {args.seed}-{n}", {name: [rng.choice(list(values))] for name, values in dims.items()}
        ).agent_id
        for n in range(5)
    ]
    waiting: list[str] = []
    if args.seeded:  # the demo data's way: callers loaded into the line, then agents come
        moment = now()
        calls = [
            Call(
                call_id=uuid.uuid4().hex[:16],
                status=CallStatus.WAITING,
                preferences=preferences(),
                arrived_at=to_iso(moment - timedelta(seconds=rng.randint(30, 360))),
            )
            for _ in range(8)
        ]
        center.line.load(calls)
        waiting += [call.call_id for call in calls]
    for agent_id in agents:
        center.make_available(agent_id)
    if args.dispatched:  # each right after an agent of this process queued: the matcher assigns them
        for n in range(3):
            spare = center.agents.create(f"Spare {args.seed}-{n}", {name: [values[0]] for name, values in dims.items()})
            agents.append(spare.agent_id)
            if center.make_available(spare.agent_id).call is None:  # queued, not given a waiting caller
                center.create_call({name: None for name in dims})

    n = 0
    while args.forever or n < args.rounds:
        n += 1
        roll = rng.random()
        try:
            if roll < 0.4:
                call, _ = center.create_call(preferences())
                if call.status == CallStatus.WAITING:
                    waiting.append(call.call_id)
            elif roll < 0.7:
                agent_id = rng.choice(agents)
                agent = center.agents.get(agent_id)
                if agent.status == AgentStatus.ATTENDING:
                    center.release(agent_id, then=rng.choice(["queue", "queue", "wrap_up", "offline"]))
                elif agent.status in (AgentStatus.OFFLINE, AgentStatus.WRAP_UP):
                    center.make_available(agent_id)
            elif roll < 0.85 and waiting:
                call_id = waiting.pop(rng.randrange(len(waiting)))
                center.abandon(call_id)
            else:
                center.escalate()
        except errors.Conflict:
            pass  # a race with another process (an assignment before a hang-up): both fine
        counters.flush_if_due(center.db)
        print(f"round {n}", flush=True)
        if told and (held := uncounted_facts(center.db)):
            print(f"holding {held} uncounted facts", flush=True)
            while True:
                signal.pause()
    counters.MetricsStore(center.db).flush()


if __name__ == "__main__":
    main()
