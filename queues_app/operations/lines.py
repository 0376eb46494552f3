"""Audited changes of the centre's lines: created, changed, removed."""

from __future__ import annotations

from collections.abc import Mapping

from queues_app import event_names as named
from queues_app.lines.records import Line
from queues_app.operations.base import Recorder


class LineOperations:
    """Audited changes of lines, each from the version it was decided on."""

    def __init__(self, recorder: Recorder):
        self.recorder = recorder
        self.lines = recorder.call_center.lines

    def put_line(self, data: Mapping[str, object]) -> tuple[Line, str]:
        """Create the line (no version, or 0) or change it from `version`: (the line as
        stored, and `created`, `changed` or `replayed`: the same change sent again, answered
        with the line as it made it, recorded once)."""
        line_id = str(data.get("line_id", ""))
        with self.recorder.telling_what_changed("line", line_id):
            before = next((line for line in self.lines.configured() if line.line_id == line_id), None)
            line = self.lines.put(data)
        if before is not None and before.version == line.version:
            return line, "replayed"  # the same change sent again: made already, recorded then
        created = line.version == 1
        action = named.LINE_CREATED if created else named.LINE_EDITED
        summary = f"line {line.name} created" if created else f"line {line.name} changed to version {line.version}"
        self.recorder.record(
            action, "line", line.line_id, summary, before.as_dict() if before else None, line.as_dict()
        )
        return line, "created" if created else "changed"

    def delete_line(self, line_id: str, version: int) -> Line:
        """Remove a line nobody waits on, from the version read."""
        waiting = self.recorder.call_center.line.on_line([line_id])[line_id]
        with self.recorder.telling_what_changed("line", line_id):
            line = self.lines.delete(line_id, version, waiting=waiting)
        self.recorder.record(named.LINE_REMOVED, "line", line_id, f"line {line.name} removed", line.as_dict(), None)
        return line
