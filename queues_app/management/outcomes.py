"""How the project's management commands end when they cannot do all they were asked:
a `CommandError` (exit status 1) saying what is missing on one line, never a traceback."""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo


def dynamo_failure(exc: errors.DynamoError, db: Dynamo, after: str = "") -> CommandError:
    """The one-line error for DynamoDB trouble: what happened, where, and (`after`) what
    was done or not done because of it."""
    message = f"{exc.message} (endpoint: {db.endpoint})"
    if isinstance(exc, errors.TableMissing):
        message += "; create the tables with `python manage.py dynamo_tables create`"
    return CommandError(message + (f"; {after}" if after else ""))


def read_file(file: Path, max_bytes: int, *, too_large: str = "", encoding: str = "utf-8") -> str:
    """A file a command is given, as text: a CommandError saying why when it is larger than
    `max_bytes` (and `too_large`), missing, unreadable or not text."""
    try:
        if file.stat().st_size > max_bytes:
            raise CommandError(f"{file}: larger than {max_bytes:,} bytes{too_large}.")
        return file.read_text(encoding=encoding)
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"{file}: cannot be read ({exc}).") from exc


def require_tables(db: Dynamo, *logical_names: str) -> None:
    """Fail at once, with the reason, when DynamoDB cannot be reached or a table is
    missing: for a run that should end (--until-empty) rather than wait for DynamoDB."""
    for name in logical_names:
        try:
            db.call("describe_table", TableName=db.table(name))
        except errors.DynamoError as exc:
            raise dynamo_failure(exc, db) from exc
