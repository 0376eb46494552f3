"""The lines as every host shares them: one item each in the call-center table
(`LINES` / `<line_id>`), read together with one Query, changed with the same stale-version
rule as every other change (a change names the version it was made from; DynamoDB keeps
the first of two made from the same one)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.codec import marshal
from queues_app.lines.records import Defaults, Line, LineError, check_together, main_line, parse

LINES_PK = "LINES"
STORED = ("pk", "sk")


class LineStore:
    def __init__(self, db: Dynamo, *, dimensions: Mapping[str, Sequence[str]], defaults: Defaults):
        self.db, self.dimensions, self.defaults = db, dimensions, defaults
        self.table = db.table("callcenter")

    def configured(self) -> list[Line]:
        """The lines configured, by id (one strongly consistent Query)."""
        items = self.db.partition_items(self.table, LINES_PK, ConsistentRead=True)
        return sorted((self._line(item) for item in items), key=lambda line: line.line_id)

    def all(self) -> list[Line]:
        """The centre's lines: those configured, or `main` alone when none is."""
        return self.configured() or [main_line(self.defaults)]

    def get(self, line_id: str) -> Line:
        for line in self.all():
            if line.line_id == line_id:
                return line
        raise errors.NotFound(f"No line {line_id!r}.")

    def put(self, data: Mapping[str, object]) -> Line:
        """Create a line (`version` 0 or left out) or change one (`version` as read): the
        stored line with its new version. A change made from an older version is a
        Conflict; so is a line that breaks what lines must hold together (an overflow to
        a line that does not exist, or in a circle), checked against the lines as read."""
        line = parse(data, dimensions=self.dimensions, defaults=self.defaults)
        others = [other for other in self.configured() if other.line_id != line.line_id]
        stored = dataclasses.replace(line, version=line.version + 1)
        try:
            check_together([stored, *others])  # a circle is told from the line being changed
        except LineError as exc:
            raise errors.InvalidRequest(str(exc)) from exc
        condition = "attribute_not_exists(pk)" if line.version == 0 else "version = :expected"
        values = {} if line.version == 0 else {":expected": {"N": str(line.version)}}
        try:
            self.db.call(
                "put_item",
                TableName=self.table,
                Item=marshal({"pk": LINES_PK, "sk": line.line_id, **stored.as_dict()}),
                ConditionExpression=condition,
                **({"ExpressionAttributeValues": values} if values else {}),
            )
        except errors.Conflict as exc:
            now = next((other for other in self.configured() if other.line_id == line.line_id), None)
            if now is None:
                raise errors.NotFound(f"No line {line.line_id!r} to change: it was deleted.") from exc
            if line.version == 0:
                raise errors.Conflict(f"Line {line.line_id!r} exists already (version {now.version}).") from exc
            raise errors.Conflict(
                f"Line {line.line_id!r} changed since version {line.version}: it is at version {now.version}."
            ) from exc
        return stored

    def _line(self, item: dict) -> Line:
        """A stored line, read back through `parse` (numbers come back as ints and floats)."""
        data = {key: value for key, value in item.items() if key not in STORED}
        return parse(data, dimensions=self.dimensions, defaults=self.defaults)
