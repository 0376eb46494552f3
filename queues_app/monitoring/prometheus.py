"""The queues' figures in the Prometheus text format (`exposition`), for `/metrics`.

Gauges come from the latest sample in the metrics history (`collect_metrics` writes one
every 15 seconds); when the newest is older than two minutes, a scrape reads the queues'
figures itself and writes nothing: a scrape only ever reads. The queue events are the
running totals every process adds to; the workers' heartbeats are one Query. A scrape
costs about fifteen requests, however large the queues (a few more when nobody samples):
the service level of the calls adds two reads of the figures' 4 shards, 8 Queries
(`ServiceLevelCollector`).

The DynamoDB request counters (`ddb/meter.py`) and the request latencies
(`figures/latency.py`) are kept by each process instead. With PROMETHEUS_MULTIPROC_DIR
set (gunicorn's workers, `make serve` and the web unit set it) a scrape adds up every
worker's files, dead workers' included, so a total never goes down whichever worker
answers; without it (runserver, the tests, one process) they are this process's.
The figures read from DynamoDB are never in those files: each scrape reads them once.
"""

from __future__ import annotations

import os
from datetime import datetime

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

from queues_app.centre.call_center import CallCenter
from queues_app.ddb import meter
from queues_app.ddb.clock import now
from queues_app.figures import heartbeats, latency
from queues_app.figures.counters import CALLS, COUNTERS, GAUGES, QUEUES, MetricsStore, minute_of
from queues_app.figures.service_level import Figures, ServiceLevelReader, Window
from queues_app.monitoring.sampler import AGENTS_PREFIX, MetricsCollector, shipment_queues

STALE_AFTER_SECONDS = 120

HELP = {
    "depth": "Items waiting (callers, queued and delayed shipments, pending tasks)",
    "in_flight": "Items being worked on (attending agents, leased shipments, taken tasks)",
    "dlq": "Items in the dead-letter queue (failed tasks for the task queue)",
    "oldest_age": "Age of the oldest waiting item, in seconds",
}


class QueueCollector:
    def __init__(self, store: MetricsStore, collector: MetricsCollector):
        self.store = store
        self.collector = collector

    def _latest(self) -> dict[str, dict[str, float]]:
        named = [name for name, _ in shipment_queues(self.store.db) if name not in QUEUES]
        rows = {queue: self.store.latest(queue) for queue in (*QUEUES, *named)}
        latest = {queue: dict(row.values) if row else {} for queue, row in rows.items()}
        fresh = [r for r in rows.values() if r and "depth" in r.values]
        moment = now()
        newest = max(
            (datetime.strptime(r.minute, "%Y-%m-%dT%H:%M").replace(tzinfo=moment.tzinfo) for r in fresh), default=None
        )
        if newest is None or (moment - newest).total_seconds() > STALE_AFTER_SECONDS:
            # Nobody is sampling (no collect_metrics running): read the gauges now, as the
            # sampler would, but keep them to this answer (a scrape never writes). Figures
            # of an older minute (first attempts) are left out, as a sample would.
            current = minute_of(moment)
            gauges = self.collector.gauges()
            for queue, values in latest.items():
                row = rows[queue]
                if row is None or row.minute != current:
                    values.clear()
                values.update({k: round(float(v), 3) for k, v in gauges.get(queue, {}).items() if v is not None})
        return latest

    def collect(self):
        latest = self._latest()
        for gauge in GAUGES:
            suffix = "_seconds" if gauge == "oldest_age" else ""
            family = GaugeMetricFamily(f"switchboard_queue_{gauge}{suffix}", HELP[gauge], labels=["queue"])
            for queue, values in latest.items():
                if gauge in values:
                    family.add_metric([queue], values[gauge])
            yield family
        first = GaugeMetricFamily(
            "switchboard_age_of_first_attempt_seconds",
            "Age of shipments at their first attempt (retries left out), latest minute",
            labels=["queue", "stat"],
        )
        for queue, values in latest.items():
            if values.get("first_attempts"):
                first.add_metric([queue, "max"], values.get("first_attempt_age_max", 0))
                first.add_metric([queue, "mean"], values["first_attempt_age_sum"] / values["first_attempts"])
        yield first
        agents = GaugeMetricFamily(
            "switchboard_agents", "Agents in each status (ringing: offered a call, not picked up)", labels=["status"]
        )
        for name, value in sorted(latest.get(CALLS, {}).items()):
            if name.startswith(AGENTS_PREFIX):
                agents.add_metric([name.removeprefix(AGENTS_PREFIX)], value)
        yield agents
        totals = self.store.totals()
        events = CounterMetricFamily(
            "switchboard_queue_events", "Queue events since the metrics table was made", labels=["queue", "event"]
        )
        for queue, values in sorted(totals.items()):
            for name in COUNTERS:
                if name in values:
                    events.add_metric([queue, name], values[name])
        yield events


class ServiceLevelCollector:
    """The calls' service level, per skill combination (`combination="all"` for every
    call) and window (`window="15m"`: the last 15 minutes; `"today"`: since midnight in the centre's TIME_ZONE),
    from the counters every process writes (two Queries). A ratio with no calls in its
    window is left out rather than reported as 0.

    - switchboard_calls_service_level_ratio: answered within SERVICE_LEVEL_SECONDS over
      calls that left the line (answered or abandoned)
    - switchboard_calls_answer_speed_seconds: average wait of the answered calls
    - switchboard_calls_longest_wait_seconds: longest wait of a call that left the line
    - switchboard_calls_handle_time_seconds: average handle time of the calls that ended
      (from the first answer to the end, transfers included; wrap-up is not counted)
    - switchboard_calls_answered, switchboard_calls_abandoned: calls in the window
    - switchboard_calls_abandon_ratio: abandoned over calls that left the line
    - switchboard_agent_occupancy_ratio: agents busy with a call (ringing, attending, wrap-up)
      over those busy or idle in the queue, summed over collect_metrics' samples in the
      window (`window` label only)
    - switchboard_calls_service_level_threshold_seconds: SERVICE_LEVEL_SECONDS
    """

    WINDOWS = {"15 minutes": "15m", "today": "today"}

    def __init__(self, reader: ServiceLevelReader):
        self.reader = reader

    def collect(self):
        figures = self.reader.read()
        windows: list[Window] = [figures.recent, figures.today]
        labels = ["window", "combination"]
        level = GaugeMetricFamily(
            "switchboard_calls_service_level_ratio",
            "Calls answered within the service-level threshold over calls that left the line",
            labels=labels,
        )
        speed = GaugeMetricFamily(
            "switchboard_calls_answer_speed_seconds", "Average wait of the calls answered", labels=labels
        )
        longest = GaugeMetricFamily(
            "switchboard_calls_longest_wait_seconds", "Longest wait of a call that left the line", labels=labels
        )
        handle = GaugeMetricFamily(
            "switchboard_calls_handle_time_seconds", "Average handle time of the calls that ended", labels=labels
        )
        answered = GaugeMetricFamily("switchboard_calls_answered", "Calls answered in the window", labels=labels)
        abandoned = GaugeMetricFamily("switchboard_calls_abandoned", "Calls abandoned in the window", labels=labels)
        abandon_rate = GaugeMetricFamily(
            "switchboard_calls_abandon_ratio", "Calls abandoned over calls that left the line", labels=labels
        )
        occupancy = GaugeMetricFamily(
            "switchboard_agent_occupancy_ratio",
            "Agents busy with a call (ringing, attending, wrap-up) over agents busy or idle, "
            "over the samples in the window",
            labels=["window"],
        )
        for window in windows:
            name = self.WINDOWS[window.name]
            for combination, f in [("all", window.overall), *sorted(window.by_combination.items())]:
                key = [name, combination]
                answered.add_metric(key, f.answered)
                abandoned.add_metric(key, f.abandoned)
                for family, value in (
                    (level, f.service_level),
                    (speed, f.average_speed_of_answer),
                    (longest, f.wait_max),
                    (handle, f.average_handle_time),
                    (abandon_rate, f.abandon_rate),
                ):
                    if value is not None:
                        family.add_metric(key, round(value, 4))
            if window.occupancy.share is not None:
                occupancy.add_metric([name], round(window.occupancy.share, 4))
        yield from (level, speed, longest, handle, answered, abandoned, abandon_rate, occupancy)
        threshold = GaugeMetricFamily(
            "switchboard_calls_service_level_threshold_seconds", "The service level's answer threshold (seconds)"
        )
        threshold.add_metric([], figures.recent.threshold_seconds)
        yield threshold


class LineCollector:
    """Each configured line's day so far by its own promise, and its callers waiting now
    (`line` label; nothing while no line is configured): the lines (one Query), their
    counts (one BatchGetItem) and today's figures (one Query).

    - switchboard_line_waiting: callers waiting on the line now
    - switchboard_line_answered, switchboard_line_abandoned, switchboard_line_short_abandoned,
      switchboard_line_overflowed, switchboard_line_refused: callers today;
      switchboard_line_callbacks_requested, _connected, _failed: queued callbacks today
    - switchboard_line_service_level_ratio: answered within the line's threshold over callers
      who left it (short abandons left out); switchboard_line_service_level_target_ratio and
      switchboard_line_service_level_threshold_seconds: the line's promise
    """

    def collect(self):
        center = CallCenter()
        lines = center.lines.configured()
        if not lines:
            return
        waiting = center.line.on_line([line.line_id for line in lines])
        today = ServiceLevelReader(center.db).lines_today()
        names = (
            "waiting",
            "answered",
            "abandoned",
            "short_abandoned",
            "overflowed",
            "refused",
            "callbacks_requested",
            "callbacks_connected",
            "callbacks_failed",
        )
        families = {
            name: GaugeMetricFamily(f"switchboard_line_{name}", name.replace("_", " ").capitalize(), labels=["line"])
            for name in names
        }
        level = GaugeMetricFamily(
            "switchboard_line_service_level_ratio", "Answered within the line's threshold, today", labels=["line"]
        )
        target = GaugeMetricFamily("switchboard_line_service_level_target_ratio", "The line's target", labels=["line"])
        threshold = GaugeMetricFamily(
            "switchboard_line_service_level_threshold_seconds", "The line's answer threshold", labels=["line"]
        )
        for line in lines:
            key, figures = [line.line_id], today.by_combination.get(line.line_id, Figures())
            families["waiting"].add_metric(key, waiting[line.line_id])
            for name in names[1:]:
                families[name].add_metric(key, getattr(figures, name))
            if figures.service_level is not None:
                level.add_metric(key, round(figures.service_level, 4))
            target.add_metric(key, line.service_level_target)
            threshold.add_metric(key, line.service_level_seconds)
        yield from (*families.values(), level, target, threshold)


class WorkerCollector:
    """The processes' heartbeats (one Query): age of each one's last beat, and how many
    of each kind report (neither stale nor stopped)."""

    def collect(self):
        found = heartbeats.workers()
        age = GaugeMetricFamily(
            "switchboard_worker_last_beat_age_seconds",
            "Seconds since each long-running process's last heartbeat (expired ones left out)",
            labels=["kind", "host", "pid"],
        )
        for worker in found:
            age.add_metric([worker.kind, worker.host, str(worker.pid)], round(worker.age_seconds, 3))
        yield age
        count = GaugeMetricFamily(
            "switchboard_workers", "Processes of each kind reporting (neither stale nor stopped)", labels=["kind"]
        )
        kinds = dict.fromkeys(heartbeats.KINDS, 0) | dict.fromkeys((w.kind for w in found), 0)
        for worker in found:
            kinds[worker.kind] += worker.alive
        for kind, n in sorted(kinds.items()):
            count.add_metric([kind], n)
        yield count


def multiprocess_dir() -> str | None:
    """Where every process of the web server writes its counters, when they share them."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def add_process_figures(registry: CollectorRegistry) -> None:
    """The DynamoDB request counters and the request latencies: every worker's, added up
    from their files, or this process's alone."""
    directory = multiprocess_dir()
    if directory:
        MultiProcessCollector(registry, path=directory)
    else:
        for metric in (*meter.COUNTERS, latency.REQUEST_SECONDS):
            registry.register(metric)


def exposition() -> bytes:
    """Every figure, as a scrape answers it (DynamoError when DynamoDB fails)."""
    registry = CollectorRegistry(auto_describe=False)
    add_process_figures(registry)
    registry.register(QueueCollector(MetricsStore(), MetricsCollector()))
    registry.register(WorkerCollector())
    registry.register(ServiceLevelCollector(ServiceLevelReader(MetricsStore().db)))
    registry.register(LineCollector())
    return generate_latest(registry)
