"""Audited changes of the centre's lines and routing profiles: created, changed, removed."""

from __future__ import annotations

from collections.abc import Mapping

from queues_app import event_names as named
from queues_app.lines.profiles import Profile, ProfileStore
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

    def put_profile(self, data: Mapping[str, object]) -> tuple[Profile, str]:
        """Create a routing profile or change it from `version`, as `put_line`."""
        profiles = ProfileStore(self.recorder.call_center.db)
        profile_id = str(data.get("profile_id", ""))
        known = {line.line_id for line in self.lines.all()}
        with self.recorder.telling_what_changed("profile", profile_id):
            before = profiles.read().profiles.get(profile_id)
            profile = profiles.put(data, known=known)
        if before is not None and before.version == profile.version:
            return profile, "replayed"
        created = profile.version == 1
        action = named.PROFILE_CREATED if created else named.PROFILE_EDITED
        summary = (
            f"routing profile {profile.name} created"
            if created
            else f"routing profile {profile.name} changed to version {profile.version}"
        )
        self.recorder.record(
            action, "profile", profile_id, summary, before.as_dict() if before else None, profile.as_dict()
        )
        return profile, "created" if created else "changed"

    def delete_profile(self, profile_id: str, version: int) -> Profile:
        """Remove a routing profile no agent names, from the version read."""
        agents = self.recorder.call_center.agents
        store = ProfileStore(self.recorder.call_center.db)
        store.refuse_while_used(profile_id, [agent.name for agent in agents.with_profile(profile_id)])
        with self.recorder.telling_what_changed("profile", profile_id):  # a refusal of a stale version says why
            profile = store.delete(profile_id, version)
        summary = f"routing profile {profile.name} removed"
        self.recorder.record(named.PROFILE_REMOVED, "profile", profile_id, summary, profile.as_dict(), None)
        return profile
