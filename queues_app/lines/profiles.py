"""Routing profiles: the lines an agent serves, each with a priority and a delay (Amazon
Connect's routing profile). An agent who frees up takes a caller of their highest-priority
line first; a line with a delay offers its callers to the agent only once they have
waited that long. An agent names a shared profile (`profile`) or carries their own
(`lines`); with neither they serve every line.

Named profiles are items of one partition (`PROFILES` / `<profile_id>`), read together
with one Query and kept a few seconds per process, as lines are. The delays agents carry
of their own are noted in the same partition (`PROFILES` / `~inline`), so that a waiting
caller's place says when a delay next admits more agents (docs/architecture.md,
"Routing profiles").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from queues_app.ddb import errors
from queues_app.ddb.client import Dynamo
from queues_app.ddb.recent import RecentReads
from queues_app.ddb.versioned import delete_at_version, put_from_version, why_refused
from queues_app.lines.records import LINE_ID, LINE_ID_RULE
from queues_app.text import hidden_problem

PROFILES_PK = "PROFILES"
INLINE_DELAYS = "~inline"  # sorts after every profile id
PROFILE_ID, PROFILE_ID_RULE = LINE_ID, LINE_ID_RULE  # a profile is named as a line is
NAME_MAX = 100
PRIORITY_MIN, PRIORITY_MAX = 1, 9
MAX_DELAY_SECONDS = 3600
MAX_LINES = 50
TERMS = ("priority", "delay_seconds")
MAX_AGE_SECONDS = 5.0


@dataclass(frozen=True)
class Terms:
    """How an agent serves one line: `priority` 1 first, and the callers' wait before they
    are offered to this agent (`delay_seconds`)."""

    priority: int = 1
    delay_seconds: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"priority": self.priority, "delay_seconds": self.delay_seconds}


Serving = Mapping[str, Terms]  # line id -> terms


@dataclass(frozen=True)
class Profile:
    profile_id: str
    name: str
    lines: Mapping[str, Terms] = field(default_factory=dict)
    version: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "profile_id": self.profile_id,
            "name": self.name,
            "lines": lines_as_dict(self.lines),
            "version": self.version,
        }


def lines_as_dict(lines: Serving) -> dict[str, dict[str, int]]:
    return {line_id: terms.as_dict() for line_id, terms in lines.items()}


def _refuse(field_name: str, problem: str) -> errors.InvalidRequest:
    return errors.InvalidRequest(f"{field_name}: {problem}", field=field_name)


def _whole(value: object, field_name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _refuse(field_name, f"a whole number from {low} to {high}, not {value!r}.")
    return value


def parse_lines(data: object, *, known: set[str] | None = None, field_name: str = "lines") -> dict[str, Terms]:
    """The lines an agent serves, from `{"support": {"priority": 1}, "sales": {"priority":
    2, "delay_seconds": 30}}`, every value checked; with `known`, each line must be one of
    them. Refused with `errors.InvalidRequest` naming the part at fault."""
    if not isinstance(data, Mapping) or not data:
        raise _refuse(field_name, 'the lines served, e.g. {"support": {"priority": 1}}.')
    if len(data) > MAX_LINES:
        raise _refuse(field_name, f"at most {MAX_LINES} lines.")
    parsed = {}
    for line_id, terms in data.items():
        at = f"{field_name}.{line_id}"
        if not isinstance(line_id, str) or not LINE_ID.match(line_id):
            raise _refuse(field_name, f"{str(line_id)[:50]!r} is not a line id.")
        if known is not None and line_id not in known:
            raise _refuse(at, f"no line {line_id!r} is configured.")
        terms = {} if terms is None else terms
        if not isinstance(terms, Mapping):
            raise _refuse(at, 'its terms, e.g. {"priority": 2, "delay_seconds": 30}.')
        unknown = sorted(set(terms) - set(TERMS))
        if unknown:
            raise _refuse(at, f"unknown {', '.join(map(str, unknown))}; the terms are priority and delay_seconds.")
        parsed[line_id] = Terms(
            _whole(terms.get("priority", 1), f"{at}.priority", PRIORITY_MIN, PRIORITY_MAX),
            _whole(terms.get("delay_seconds", 0), f"{at}.delay_seconds", 0, MAX_DELAY_SECONDS),
        )
    return parsed


def parse_profile(data: Mapping[str, Any], *, known: set[str] | None = None) -> Profile:
    """A named profile from its written form (`profile_id`, `name`, `lines`, `version`)."""
    unknown = sorted(set(data) - {"profile_id", "name", "lines", "version"})
    if unknown:
        raise _refuse(unknown[0], "unknown field; a profile has profile_id, name, lines and version.")
    profile_id = data.get("profile_id")
    if not isinstance(profile_id, str) or not PROFILE_ID.match(profile_id):
        raise _refuse("profile_id", f"{PROFILE_ID_RULE}.")
    name = data.get("name", profile_id)
    if not isinstance(name, str) or not name.strip() or len(name) > NAME_MAX:
        raise _refuse("name", f"1 to {NAME_MAX} characters.")
    if problem := hidden_problem(name):
        raise _refuse("name", problem)
    version = data.get("version", 0)
    return Profile(
        profile_id,
        name.strip(),
        parse_lines(data.get("lines"), known=known),
        _whole(version, "version", 0, 2**53 - 1),
    )


def stored_lines(data: Mapping[str, Any] | None) -> dict[str, Terms]:
    """Lines as stored (checked when written; numbers come back as Decimals)."""
    return {
        line_id: Terms(int(terms.get("priority", 1)), int(terms.get("delay_seconds", 0)))
        for line_id, terms in (data or {}).items()
    }


@dataclass(frozen=True)
class Read:
    """The named profiles, and the delays agents' own profiles note per line."""

    profiles: Mapping[str, Profile]
    inline_delays: Mapping[str, frozenset[int]]

    @property
    def in_use(self) -> bool:
        return bool(self.profiles or self.inline_delays)


# --- reading a profile as routing does ---------------------------------------------------


def tiers(serving: Serving) -> list[set[str]]:
    """The lines served, grouped by priority, first priority first."""
    grouped: dict[int, set[str]] = {}
    for line_id, terms in serving.items():
        grouped.setdefault(terms.priority, set()).add(line_id)
    return [grouped[p] for p in sorted(grouped)]


def admits(serving: Serving | None, line_id: str | None, waited_seconds: float) -> bool:
    """Whether an agent serving `serving` (None: every line) may be offered a caller of
    `line_id` who has waited `waited_seconds`."""
    if serving is None:
        return True
    terms = serving.get(line_id or "")
    return terms is not None and waited_seconds >= terms.delay_seconds


def admits_message(message: Mapping[str, Any], read: Read, line_id: str | None, waited_seconds: float) -> bool:
    """Whether the queued agent of this queue message (its `pf`, the profile named, or its
    `ln`, the agent's own lines and their delays) may be offered the caller."""
    if "pf" in message:
        profile = read.profiles.get(message["pf"])
        return admits(profile.lines if profile else None, line_id, waited_seconds)
    if "ln" in message:
        delay = message["ln"].get(line_id or "")
        return delay is not None and waited_seconds >= int(delay)
    return True


def describe(serving: Serving | None) -> str:
    """The lines served in words: "support (1), sales (2, after 30 s)"; "every line"."""
    if not serving:
        return "every line"
    parts = []
    for line_id, terms in sorted(serving.items(), key=lambda item: (item[1].priority, item[0])):
        after = f", after {terms.delay_seconds} s" if terms.delay_seconds else ""
        parts.append(f"{line_id} ({terms.priority}{after})")
    return ", ".join(parts)


_READ: RecentReads[Read] = RecentReads(MAX_AGE_SECONDS)


class ProfileStore:
    def __init__(self, db: Dynamo):
        self.db = db
        self.table = db.table("callcenter")

    def read(self) -> Read:
        """Every named profile and the agents' own delays (one strongly consistent Query)."""
        items = self.db.partition_items(self.table, PROFILES_PK, ConsistentRead=True)
        profiles: dict[str, Profile] = {}
        inline: dict[str, set[int]] = {}
        for item in items:
            if item["sk"] == INLINE_DELAYS:
                for noted in item.get("delays") or ():
                    line_id, _, delay = str(noted).rpartition(":")
                    inline.setdefault(line_id, set()).add(int(delay))
            else:
                lines = stored_lines(item.get("lines"))
                profiles[item["sk"]] = Profile(
                    item["sk"], item.get("name", item["sk"]), lines, int(item.get("version", 0))
                )
        return _READ.keep(self.db, Read(profiles, {k: frozenset(v) for k, v in inline.items()}))

    def current(self) -> Read:
        """As routing uses them: read at most MAX_AGE_SECONDS ago by this process."""
        read = _READ.get(self.db)
        return self.read() if read is None else read

    def all(self) -> list[Profile]:
        return sorted(self.read().profiles.values(), key=lambda p: p.profile_id)

    def get(self, profile_id: str) -> Profile:
        profile = self.read().profiles.get(profile_id)
        if profile is None:
            raise errors.NotFound(f"No routing profile {profile_id!r}.")
        return profile

    def serving(self, profile_id: str | None, lines: Serving | None) -> Serving | None:
        """What an agent serves: their named profile's lines, their own, or (None) every
        line. A named profile removed meanwhile serves every line, as no profile does."""
        if profile_id:
            profile = self.current().profiles.get(profile_id)
            return profile.lines if profile else None
        return lines or None

    def delays(self, line_id: str | None) -> set[int]:
        """Every delay after which some agent admits callers of `line_id`."""
        read = self.current()
        found = set(read.inline_delays.get(line_id or "", ()))
        for profile in read.profiles.values():
            if (terms := profile.lines.get(line_id or "")) is not None:
                found.add(terms.delay_seconds)
        found.discard(0)
        return found

    def delay_pairs(self) -> set[tuple[str, int]]:
        """Every (line, delay) some agent's profile sets, delays above 0."""
        read = self.current()
        pairs = {(line_id, d) for line_id, delays in read.inline_delays.items() for d in delays}
        for profile in read.profiles.values():
            pairs |= {(line_id, terms.delay_seconds) for line_id, terms in profile.lines.items()}
        return {(line_id, d) for line_id, d in pairs if d > 0}

    def note_inline(self, lines: Serving) -> None:
        """Note the delays an agent's own profile sets, before the agent is written: a
        caller waiting on one of these lines is offered again when each passes. Only
        grows: a delay no agent sets any more costs one more offer, nothing else."""
        noted = sorted({f"{line_id}:{terms.delay_seconds}" for line_id, terms in lines.items()})
        if not noted:
            return
        self.db.call(
            "update_item",
            TableName=self.table,
            Key={"pk": {"S": PROFILES_PK}, "sk": {"S": INLINE_DELAYS}},
            UpdateExpression="ADD delays :noted",
            ExpressionAttributeValues={":noted": {"SS": noted}},
        )
        _READ.forget(self.db)

    def put(self, data: Mapping[str, Any], *, known: set[str]) -> Profile:
        """Create a profile (`version` 0 or left out) or change one (`version` as read);
        the same change sent again is answered as made."""
        profile = parse_profile(data, known=known)
        stored = Profile(profile.profile_id, profile.name, profile.lines, profile.version + 1)
        item = {"pk": PROFILES_PK, "sk": profile.profile_id, **stored.as_dict()}
        try:
            put_from_version(self.db, self.table, item, profile.version)
        except errors.Conflict as exc:
            now = self.read().profiles.get(profile.profile_id)
            if now is not None and now == stored:
                return now  # this change, sent again: done already
            what = f"routing profile {profile.profile_id!r}"
            raise why_refused(what, profile.version, now.version if now else None) from exc
        finally:
            _READ.forget(self.db)
        return stored

    def refuse_while_used(self, profile_id: str, used_by: list[str]) -> None:
        """Conflict naming the agents (`used_by`, as read) who name the profile, if any."""
        self.get(profile_id)  # gone already: NotFound says so
        if used_by:
            shown = ", ".join(used_by[:3]) + (f" and {len(used_by) - 3} more" if len(used_by) > 3 else "")
            raise errors.Conflict(f"Routing profile {profile_id!r} is used by {shown}: give them another first.")

    def delete(self, profile_id: str, version: int) -> Profile:
        """Remove a profile, from the version read (no agent naming it: `refuse_while_used`)."""
        profile = self.get(profile_id)
        if profile.version != version:
            raise errors.Conflict(
                f"Routing profile {profile_id!r} changed since version {version}: it is at version {profile.version}."
            )
        try:
            delete_at_version(
                self.db, self.table, {"pk": PROFILES_PK, "sk": profile_id}, version, f"Routing profile {profile_id!r}"
            )
        finally:
            _READ.forget(self.db)
        return profile
