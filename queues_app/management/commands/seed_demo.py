import random
from django.core.management.base import BaseCommand, CommandError
from faker import Faker

from queues_app.dynamo import errors
from queues_app.dynamo.agents import Agents


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


class Command(BaseCommand):
    help = "Load demo data (agents with names, a gender and one to three languages) with batch writes."

    def add_arguments(self, parser):
        parser.add_argument("--agents", type=int, default=40, help="how many agents (default 40)")
        parser.add_argument("--seed", type=int, default=None, help="random seed, for repeatable data")
        parser.add_argument("--if-empty", action="store_true", help="do nothing when agents exist already")
        parser.add_argument("--progress", action="store_true", help="draw the progress bar even when not on a terminal")

    def handle(self, agents=40, seed=None, if_empty=False, progress=False, **options):
        if agents < 0:
            raise CommandError("--agents must be zero or more")
        directory = Agents()
        try:
            if if_empty and directory.any_exist():
                self.stdout.write("Demo data: agents exist already, nothing loaded.")
                return
            rng = random.Random(seed)
            fake = Faker()
            fake.seed_instance(seed)
            catalog = directory.catalog
            dims = dict(catalog.dimensions)
            demo = []
            for _ in range(agents):
                skills = {}
                for name, values in dims.items():
                    # gender-like dimensions (one value each) vs language-like (one to three)
                    many = name.startswith("language") or name.endswith("s")
                    count = rng.randint(1, min(3, len(values))) if many else 1
                    skills[name] = rng.sample(list(values), count)
                gender = skills.get("gender", ["X"])[0]
                person = fake.name_female() if gender == "F" else fake.name_male() if gender == "M" else fake.name_nonbinary()
                demo.append(directory.build(person, skills))
            bar = ProgressBar(self.stdout, "agents", agents, force=progress)
            written = directory.create_many(demo, on_batch=bar.advance)
            bar.close()
        except errors.DynamoError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(self.style.SUCCESS(f"Demo data: {written} agents written."))
