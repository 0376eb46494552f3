"""Gentle demo traffic, so that the overview moves on its own (`make demo`).

Callers arrive at random (`--rate` a minute on average, the first at once) with random
preferences; an agent on a call is released after a random handle time and queues again
(taking a waiting caller when one fits); now and then a shipment is submitted and a task
enqueued. The changes go through `Operations`, as the pages' and the API's do, recorded
with the actor "demo load" and the source "system". Agents found on a call that this
process did not see assigned (by the escalation, by seed_demo, before it started) get a
handle time too, except a simulated day's (`simulate_day`: its player ends their calls);
`--rate 0` places no caller (`make demo`: the simulated day does). DynamoDB trouble is one
line on stderr and a pause that doubles up to 30 s; SIGTERM or Ctrl-C stops it.
"""

from __future__ import annotations

import math
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.management.base import CommandError

from queues_app.agents.records import AgentStatus
from queues_app.agents.skills import ANY, describe_preferences
from queues_app.ddb import errors
from queues_app.management.arguments import DAY, CheckedCommand, float_range, int_range, non_negative_float
from queues_app.management.commands.seed_demo import CARRIERS, PRODUCTS
from queues_app.management.demo_names import seeded_faker
from queues_app.management.outcomes import dynamo_failure
from queues_app.operations import Operations
from queues_app.routing import dispatch
from queues_app.simulation.player import SIMULATED
from queues_app.tasks.queue import TaskQueue
from queues_app.text import counted

if TYPE_CHECKING:
    from faker import Faker

ACTOR, SOURCE = "demo load", "system"
TENANTS = ("acme", "globex", "initech")
MAX_PER_MINUTE = 6000
LOOK_FOR_CALLS_EVERY = 15.0  # seconds between looks for agents on a call assigned elsewhere
# With offers on (ANSWER_TIMEOUT_SECONDS), the phone system picks up after a ring or two, so
# the floor shows calls ringing for a moment, then talked; it looks for ringing agents often.
RING_SECONDS = (1.0, 4.0)
LOOK_FOR_RINGING_EVERY = 2.0
FIRST_PAUSE, LONGEST_PAUSE = 1.0, 30.0  # after DynamoDB trouble, doubling in between
SHORTEST_WAIT = 0.05  # between steps: never a tight loop
# One item changed meanwhile (a supervisor released the agent, say): that item is left
# alone; any other DynamoDB error is trouble that the whole load pauses for.
LEFT_ALONE = (errors.Conflict, errors.NotFound)


@dataclass
class Tally:
    callers: int = 0
    answered: int = 0  # at once, on arrival
    released: int = 0
    shipments: int = 0
    tasks: int = 0

    def __str__(self) -> str:
        return (
            f"{counted(self.callers, 'caller')} ({self.answered} answered at once), "
            f"{counted(self.released, 'call')} ended, {counted(self.shipments, 'shipment')}, "
            f"{counted(self.tasks, 'task')}"
        )


def gap(rng: random.Random, per_minute: float) -> float:
    """Seconds to the next arrival of a random (Poisson) stream; never, at rate 0."""
    return rng.expovariate(per_minute / 60) if per_minute > 0 else math.inf


class Traffic:
    """What happens next and when (times on `clock`). `step` does what is due and says
    how long until the next thing; an event that fails on DynamoDB trouble stays due."""

    def __init__(
        self,
        operations: Operations,
        tasks: TaskQueue,
        rng: random.Random,
        fake: Faker,
        *,
        rate: float,
        handle: tuple[float, float],
        shipment_rate: float,
        task_rate: float,
        say: Callable[[str], None],
        clock: Callable[[], float] = time.monotonic,
    ):
        self.operations, self.tasks, self.rng, self.fake = operations, tasks, rng, fake
        self.rate, self.handle = rate, handle
        self.shipment_rate, self.task_rate = shipment_rate, task_rate
        self.say, self.clock = say, clock
        self.tally = Tally()
        start = clock()
        self.next_caller = start if rate > 0 else math.inf
        self.next_shipment = start + gap(rng, shipment_rate)
        self.next_task = start + gap(rng, task_rate)
        self.next_look = start
        self.on_call: dict[str, float] = {}  # agent id -> when their call ends
        self.ringing: dict[str, tuple[str, float]] = {}  # agent id -> (call id, when it is picked up)
        self.offers = bool(getattr(settings, "ANSWER_TIMEOUT_SECONDS", None))
        # With AGENT_PRESENCE_SECONDS set, the demo's agents' clients send heartbeats (every
        # third of it): without them every demo agent would be disconnected.
        presence = getattr(settings, "AGENT_PRESENCE_SECONDS", None)
        self.beat_every = float(presence) / 3 if presence else None
        self.next_beat = start

    def step(self) -> float:
        now = self.clock()
        if self.next_look <= now:
            self._look_for_calls(now)
            self.next_look = now + (LOOK_FOR_RINGING_EVERY if self.offers else LOOK_FOR_CALLS_EVERY)
        for agent_id, (call_id, picked_up) in sorted(self.ringing.items(), key=lambda item: item[1][1]):
            if picked_up <= now:
                self._pick_up(agent_id, call_id, now)
        for agent_id, ends in sorted(self.on_call.items(), key=lambda item: item[1]):
            if ends <= now:
                self._release(agent_id, now)
        if self.beat_every and self.next_beat <= now:
            self._heartbeats()
            self.next_beat = now + self.beat_every
        if self.next_caller <= now:
            self._caller(now)
            self.next_caller = now + gap(self.rng, self.rate)
        if self.next_shipment <= now:
            self._shipment()
            self.next_shipment = now + gap(self.rng, self.shipment_rate)
        if self.next_task <= now:
            self._task()
            self.next_task = now + gap(self.rng, self.task_rate)
        upcoming = [self.next_look, self.next_caller, self.next_shipment, self.next_task, *self.on_call.values()]
        upcoming += [self.next_beat] if self.beat_every else []
        upcoming += [picked_up for _, picked_up in self.ringing.values()]
        return max(SHORTEST_WAIT, min(upcoming) - self.clock())

    def _heartbeats(self) -> None:
        """Each queued or ringing agent's client says it is there."""
        for status in (AgentStatus.QUEUED, AgentStatus.RINGING):
            for agent in self.operations.agents.list(status=status, limit=500).items:
                try:
                    self.operations.call_center.heartbeat(agent.agent_id)
                except errors.NotFound:
                    continue  # removed meanwhile

    def _handle_time(self) -> float:
        return self.rng.uniform(*self.handle)

    def _look_for_calls(self, now: float) -> None:
        page = self.operations.agents.list(status=AgentStatus.ATTENDING, limit=500)
        for agent in page.items:
            if agent.agent_id not in self.on_call and not agent.agent_id.startswith(SIMULATED):
                self.on_call[agent.agent_id] = now + self._handle_time()
        if self.offers:
            for agent in self.operations.agents.list(status=AgentStatus.RINGING, limit=500).items:
                if agent.call_id and not agent.agent_id.startswith(SIMULATED):
                    self._rings(agent.agent_id, agent.call_id, now)

    def _given(self, call, now: float) -> None:
        """A call given to an agent: ringing until the phone system picks it up, or talked."""
        if call.offer_sk:
            self._rings(call.agent_id, call.call_id, now)
        else:
            self.on_call[call.agent_id] = now + self._handle_time()

    def _rings(self, agent_id: str, call_id: str, now: float) -> None:
        if agent_id not in self.ringing:
            self.ringing[agent_id] = (call_id, now + self.rng.uniform(*RING_SECONDS))

    def _pick_up(self, agent_id: str, call_id: str, now: float) -> None:
        """The agent picks up, as the phone system says with POST /api/calls/<id>/answered."""
        del self.ringing[agent_id]
        try:
            self.operations.answered(call_id)
        except LEFT_ALONE as exc:
            self.say(f"call {call_id} left alone: {exc.message}")
            return
        self.on_call[agent_id] = now + self._handle_time()
        self.say(f"call {call_id} picked up")

    def _release(self, agent_id: str, now: float) -> None:
        try:
            agent, call = self.operations.release(agent_id)
        except LEFT_ALONE as exc:
            del self.on_call[agent_id]
            self.say(f"agent {agent_id} left alone: {exc.message}")
            return
        del self.on_call[agent_id]
        self.tally.released += 1
        if call:
            self._given(call, now)
            self.say(f"{agent.name} ended a call and took waiting call {call.call_id}")
        else:
            self.say(f"{agent.name} ended a call and queued")

    def _caller(self, now: float) -> None:
        preferences = {
            name: self.rng.choice([*values, ANY, ANY])
            for name, values in self.operations.call_center.catalog.dimensions
        }
        lines = [line.line_id for line in self.operations.call_center.lines.current()]
        try:  # a line of the centre's at random (requiring a value, it may refuse other preferences)
            call, _created = self.operations.create_call(
                preferences, priority=self.rng.choice((0, 0, 0, 1, 2)), line=self.rng.choice(lines)
            )
        except (errors.Refused, errors.InvalidRequest) as exc:
            self.say(f"caller ({describe_preferences(preferences)}) not placed: {exc.message}")
            return
        self.tally.callers += 1
        if call.agent_id:
            self.tally.answered += 1
            self._given(call, now)
        state = f"taken by {call.agent_name}" if call.agent_id else "waiting"
        self.say(f"caller {call.call_id} ({describe_preferences(preferences)}): {state}")

    def _shipment(self) -> None:
        data = {
            "recipient": self.fake.name(),
            "city": self.fake.city(),
            "carrier": self.rng.choice(CARRIERS),
            "items": [
                {"sku": self.fake.bothify("??-####").upper(), "name": self.rng.choice(PRODUCTS), "quantity": 1}
                for _ in range(self.rng.randint(1, 3))
            ],
        }
        admitted = self.operations.submit_shipment(
            data, tenant=self.rng.choice(TENANTS), priority=self.rng.choice((0, 0, 1, 2, 5))
        )
        self.tally.shipments += 1
        self.say(f"shipment {admitted.shipment.shipment_id} submitted")

    def _task(self) -> None:
        task = self.tasks.create({"device": f"sensor-{self.rng.randint(1000, 9999)}", "ip": self.fake.ipv4_public()})
        self.tally.tasks += 1
        self.say(f"task {task.task_id} enqueued")


class Command(CheckedCommand):
    help = (
        "Demo traffic until SIGTERM or Ctrl-C: callers with random preferences, calls ended after a random "
        "handle time (the agent queues again), now and then a shipment and a task, through the audited "
        "operations. On DynamoDB trouble it says so and pauses, longer each time (up to 30 s)."
    )

    def add_arguments(self, parser):
        per_minute = float_range(0, MAX_PER_MINUTE)
        parser.add_argument("--rate", type=per_minute, default=6.0, help="callers a minute, on average (0: none)")
        parser.add_argument(
            "--handle-seconds",
            type=non_negative_float,
            nargs=2,
            metavar=("LOW", "HIGH"),
            default=[20.0, 90.0],
            help="an agent ends a call after a random time between LOW and HIGH seconds",
        )
        parser.add_argument("--shipment-rate", type=per_minute, default=1.0, help="shipments a minute (0: none)")
        parser.add_argument("--task-rate", type=per_minute, default=2.0, help="tasks a minute (0: none)")
        parser.add_argument("--seed", type=int_range(), default=None, help="random seed, for a repeatable run")
        parser.add_argument(
            "--max-seconds",
            type=float_range(above=0, high=365 * DAY),
            default=None,
            help="stop after this long (tests, scripted demos)",
        )

    def handle(
        self,
        rate=6.0,
        handle_seconds=(20.0, 90.0),
        shipment_rate=1.0,
        task_rate=2.0,
        seed=None,
        max_seconds=None,
        verbosity=1,
        **options,
    ):
        if len(handle_seconds) != 2:  # given by keyword, which skips argparse's nargs
            raise CommandError("--handle-seconds takes two numbers: LOW HIGH.")
        low, high = handle_seconds
        if low > high:
            raise CommandError(f"--handle-seconds {low:g} {high:g}: LOW must not be above HIGH.")
        rng = random.Random(seed)
        fake = seeded_faker(seed)
        operations = Operations(ACTOR, SOURCE)
        traffic = Traffic(
            operations,
            TaskQueue(operations.db),
            rng,
            fake,
            rate=rate,
            handle=(low, high),
            shipment_rate=shipment_rate,
            task_rate=task_rate,
            say=self.stdout.write if verbosity >= 2 else lambda line: None,
        )
        stop = threading.Event()
        previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
        dispatch.send_new_callers()  # its callers go to the matcher process, as a web worker's do
        try:
            # Said once the signals are handled: from then on SIGTERM stops it cleanly.
            self.stdout.write(
                f"Demo load: on average {counted(rate, 'caller')}, {counted(shipment_rate, 'shipment')} and "
                f"{counted(task_rate, 'task')} a minute; calls last {low:g} to {high:g} s; stop with SIGTERM."
            )
            self.stdout.flush()
            self._run(traffic, stop, max_seconds)
        finally:
            dispatch.stop_sending()
            for s, handler in previous.items():
                signal.signal(s, handler)
        self.stdout.write(f"Demo load stopped: {traffic.tally}.")

    def _run(self, traffic: Traffic, stop: threading.Event, max_seconds: float | None) -> None:
        deadline = time.monotonic() + max_seconds if max_seconds is not None else math.inf
        pause = 0.0
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                wait = traffic.step()
                pause = 0.0
            except errors.DynamoError as exc:
                pause = min(LONGEST_PAUSE, pause * 2 or FIRST_PAUSE)
                wait = pause
                trouble = dynamo_failure(exc, traffic.operations.db)  # the commands' one-line wording
                self.stderr.write(f"demo load: {trouble}; trying again in {pause:g} s")
            stop.wait(min(wait, max(0.0, deadline - time.monotonic())))
