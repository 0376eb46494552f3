from django.core.management.base import BaseCommand, CommandError

from queues_app.agents.router import Router
from queues_app.ddb import errors, schema
from queues_app.ddb.client import default


class Command(BaseCommand):
    help = "Create, describe or delete the project's DynamoDB tables."

    def add_arguments(self, parser):
        parser.add_argument("action", choices=["create", "describe", "delete"])
        parser.add_argument("--yes", action="store_true", help="delete without asking")
        parser.add_argument("--exact", action="store_true", help="describe: count items with a COUNT scan")

    def handle(self, action, yes=False, exact=False, **options):
        db = default()
        try:
            if action == "create":
                created = schema.create_tables(db, log=self.stdout.write)
                self.stdout.write(self.style.SUCCESS(f"{len(created)} table(s) created at {db.endpoint}."))
                filled = Router(db).line.fill_waiting_index()
                if filled:
                    self.stdout.write(f"{filled} waiting caller(s) added to the waiting_by_arrival index.")
            elif action == "describe":
                self._describe(db, exact)
            else:
                self._delete(db, yes)
        except errors.DynamoError as exc:
            raise CommandError(f"{exc.message} (endpoint: {db.endpoint})") from exc

    def _describe(self, db, exact):
        self.stdout.write(f"Endpoint: {db.endpoint}   prefix: {db.prefix!r}")
        for state in schema.describe_tables(db, exact=exact):
            if not state.exists:
                self.stdout.write(self.style.WARNING(f"\n{state.name}: missing (run `dynamo_tables create`)"))
                continue
            self.stdout.write(f"\n{state.name}  [{state.status}]")
            self.stdout.write(f"  keys:     {state.keys}")
            for index in state.indexes or ["none"]:
                self.stdout.write(f"  index:    {index}")
            self.stdout.write(f"  ttl:      {state.ttl}")
            self.stdout.write(f"  stream:   {state.stream}")
            count = f"{state.item_count} (approximate, as DescribeTable reports it)"
            if state.exact_count is not None:
                count = f"{state.exact_count} (exact)"
            self.stdout.write(f"  items:    {count}")

    def _delete(self, db, yes):
        names = [s.name for s in schema.describe_tables(db) if s.exists]
        if not names:
            self.stdout.write("No tables to delete.")
            return
        if not yes:
            if not self.stdin_isatty():
                raise CommandError("Refusing to delete without confirmation; pass --yes.")
            answer = input(f"Delete {', '.join(names)} at {db.endpoint}? Type 'yes' to confirm: ")
            if answer.strip().lower() != "yes":
                self.stdout.write("Nothing deleted.")
                return
        schema.delete_tables(db, log=self.stdout.write)

    @staticmethod
    def stdin_isatty():
        import sys

        return sys.stdin.isatty()
