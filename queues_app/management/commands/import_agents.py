"""`manage.py import_agents FILE.csv [--dry-run]`: a whole roster from a CSV file, each
agent created or changed (from the version read) and audited."""

from __future__ import annotations

import getpass
from pathlib import Path

from django.core.management.base import CommandError

from queues_app.agents.files import RosterError, plan, read_csv
from queues_app.agents.roster import Agents
from queues_app.ddb import errors
from queues_app.lines.profiles import ProfileStore
from queues_app.management.arguments import CheckedCommand
from queues_app.management.outcomes import dynamo_failure, read_file
from queues_app.operations import Operations

MAX_FILE_BYTES = 5_000_000


class Command(CheckedCommand):
    help = (
        "Create and change agents from a CSV file with the columns agent_id, name and one per skill dimension "
        "(values separated by spaces or ';', each with its level after a colon: 'French:5 English:2'), and "
        "optionally profile (a named routing profile; empty: every line). The "
        "whole file is checked first (a row at fault: nothing changes); each agent is then created or changed "
        "from the version read, and audited. An agent queued or on a call is left as it is and named. Agents the "
        "file leaves out are left as they are."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="the CSV file")
        parser.add_argument("--dry-run", action="store_true", help="say what would change, change nothing")

    def handle(self, file: Path, dry_run: bool = False, **options):
        agents = Agents()
        text = read_file(file, MAX_FILE_BYTES, encoding="utf-8-sig")  # a spreadsheet's BOM read as none
        try:
            rows = read_csv(text, agents.catalog, set(ProfileStore(agents.db).read().profiles))
        except RosterError as exc:
            raise CommandError(f"{file}: {exc}; nothing was changed.") from exc
        try:
            current = {agent.agent_id: agent for agent in agents.get_many(row.agent_id for row in rows)}
            self._apply(plan(rows, current), dry_run)
        except errors.DynamoError as exc:
            raise dynamo_failure(exc, agents.db, "the agents before it were applied") from exc

    def _apply(self, changes, dry_run: bool) -> None:
        for change in changes:
            self.stdout.write(f"{change.action:7} {change.row.agent_id}: {change.detail}")
        todo = [change for change in changes if change.action != "same"]
        if dry_run or not todo:
            self.stdout.write("Dry run: nothing was changed." if dry_run else "Nothing to change.")
            return
        operations = Operations(getpass.getuser() or "command", "command")
        refused = []
        for change in todo:
            row = change.row
            try:
                if change.action == "create":
                    operations.create_agent(row.name, row.skills, agent_id=row.agent_id, profile=row.profile or None)
                else:
                    operations.update_agent(
                        row.agent_id,
                        name=row.name,
                        skills=row.skills,
                        expected_version=change.current.version,
                        **row.serving,
                    )
            except (errors.Conflict, errors.NotFound) as exc:
                refused.append(f"{row.agent_id} (line {row.line}): {exc.message}")
        applied = len(todo) - len(refused)
        self.stdout.write(f"Applied: {applied} agent(s).")
        if refused:
            raise CommandError("Left as they were: " + " ".join(refused))
