"""`manage.py lines export` and `manage.py lines import FILE [--dry-run]`: the centre's
lines as a file to review, keep in version control and apply."""

from __future__ import annotations

import getpass
from pathlib import Path

from django.core.management.base import CommandError

from queues_app.centre.call_center import CallCenter
from queues_app.ddb import errors
from queues_app.lines.files import plan, read_toml, to_toml
from queues_app.lines.records import LineError
from queues_app.management.arguments import CheckedCommand
from queues_app.management.outcomes import dynamo_failure, read_file
from queues_app.operations import Operations

MAX_FILE_BYTES = 1_000_000


class Command(CheckedCommand):
    help = (
        "The centre's lines as a TOML file: `export` writes them to standard output; `import FILE` checks the "
        "file, says what it would do to each line and (without --dry-run) does it. A line changed since the "
        "file's version is refused and nothing is applied; lines the file leaves out are left as they are."
    )

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True, metavar="export|import")
        actions.add_parser("export", help="write the lines as TOML to standard output")
        bring = actions.add_parser("import", help="create and change lines from a TOML file")
        bring.add_argument("file", type=Path, help="the TOML file (`lines export` writes one)")
        bring.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")

    def handle(self, action, file=None, dry_run=False, **options):
        center = CallCenter()
        try:
            if action == "export":
                self.stdout.write(to_toml(center.lines.all()), ending="")
                return
            self._import(center, file, dry_run)
        except errors.DynamoError as exc:
            after = "the lines were left as they were" if action == "import" else ""
            raise dynamo_failure(exc, center.db, after) from exc

    def _import(self, center: CallCenter, file: Path, dry_run: bool) -> None:
        text = read_file(file, MAX_FILE_BYTES, too_large="; a centre's lines are far smaller")
        store = center.lines
        try:
            steps = plan(read_toml(text, dimensions=store.dimensions, defaults=store.defaults), store.configured())
        except LineError as exc:
            raise CommandError(f"{file}: {exc}; nothing was changed.") from exc
        for step in steps:
            self.stdout.write(f"{step.action:9} {step.line_id}: {step.detail}")
        stale = [step.line_id for step in steps if step.action == "stale"]
        if stale:
            raise CommandError(
                f"{', '.join(stale)} changed since the file was written; export again and redo the change. "
                "Nothing was changed."
            )
        todo = [step for step in steps if step.line is not None]
        if dry_run or not todo:
            self.stdout.write("Dry run: nothing was changed." if dry_run else "Nothing to change.")
            return
        operations = Operations(getpass.getuser() or "command", "command")
        for done, step in enumerate(todo):
            try:
                operations.put_line({**step.line.as_dict()})  # type: ignore[union-attr]
            except errors.DynamoError as exc:
                applied = ", ".join(s.line_id for s in todo[:done]) or "none"
                raise CommandError(f"{step.line_id}: {exc.message} Applied before it: {applied}.") from exc
        self.stdout.write(f"Applied: {len(todo)} line(s).")
