"""The agents' days: per agent and centre's day (its TIME_ZONE), the time in each status
(not ready by reason), the calls handled, answered (within their line's threshold) and
missed, counted from facts exactly once as the service level is (`figures/tally.py`).

Every change of an agent's status writes a fact in its own transaction (`facts.STATUS`:
from what, since when, to what, when); counting it adds the time spent in the status
left to the days it spans, a call handled when it leaves attending, an offer missed when
it leaves ringing for not ready, and a not ready begun. An answered call's fact carries
who answered it. Items in the metrics table, kept REPORT_RETENTION_DAYS:

    pk AGENT_DAY#<n>   sk <YYYY-MM-DD>#<agent id>   n = a hash of the agent id over 16

Figures: `sec_<status>` (seconds in each status), `nr_sec#<reason>` and `nr_count#<reason>`
(not ready by reason: seconds, and times begun), `handled`, `missed`, `answered`,
`answered_within`, `wait_sum`, `changes` (of status). The stretch an agent is in now is not in them until it
ends: the report adds it from the agent's record.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from queues_app.ddb import parallel
from queues_app.ddb.client import Dynamo
from queues_app.ddb.clock import centre_zone, from_iso, now
from queues_app.ddb.codec import marshal
from queues_app.ddb.shards import Spread
from queues_app.figures import service_level
from queues_app.figures.intervals import day_bounds
from queues_app.lines.store import Promise

AGENT_DAYS = Spread("AGENT_DAY", 16)
MISSED_REASONS = ("missed", "disconnected")  # leaving ringing for these: an offer not picked up
RINGING, ATTENDING, NOT_READY = "ringing", "attending", "not_ready"

Figure = tuple[str, str, timedelta | None, dict[str, float]]


def day_key(day: str, agent_id: str) -> tuple[str, str]:
    return AGENT_DAYS.of(agent_id), f"{day}#{agent_id}"


def centre_days(start: datetime, end: datetime) -> Iterator[tuple[str, float]]:
    """The centre's days [start, end) spans, each with the seconds of it in that day."""
    zone = centre_zone()
    moment = start
    while moment < end:
        local = moment.astimezone(zone)
        next_midnight = datetime.combine(local.date() + timedelta(days=1), datetime.min.time(), tzinfo=zone)
        until = min(end, next_midnight)
        yield local.date().isoformat(), (until - moment).total_seconds()
        moment = until


def status_seconds(status: str, reason: str | None, start: datetime, end: datetime) -> Iterator[tuple[str, dict]]:
    """(day, figures) of a stretch in `status` from `start` to `end`."""
    for day, seconds in centre_days(start, end):
        values = {f"sec_{status}": seconds}
        if status == NOT_READY:
            values[f"nr_sec#{reason or 'none'}"] = seconds
        yield day, values


def status_figures(fact: dict) -> list[Figure]:
    """What one change of status adds: the stretch it ends, and what it counts on its day."""
    agent_id, at = fact["agent_id"], from_iso(fact["at"])
    if at is None:
        return []
    keep = service_level.report_retention()
    added: dict[str, dict[str, float]] = {}

    def add(day: str, values: dict) -> None:
        into = added.setdefault(day, {})
        for name, value in values.items():
            into[name] = into.get(name, 0.0) + value

    was, to = fact.get("from"), fact.get("to")
    since = from_iso(fact.get("since"))
    if was and since is not None and since < at:
        for day, values in status_seconds(was, fact.get("from_reason"), since, at):
            add(day, values)
    today = at.astimezone(centre_zone()).date().isoformat()
    if was == ATTENDING and to != ATTENDING:
        add(today, {"handled": 1})
    if was == RINGING and to == NOT_READY and fact.get("reason") in MISSED_REASONS:
        add(today, {"missed": 1})
    if to == NOT_READY:
        add(today, {f"nr_count#{fact.get('reason') or 'none'}": 1})
    add(today, {"changes": 1})
    return [(*day_key(day, agent_id), keep, values) for day, values in added.items()]


def answered_figures(fact: dict, seconds: float, promise: Promise | None) -> list[Figure]:
    """What a call answered by an agent adds to their day: answered, within the threshold
    of the call's line (the centre's without one), and the wait."""
    at = from_iso(fact["at"])
    if at is None or not fact.get("agent_id"):
        return []
    threshold = promise.service_level_seconds if promise else service_level.threshold_seconds()
    values = {"answered": 1.0, "answered_within": 1.0 if seconds <= threshold else 0.0, "wait_sum": seconds}
    day = at.astimezone(centre_zone()).date().isoformat()
    return [(*day_key(day, fact["agent_id"]), service_level.report_retention(), values)]


# --- reading a day back: the agents' report ----------------------------------------------

# The statuses an agent is logged in in (every one but offline); idle in the queue (queued,
# and the moment of joining it) and busy with a call, which occupancy divides as the
# interval report's samples do.
LOGGED_IN = ("available", "queued", RINGING, ATTENDING, "wrap_up", NOT_READY)
IDLE = ("available", "queued")
BUSY = (RINGING, ATTENDING, "wrap_up")
STAFFED = (*IDLE, *BUSY)


@dataclass(frozen=True)
class OpenStretch:
    """The status an agent is in now, as the roster has it: not in their days' figures
    until it ends, so the report adds what of it falls in the day asked."""

    agent_id: str
    status: str
    since: str | None
    reason: str | None = None

    def figures(self, day: date, moment: datetime) -> dict[str, float]:
        """Its seconds inside `day` and up to `moment` (nothing when none are)."""
        since = from_iso(self.since)
        start, end = day_bounds(day)
        begin, until = max(since or end, start), min(moment, end)  # no since: nothing to count from
        if begin >= until:
            return {}
        return {
            name: value
            for _, values in status_seconds(self.status, self.reason, begin, until)
            for name, value in values.items()
        }


@dataclass
class AgentDay:
    """One agent's day (or, with the figures of every agent added up, the centre's): the
    figures as stored, and the report's figures read from them (docs/architecture.md,
    "The agents' report")."""

    agent_id: str | None
    name: str | None  # None: not on the roster any more (removed)
    figures: dict[str, float] = field(default_factory=dict)

    @property
    def removed(self) -> bool:
        return self.agent_id is not None and self.name is None

    def add(self, values: dict[str, float]) -> None:
        for name, value in values.items():
            self.figures[name] = self.figures.get(name, 0.0) + float(value)

    def count(self, name: str) -> int:
        return int(round(self.figures.get(name, 0.0)))

    def seconds(self, *statuses: str) -> float:
        return sum(self.figures.get(f"sec_{status}", 0.0) for status in statuses)

    def not_ready(self) -> list[dict]:
        """Each reason the agent was not ready for: its seconds and how many times it began
        that day (longest first)."""
        reasons = {name.split("#", 1)[1] for name in self.figures if name.startswith(("nr_sec#", "nr_count#"))}
        rows = [
            {
                "reason": r,
                "seconds": _seconds(self.figures.get(f"nr_sec#{r}", 0.0)),
                "times": self.count(f"nr_count#{r}"),
            }
            for r in reasons
        ]
        return sorted(rows, key=lambda row: (-row["seconds"], row["reason"]))

    def row(self) -> dict:
        """The report's row: counts, seconds (to a tenth) and shares (None: nothing to divide)."""
        answered, handled = self.count("answered"), self.count("handled")
        talk, after_call = self.seconds(ATTENDING), self.seconds("wrap_up")
        staffed = self.seconds(*STAFFED)
        return {
            "agent_id": self.agent_id,
            "name": self.name,
            "removed": self.removed,
            "calls_handled": handled,
            "answered": answered,
            "answered_within": self.count("answered_within"),
            "service_level": round(self.count("answered_within") / answered, 4) if answered else None,
            "talk_seconds": _seconds(talk),
            "after_call_work_seconds": _seconds(after_call),
            "average_handle_seconds": _seconds((talk + after_call) / handled) if handled else None,
            "ringing_seconds": _seconds(self.seconds(RINGING)),
            "idle_seconds": _seconds(self.seconds(*IDLE)),
            "not_ready_seconds": _seconds(self.seconds(NOT_READY)),
            "not_ready": self.not_ready(),
            "missed_offers": self.count("missed"),
            "logged_in_seconds": _seconds(self.seconds(*LOGGED_IN)),
            "occupancy": round(self.seconds(*BUSY) / staffed, 4) if staffed else None,
        }


def _seconds(value: float) -> float:
    return round(value, 1)


@dataclass
class AgentsDay:
    """The agents' report of a centre's day: a row per agent who has figures that day or is
    logged in into it, in name order (removed agents last), and the totals."""

    day: date
    zone: str
    agents: list[AgentDay]
    totals: AgentDay

    @property
    def reasons(self) -> list[str]:
        """Every not-ready reason of the day, in order, for the columns of a table."""
        return sorted({entry["reason"] for agent in self.agents for entry in agent.not_ready()})


class AgentDayReader:
    def __init__(self, db: Dynamo):
        self.db = db

    def figures(self, day: date, agent_id: str | None = None) -> dict[str, dict[str, float]]:
        """Each agent's figures of `day` (agent id -> figures): one Query per partition, sent
        together; or only `agent_id`'s, one Query of its item (the web role reads the metrics
        table by Query alone)."""
        if agent_id is not None:
            pk, sk = day_key(day.isoformat(), agent_id)
            items = self._query(pk, "sk = :sk", sk)
        else:
            prefix = f"{day.isoformat()}#"
            parts = parallel.each(lambda pk: self._query(pk, "begins_with(sk, :sk)", prefix), AGENT_DAYS.partitions())
            items = [item for part in parts for item in part]
        alive = now().timestamp()
        return {
            item["sk"].split("#", 1)[1]: {k: float(v) for k, v in item.items() if k not in ("pk", "sk", "expires_at")}
            for item in items
            if float(item.get("expires_at") or alive) >= alive  # DynamoDB deletes expired items only eventually
        }

    def _query(self, pk: str, condition: str, sk: str) -> list[dict]:
        values = marshal({":pk": pk, ":sk": sk})
        return list(
            self.db.items(
                "query",
                TableName=self.db.table("metrics"),
                KeyConditionExpression=f"pk = :pk AND {condition}",
                ExpressionAttributeValues=values,
            )
        )


def agents_day(
    day: date,
    figures: dict[str, dict[str, float]],
    stretches: list[OpenStretch],
    names: dict[str, str],
    moment: datetime,
) -> AgentsDay:
    """The report from a day's figures (`AgentDayReader.figures`), the open stretches of the
    agents logged in at `moment`, and the roster's names (an agent missing from `names` was
    removed: shown by id). An agent with no figures that day and no stretch in it has no row."""
    agents: dict[str, AgentDay] = {}
    for agent_id, values in figures.items():
        agents.setdefault(agent_id, AgentDay(agent_id, names.get(agent_id))).add(values)
    for stretch in stretches:
        counted = stretch.figures(day, moment)
        if counted:
            agents.setdefault(stretch.agent_id, AgentDay(stretch.agent_id, names.get(stretch.agent_id))).add(counted)
    ordered = sorted(agents.values(), key=lambda a: (a.removed, (a.name or "").lower(), a.agent_id or ""))
    totals = AgentDay(None, None)
    for agent in ordered:
        totals.add(agent.figures)
    return AgentsDay(day, str(centre_zone()), ordered, totals)
