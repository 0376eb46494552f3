import random
import time
import uuid
from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from faker import Faker

from queues_app.agents.records import Call, CallStatus
from queues_app.agents.roster import Agents
from queues_app.agents.router import Router
from queues_app.agents.skills import ANY
from queues_app.ddb import batch, errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import now, to_iso
from queues_app.shipments.queue import DEFAULT_QUEUE, Shipment, ShipmentQueue, ShipmentStatus, ready_sort_key
from queues_app.tasks.queue import TaskQueue, TaskStatus

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
LEASED = ("in flight", "in the DLQ", "completed")  # reached through a peek
SPECIAL_CAP = 50


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


class Command(BaseCommand):
    help = (
        "Load demo data with batch writes: agents (names, a gender and one to three languages) and "
        "shipments (a recipient, city, carrier and items) in a mix of states: mostly queued with random "
        "priorities, and a few under construction, ready, delayed, in flight, in the DLQ and completed."
    )

    def add_arguments(self, parser):
        parser.add_argument("--agents", type=int, default=40, help="how many agents (default 40)")
        parser.add_argument("--shipments", type=int, default=30, help="how many shipments (default 30)")
        parser.add_argument("--tasks", type=int, default=40, help="how many tasks (default 40)")
        parser.add_argument(
            "--callers",
            type=int,
            default=16,
            help="how many callers start waiting before agents are made available (default 16)",
        )
        parser.add_argument(
            "--available",
            type=int,
            default=20,
            help="how many of the new agents are made available (default 20); they take "
            "the waiting callers they fit, the others stay queued",
        )
        parser.add_argument("--seed", type=int, default=None, help="random seed, for repeatable data")
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
        for name, value in (
            ("agents", agents),
            ("shipments", shipments),
            ("tasks", tasks),
            ("callers", callers),
            ("available", available),
        ):
            if value < 0:
                raise CommandError(f"--{name} must be zero or more")
        rng = random.Random(seed)
        fake = Faker()
        fake.seed_instance(seed)
        try:
            new_agents = self._agents(agents, rng, fake, if_empty, progress)
            if new_agents:
                self._callers(callers, rng)
                self._make_available(new_agents[:available])
            self._shipments(shipments, rng, fake, if_empty, progress)
            self._tasks(tasks, rng, fake, if_empty, progress)
        except errors.DynamoError as exc:
            raise CommandError(exc.message) from exc

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
        router = Router()
        moment = now()
        items = []
        for _ in range(count):
            preferences = {name: rng.choice([*values, ANY, ANY]) for name, values in router.catalog.dimensions}
            call = Call(
                call_id=uuid.uuid4().hex[:16],
                status=CallStatus.WAITING,
                preferences=preferences,
                priority=rng.choice((0, 0, 0, 1, 2)),
                arrived_at=to_iso(moment - timedelta(seconds=rng.uniform(20, 400))),
            )
            items += router.line.waiting_records(call)
        batch.put_items(router.db, router.table, items)
        self.stdout.write(self.style.SUCCESS(f"Demo data: {count} callers waiting."))

    def _make_available(self, agents):
        """Agents who start their shift: each takes the longest-waiting caller they fit, or queues."""
        router, took = Router(), 0
        for agent in agents:
            _agent, call = router.make_available(agent.agent_id)
            took += call is not None
        if agents:
            self.stdout.write(
                self.style.SUCCESS(f"Demo data: {len(agents)} agents made available ({took} took a waiting caller).")
            )

    # --- shipments ----------------------------------------------------------------------

    def _shipments(self, count, rng, fake, if_empty, progress):
        queue = ShipmentQueue()
        if if_empty and shipments_exist(queue.db):
            self.stdout.write("Demo data: shipments exist already, nothing loaded.")
            return
        if count == 0:
            return
        plan = shipment_plan(count)
        notes = []
        depth = queue.counts(DEFAULT_QUEUE)
        if depth.queued or depth.in_flight or depth.delayed:
            # A peek could take someone else's shipment: leave the queue's work alone.
            moved = sum(plan[kind] for kind in LEASED)
            if moved:
                notes.append(
                    f"the queue holds other shipments, so {moved} planned as in flight, in the DLQ or "
                    "completed were queued instead"
                )
            plan["queued"] += moved
            plan.update({kind: 0 for kind in LEASED})
        moment = now()

        def build(status: str, *, queued: bool = False) -> Shipment:
            sid = uuid.uuid4().hex[:16]
            created = moment - timedelta(minutes=rng.uniform(2, 240))
            stamp = to_iso(created)
            shipment = Shipment(
                shipment_id=sid,
                data=self._demo_data(rng, fake),
                status=status,
                priority=rng.choices(range(10), weights=(6, 5, 4, 4, 3, 3, 2, 2, 1, 1))[0],
                created_at=stamp,
                updated_at=stamp,
            )
            if queued:
                enqueued = to_iso(created + timedelta(seconds=rng.uniform(0, 90)))
                shipment.enqueued_at = shipment.first_enqueued_at = shipment.updated_at = enqueued
                shipment.ready_sk = ready_sort_key(shipment.priority, enqueued, sid)
            return shipment

        bar = ProgressBar(self.stdout, "shipments", count, force=progress)
        written = {kind: 0 for kind in plan}

        # 1. The ones reached through a peek, queued alone (the queue is empty), plus
        #    the ones a delayed enqueue will take, ready and not queued yet.
        leased = [build(ShipmentStatus.READY_TO_SHIP, queued=True) for _ in range(sum(plan[k] for k in LEASED))]
        delayed = [build(ShipmentStatus.READY_TO_SHIP) for _ in range(plan["delayed"])]
        queue.create_many(leased + delayed, on_batch=bar.advance)
        leases = self._peek_all(queue, {s.shipment_id for s in leased}, notes)
        for kind in ("completed", "in the DLQ"):
            for lease in leases[: plan[kind]]:
                sid = lease.shipment.shipment_id
                if kind == "completed":
                    queue.complete(sid, lease.receipt)
                else:
                    reason = rng.choice(DLQ_REASONS)
                    failed = queue.fail(sid, lease.receipt, reason)  # a failure on record, then the DLQ
                    if failed.status != ShipmentStatus.IN_DLQ:
                        queue.send_to_dlq(sid, reason, expected_version=failed.version)
                written[kind] += 1
            leases = leases[plan[kind] :]
        written["in flight"] = len(leases)
        written["queued"] += len(leased) - sum(written[k] for k in LEASED)  # never received: still queued
        for shipment in delayed:
            queue.enqueue(shipment.shipment_id, delay_seconds=rng.uniform(120, 1800))
            written["delayed"] += 1

        # 2. The bulk: queued (in the queue after the peeks above), under construction, ready.
        bulk = [build(ShipmentStatus.READY_TO_SHIP, queued=True) for _ in range(plan["queued"])]
        bulk += [build(ShipmentStatus.UNDER_CONSTRUCTION) for _ in range(plan["under construction"])]
        bulk += [build(ShipmentStatus.READY_TO_SHIP) for _ in range(plan["ready"])]
        queue.create_many(bulk, on_batch=bar.advance)
        bar.close()
        written["queued"] += plan["queued"]
        written["under construction"] += plan["under construction"]
        written["ready"] += plan["ready"]

        total = sum(written.values())
        order = ("queued", "under construction", "ready", "delayed", "in flight", "in the DLQ", "completed")
        mix = ", ".join(f"{written[kind]} {kind}" for kind in order if written[kind])
        self.stdout.write(self.style.SUCCESS(f"Demo data: {total} shipments written ({mix})."))
        for note in notes:
            self.stdout.write(f"Note: {note}.")

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

    @staticmethod
    def _peek_all(queue: ShipmentQueue, ours: set[str], notes: list[str]) -> list:
        """Receive every shipment in `ours` with a long lease. The index may lag the
        batch write for a moment (eventually consistent), so an empty peek is retried
        for a little while; a shipment that is not ours is given back, and ends it."""
        leases, misses = [], 0
        while len(leases) < len(ours) and misses < 25:
            lease = queue.receive(DEFAULT_QUEUE, visibility_timeout=DEMO_LEASE_SECONDS)
            if lease is None:
                misses += 1
                time.sleep(0.2)
                continue
            if lease.shipment.shipment_id not in ours:
                queue.release(lease.shipment.shipment_id, lease.receipt)
                notes.append("another shipment arrived in the queue meanwhile; fewer in flight than planned")
                break
            leases.append(lease)
        return leases

    # --- tasks --------------------------------------------------------------------------

    def _tasks(self, count, rng, fake, if_empty, progress):
        """Tasks created over the last minutes (IP validations, as in the article's example):
        mostly pending, a few taken, some finished."""
        queue = TaskQueue()
        if if_empty and sum(queue.count(status, cap=1)[0] for status in TaskStatus.ALL):
            self.stdout.write("Demo data: tasks exist already, nothing loaded.")
            return
        start = queue.clock()
        demo = [
            queue.build(
                {"device": f"sensor-{rng.randint(1000, 9999)}", "ip": fake.ipv4_public()},
                created=start - timedelta(seconds=rng.uniform(0, 180)),
            )
            for _ in range(count)
        ]
        bar = ProgressBar(self.stdout, "tasks", count, force=progress)
        written = queue.create_many(demo, on_batch=bar.advance)
        bar.close()
        # A few move on, through the normal transitions, so every status shows up.
        newest = sorted(demo, key=lambda t: t.created, reverse=True)
        taken = finished = 0
        for task in newest[: max(count // 5, 0)]:
            queue.take(task.task_id)
            if rng.random() < 0.6:
                (queue.succeed if rng.random() < 0.8 else queue.fail)(task.task_id, "demo")
                finished += 1
            else:
                taken += 1
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo data: {written} tasks written ({written - taken - finished} pending, {taken} taken, "
                f"{finished} finished)."
            )
        )
