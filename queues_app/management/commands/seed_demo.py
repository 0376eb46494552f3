"""Demo data, written in batches in the states it should end in: agents, waiting
callers, shipments in every state and tasks in every status. Nothing is written in one
state and then moved on, so workers running meanwhile (a task processor taking the
newest pending task, a shipment worker) cannot race the seed."""

import dataclasses
import random
import uuid
from datetime import datetime, time, timedelta

from django.core.management.base import CommandError

from queues_app.agents.roster import Agents
from queues_app.agents.skills import ANY
from queues_app.calls.records import Call, CallStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import centre_zone, now, to_iso
from queues_app.management.arguments import CheckedCommand, int_range
from queues_app.management.demo_names import seeded_faker
from queues_app.management.outcomes import dynamo_failure
from queues_app.operations import Operations
from queues_app.shipments.queue import (
    Shipment,
    ShipmentQueue,
    ShipmentStatus,
    ready_sort_key,
    timed_sort_key,
)
from queues_app.tasks.queue import Task, TaskQueue, TaskStatus

CARRIERS = ("DHL", "UPS", "FedEx", "La Poste", "GLS")
PRODUCTS = (
    "books",
    "headphones",
    "coffee beans",
    "running shoes",
    "desk lamp",
    "board game",
    "tea set",
    "phone case",
    "backpack",
    "printer ink",
)
DLQ_REASONS = (
    "address not found",
    "carrier rejected the parcel: over the weight limit",
    "customs documents missing",
    "recipient refused the delivery",
    "label could not be printed: invalid postcode",
)
DEMO_LEASE_SECONDS = 2 * 3600  # demo shipments in flight stay in flight for a while

# Share of each special state among the demo shipments (the rest is queued), each at
# most SPECIAL_CAP: a few of each, whatever the total.
SPECIAL_SHARES = {
    "under construction": 0.07,
    "ready": 0.07,
    "delayed": 0.04,
    "in flight": 0.1,
    "in the DLQ": 0.07,
    "completed": 0.1,
}
SPECIAL_CAP = 50
MAX_COUNT = 100_000  # of each kind, per run
TASKS_MOVED_ON = 5  # one demo task in this many (the newest ones) is past PENDING


class ProgressBar:
    """A one-line text progress bar (only drawn on a terminal, or when asked)."""

    def __init__(self, stream, label: str, total: int, width: int = 30, force: bool = False):
        self.stream, self.label, self.total, self.width = stream, label, max(total, 1), width
        self.done = 0
        self.enabled = force or stream.isatty()

    def advance(self, count: int) -> None:
        self.done += count
        if self.enabled:
            filled = int(self.width * self.done / self.total)
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r{self.label:<10} [{bar}] {self.done}/{self.total}", ending="")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("")


def shipment_plan(total: int) -> dict[str, int]:
    """How many demo shipments of each kind: mostly queued, a few of every other state."""
    plan = {kind: min(SPECIAL_CAP, round(total * share)) for kind, share in SPECIAL_SHARES.items()}
    plan["queued"] = total - sum(plan.values())
    return plan


def shipments_exist(db: Dynamo) -> bool:
    """Whether the shipments table holds anything: a Scan of one item (fine in a command,
    never on a request path)."""
    response = db.call("scan", TableName=db.table("shipments"), Limit=1, ProjectionExpression="id")
    return bool(response.get("Items") or response.get("LastEvaluatedKey"))


def _between(rng: random.Random, start: datetime, low: float, high: float, cap: datetime) -> datetime:
    """A moment `low` to `high` seconds after `start`, never later than `cap`."""
    return min(start + timedelta(seconds=rng.uniform(low, high)), cap)


class Command(CheckedCommand):
    help = (
        "Load demo data with batch writes: agents (names, a gender and one to three languages), callers "
        "waiting, some agents made available (taking the callers they fit), shipments (a recipient, city, "
        "carrier and items) mostly queued with random priorities and a few under construction, ready, "
        "delayed, in flight, in the DLQ and completed, and tasks mostly pending with a few taken and "
        "finished. Each shipment and task is written in its final state, so workers may run meanwhile."
    )

    def add_arguments(self, parser):
        count = int_range(0, MAX_COUNT)
        parser.add_argument("--agents", type=count, default=40, help="how many agents")
        parser.add_argument("--shipments", type=count, default=30, help="how many shipments")
        parser.add_argument("--tasks", type=count, default=40, help="how many tasks")
        parser.add_argument(
            "--callers", type=count, default=16, help="how many callers start waiting before agents are made available"
        )
        parser.add_argument(
            "--available",
            type=count,
            default=20,
            help="how many of the new agents are made available (all of them when fewer are written); they "
            "take the waiting callers they fit, the others queue",
        )
        parser.add_argument("--seed", type=int_range(), default=None, help="random seed, for repeatable data")
        parser.add_argument(
            "--if-empty", action="store_true", help="load each kind (agents, shipments, tasks) only when none exist yet"
        )
        parser.add_argument("--progress", action="store_true", help="draw the progress bar even when not on a terminal")

    def handle(
        self,
        agents=40,
        shipments=30,
        tasks=40,
        callers=16,
        available=20,
        seed=None,
        if_empty=False,
        progress=False,
        **options,
    ):
        rng = random.Random(seed)
        fake = seeded_faker(seed)
        shortfalls: list[str] = []
        try:
            new_agents = self._agents(agents, rng, fake, if_empty, progress)
            if new_agents:
                self._callers(callers, rng)
                self._make_available(new_agents[:available], shortfalls)
                self._scheduled_callbacks(rng if callers else None)
            self._shipments(shipments, rng, fake, if_empty, progress)
            self._tasks(tasks, rng, fake, if_empty, progress)
        except errors.DynamoError as exc:
            raise dynamo_failure(exc, default(), "the demo data may be loaded in part") from exc
        if shortfalls:
            raise CommandError("Demo data incomplete: " + "; ".join(shortfalls) + ".")

    # --- agents -------------------------------------------------------------------------

    def _agents(self, count, rng, fake, if_empty, progress):
        directory = Agents()
        if if_empty and directory.any_exist():
            self.stdout.write("Demo data: agents exist already, nothing loaded.")
            return []
        catalog = directory.catalog
        dims = dict(catalog.dimensions)
        demo = []
        for _ in range(count):
            skills = {}
            for name, values in dims.items():
                # gender-like dimensions (one value each) vs language-like (one to three)
                many = name.startswith("language") or name.endswith("s")
                size = rng.randint(1, min(3, len(values))) if many else 1
                skills[name] = rng.sample(list(values), size)
            gender = skills.get("gender", ["X"])[0]
            person = (
                fake.name_female() if gender == "F" else fake.name_male() if gender == "M" else fake.name_nonbinary()
            )
            demo.append(directory.build(person, skills))
        bar = ProgressBar(self.stdout, "agents", count, force=progress)
        written = directory.create_many(demo, on_batch=bar.advance)
        bar.close()
        self.stdout.write(self.style.SUCCESS(f"Demo data: {written} agents written."))
        return demo

    def _callers(self, count, rng):
        """Callers who wait in line, with random preferences (some "any"), arrived over the
        last minutes, written in batches."""
        if count == 0:
            return
        center = CallCenter()
        moment = now()
        calls = []
        for _ in range(count):
            preferences = {name: rng.choice([*values, ANY, ANY]) for name, values in center.catalog.dimensions}
            call = Call(
                call_id=uuid.uuid4().hex[:16],
                status=CallStatus.WAITING,
                preferences=preferences,
                priority=rng.choice((0, 0, 0, 1, 2)),
                arrived_at=to_iso(moment - timedelta(seconds=rng.uniform(20, 400))),
            )
            calls.append(call)
        center.line.load(calls)
        self.stdout.write(self.style.SUCCESS(f"Demo data: {count} callers waiting."))

    def _scheduled_callbacks(self, rng) -> None:
        """Two callers who asked to be called back tomorrow morning and afternoon, on the
        centre's clock (the Callbacks page)."""
        if rng is None:
            return
        tomorrow = (now().astimezone(centre_zone()) + timedelta(days=1)).date()
        operations = Operations("seed_demo", "command")
        for hour, minute in ((10, 0), (14, 30)):
            at = datetime.combine(tomorrow, time(hour, minute), tzinfo=centre_zone())
            number = "+331" + "".join(str(rng.randrange(10)) for _ in range(8))
            operations.schedule_callback("main", {}, number, at)
        self.stdout.write(self.style.SUCCESS("Demo data: 2 callbacks scheduled for tomorrow."))

    def _make_available(self, agents, shortfalls):
        """Agents who start their shift: each takes the longest-waiting caller they fit, or
        queues. One refused (changed meanwhile by someone else) does not stop the others."""
        # Through the audited path, so each agent's page shows how their day began.
        operations, took, refused = Operations("seed_demo", "command"), 0, []
        for agent in agents:
            try:
                _agent, call = operations.make_available(agent.agent_id)
                if call is not None and call.offer_sk:  # offers on: picked up, as a phone system would
                    operations.answered(call.call_id)
            except errors.Conflict as exc:
                refused.append(exc.message)
                continue
            took += call is not None
        if agents:
            self.stdout.write(
                self.style.SUCCESS(
                    f"Demo data: {len(agents) - len(refused)} agents made available ({took} took a waiting caller)."
                )
            )
        if refused:
            shortfalls.append(f"{len(refused)} of {len(agents)} agents not made available ({refused[0]})")

    # --- shipments ----------------------------------------------------------------------

    def _shipments(self, count, rng, fake, if_empty, progress):
        """Shipments in each state, built as the queue would have left them (the lease of
        those in flight runs two hours) and written in batches: no receive takes part, so
        a worker running meanwhile only ever sees the queued ones."""
        queue = ShipmentQueue()
        if if_empty and shipments_exist(queue.db):
            self.stdout.write("Demo data: shipments exist already, nothing loaded.")
            return
        if count == 0:
            return
        plan = shipment_plan(count)
        moment = now()
        built = [self._shipment(kind, rng, fake, moment) for kind, n in plan.items() for _ in range(n)]
        rng.shuffle(built)  # the batches mix the states, as a real table would
        bar = ProgressBar(self.stdout, "shipments", count, force=progress)
        written = queue.create_many(built, on_batch=bar.advance)
        bar.close()
        order = ("queued", "under construction", "ready", "delayed", "in flight", "in the DLQ", "completed")
        mix = ", ".join(f"{plan[kind]} {kind}" for kind in order if plan[kind])
        self.stdout.write(self.style.SUCCESS(f"Demo data: {written} shipments written ({mix})."))

    def _shipment(self, kind: str, rng: random.Random, fake, moment: datetime) -> Shipment:
        """One demo shipment in the state `kind` (a key of SPECIAL_SHARES, or "queued")."""
        sid = uuid.uuid4().hex[:16]
        created = moment - timedelta(minutes=rng.uniform(2, 240))
        shipment = Shipment(
            shipment_id=sid,
            data=self._demo_data(rng, fake),
            status=ShipmentStatus.UNDER_CONSTRUCTION if kind == "under construction" else ShipmentStatus.READY_TO_SHIP,
            priority=rng.choices(range(10), weights=(6, 5, 4, 4, 3, 3, 2, 2, 1, 1))[0],
            created_at=to_iso(created),
            updated_at=to_iso(created),
        )
        if kind in ("under construction", "ready"):
            return shipment
        enqueued = _between(rng, created, 0, 90, moment)
        shipment.enqueued_at = shipment.first_enqueued_at = shipment.updated_at = to_iso(enqueued)
        shipment.version = 2
        if kind == "queued":
            shipment.ready_sk = ready_sort_key(shipment.priority, shipment.enqueued_at, sid)
            return shipment
        if kind == "delayed":
            shipment.visible_at = to_iso(moment + timedelta(seconds=rng.uniform(120, 1800)))
            shipment.invisible_sk = timed_sort_key(shipment.visible_at, sid)
            return shipment
        # Received once: in flight, or since then completed or failed into the DLQ.
        attempt = _between(rng, enqueued, 1, 60, moment)
        shipment.first_attempt_at = shipment.last_attempt_at = shipment.updated_at = to_iso(attempt)
        shipment.receive_count = shipment.attempts = 1
        shipment.version = 3
        if kind == "in flight":
            shipment.status = ShipmentStatus.PROCESSING
            shipment.receipt = uuid.uuid4().hex
            shipment.visible_at = to_iso(moment + timedelta(seconds=DEMO_LEASE_SECONDS))  # as if heartbeating
            shipment.invisible_sk = timed_sort_key(shipment.visible_at, sid)
            return shipment
        ended = to_iso(_between(rng, attempt, 1, 30, moment))
        shipment.updated_at = ended
        shipment.version = 4
        if kind == "completed":
            shipment.status = ShipmentStatus.COMPLETED
            shipment.completed_at = ended
            return shipment
        reason = rng.choice(DLQ_REASONS)  # a failure on record, then the DLQ
        shipment.status = ShipmentStatus.IN_DLQ
        shipment.failure_reasons = [{"at": ended, "reason": reason, "receive": 1}]
        shipment.dlq_at, shipment.dlq_reason = ended, reason
        shipment.dlq_sk = timed_sort_key(ended, sid)
        return shipment

    @staticmethod
    def _demo_data(rng, fake) -> dict:
        return {
            "recipient": fake.name(),
            "city": fake.city(),
            "carrier": rng.choice(CARRIERS),
            "items": [
                {"sku": fake.bothify("??-####").upper(), "name": rng.choice(PRODUCTS), "quantity": rng.randint(1, 4)}
                for _ in range(rng.randint(1, 3))
            ],
        }

    # --- tasks --------------------------------------------------------------------------

    def _tasks(self, count, rng, fake, if_empty, progress):
        """Tasks created over the last minutes (IP validations, as in the article's example):
        mostly pending; the newest few taken or finished, written so. (Writing them pending
        and then taking them raced a running processor, which takes the newest first.)"""
        queue = TaskQueue()
        if if_empty and sum(queue.count(status, cap=1)[0] for status in TaskStatus.ALL):
            self.stdout.write("Demo data: tasks exist already, nothing loaded.")
            return
        if count == 0:
            return
        start = queue.clock()
        demo = [
            queue.build(
                {"device": f"sensor-{rng.randint(1000, 9999)}", "ip": fake.ipv4_public()},
                created=start - timedelta(seconds=rng.uniform(0, 180)),
            )
            for _ in range(count)
        ]
        demo.sort(key=lambda t: t.created, reverse=True)
        moved_on = count // TASKS_MOVED_ON
        demo[:moved_on] = [self._moved_on(task, queue, rng, start) for task in demo[:moved_on]]
        bar = ProgressBar(self.stdout, "tasks", count, force=progress)
        written = queue.create_many(demo, on_batch=bar.advance)
        bar.close()
        taken = sum(t.status == TaskStatus.TAKEN for t in demo)
        finished = sum(t.status in TaskStatus.FINISHED for t in demo)
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo data: {written} tasks written ({count - taken - finished} pending, {taken} taken, "
                f"{finished} finished)."
            )
        )

    @staticmethod
    def _moved_on(task: Task, queue: TaskQueue, rng: random.Random, start: datetime) -> Task:
        """The task as the processor would have left it: taken, and most of those finished
        (a short expiry from then on, as `TaskQueue` gives finished tasks)."""
        created = task.created_at or start
        taken = _between(rng, created, 0.05, 3, start)
        task = dataclasses.replace(
            task, status=TaskStatus.TAKEN, attempts=1, taken_at=to_iso(taken), updated=to_iso(taken)
        )
        if rng.random() >= 0.6:
            return task
        finished = _between(rng, taken, 0.05, 1, start)
        return dataclasses.replace(
            task,
            status=TaskStatus.SUCCESS if rng.random() < 0.8 else TaskStatus.FAILURE,
            finished_at=to_iso(finished),
            updated=to_iso(finished),
            expires_at=int((finished + timedelta(seconds=queue.expiry.finished_seconds)).timestamp()),
            result="demo",
        )
