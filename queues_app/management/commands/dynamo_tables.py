import json
import sys

from django.core.management.base import CommandError

from queues_app import upgrades
from queues_app.centre.call_center import CallCenter
from queues_app.ddb import cloudformation, errors, iam, schema
from queues_app.ddb.client import default
from queues_app.management.arguments import CheckedCommand, int_range
from queues_app.management.outcomes import dynamo_failure


class Command(CheckedCommand):
    help = (
        "Create, describe or delete the project's DynamoDB tables, or print a CloudFormation template "
        "for them, or a least-privilege IAM policy for one process role. describe exits non-zero when a "
        "table is missing; delete exits non-zero when it was not confirmed."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "action",
            choices=["create", "describe", "delete", "template", "iam-policy"],
            help="create the missing tables (idempotent), describe them, delete them, print a "
            "CloudFormation template (YAML) for them, or print the IAM policy (JSON) of one --role",
        )
        parser.add_argument(
            "--role",
            choices=iam.ROLES,
            help="iam-policy: the process role; "
            + "; ".join(f"{role}: {text}" for role, text in iam.ROLE_DESCRIPTIONS.items()),
        )
        parser.add_argument("--region", default="*", help="iam-policy: the tables' region in the ARNs (default: *)")
        parser.add_argument("--account", default="*", help="iam-policy: the AWS account id in the ARNs (default: *)")
        parser.add_argument(
            "--provisioned",
            action="store_true",
            help="template: provisioned capacity instead of on-demand billing",
        )
        parser.add_argument(
            "--read-capacity", type=int_range(1, 40000), default=5, help="template, with --provisioned: read units"
        )
        parser.add_argument(
            "--write-capacity", type=int_range(1, 40000), default=5, help="template, with --provisioned: write units"
        )
        parser.add_argument("--yes", action="store_true", help="delete: without asking")
        parser.add_argument("--exact", action="store_true", help="describe: count items with a COUNT scan")

    def handle(self, action, yes=False, exact=False, provisioned=False, role=None, **options):
        region, account = options.get("region") or "*", options.get("account") or "*"
        if action == "iam-policy":
            if role is None:
                raise CommandError(f"iam-policy needs --role, one of {', '.join(iam.ROLES)}.")
            document = iam.policy(role, prefix=default().prefix, region=region, account=account)
            self.stdout.write(json.dumps(document, indent=2))
            return
        if role is not None or (region, account) != ("*", "*"):
            raise CommandError(f"--role, --region and --account shape the IAM policy; they mean nothing to {action}.")
        if action == "template":
            document = cloudformation.template(
                provisioned=provisioned,
                read_capacity=options.get("read_capacity", 5),
                write_capacity=options.get("write_capacity", 5),
            )
            self.stdout.write(cloudformation.to_yaml(document), ending="")
            return
        if provisioned:
            raise CommandError(f"--provisioned shapes the template; it means nothing to {action}.")
        if exact and action != "describe":
            raise CommandError(f"--exact counts items for describe; it means nothing to {action}.")
        if yes and action != "delete":
            raise CommandError(f"--yes confirms delete; it means nothing to {action}.")
        db = default()
        try:
            if action == "create":
                created = schema.create_tables(db, log=self.stdout.write)
                self.stdout.write(self.style.SUCCESS(f"{len(created)} table(s) created at {db.endpoint}."))
                table = CallCenter(db).table
                if table.name in created:
                    upgrades.start_new(table)
                for done in upgrades.upgrade(table):
                    if done.moved:
                        self.stdout.write(f"{done.moved} {done.step.moved}.")
            elif action == "describe":
                self._describe(db, exact)
            else:
                self._delete(db, yes)
        except errors.DynamoError as exc:
            raise dynamo_failure(exc, db) from exc

    def _describe(self, db, exact):
        self.stdout.write(f"Endpoint: {db.endpoint}   prefix: {db.prefix!r}")
        missing = []
        for state in schema.describe_tables(db, exact=exact):
            if not state.exists:
                self.stdout.write(self.style.WARNING(f"\n{state.name}: missing (run `dynamo_tables create`)"))
                missing.append(state.name)
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
        if missing:
            raise CommandError(
                f"{len(missing)} table(s) missing: {', '.join(missing)}; create them with "
                "`python manage.py dynamo_tables create`."
            )

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
                raise CommandError("Nothing deleted: not confirmed.")
        schema.delete_tables(db, log=self.stdout.write)

    @staticmethod
    def stdin_isatty():
        return sys.stdin.isatty()
