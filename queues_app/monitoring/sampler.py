"""The sampler behind `collect_metrics`: every queue's gauges into the current minute."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from queues_app.agents.records import AgentStatus
from queues_app.centre.call_center import CallCenter
from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.clock import now
from queues_app.figures import service_level, tally
from queues_app.figures.counters import CALLS, LIVE, SPILLOVER, TASKS, MetricsStore
from queues_app.monitoring.overview import Dashboard
from queues_app.shipments.named import NamedQueues
from queues_app.shipments.queue import DEFAULT_QUEUE, SPILLOVER_QUEUE

AGENTS_PREFIX = "agents_"  # a sample's count of the agents in one status: agents_ringing


def shipment_queues(db: Dynamo) -> list[tuple[str, str]]:
    """(the figures' name, the queue) of every shipment queue: live, spillover and each
    named queue (its settings as read in the last few seconds)."""
    named = [queue.queue_id for queue in NamedQueues(db).current() if queue.queue_id != DEFAULT_QUEUE]
    return [(LIVE, DEFAULT_QUEUE), (SPILLOVER, SPILLOVER_QUEUE), *((queue, queue) for queue in named)]


class MetricsCollector:
    """Samples every queue's gauges into the current minute and writes the counts this
    process holds: what `collect_metrics` does every few seconds."""

    def __init__(self, db: Dynamo | None = None, clock: Callable[[], datetime] = now):
        self.db = db or default()
        self.clock = clock
        self.store = MetricsStore(self.db, clock)
        self.dashboard = Dashboard(CallCenter(self.db), clock=clock)
        self._agents: dict = {}  # agents by status, as the last `gauges` counted them

    def gauges(self) -> dict[str, dict[str, float | None]]:
        calls = self.dashboard.calls_panel()
        self._agents = calls.agents  # the occupancy sample reuses these counts
        tasks = self.dashboard.tasks_panel()
        figures = {
            CALLS: {
                "depth": calls.callers_waiting.value,
                "in_flight": calls.in_flight.value,
                "oldest_age": calls.oldest_wait_seconds,
                # The agents in each status (ringing, attending, not ready...), for /metrics.
                **{f"{AGENTS_PREFIX}{status}": figure.value for status, figure in calls.agents.items()},
            },
            TASKS: {
                "depth": tasks.pending.value,
                "in_flight": tasks.taken.value,
                "dlq": tasks.failed.value,
                "oldest_age": tasks.oldest_pending_age_seconds,
            },
        }
        for name, queue in shipment_queues(self.db):
            panel = self.dashboard.shipments_panel(queue)
            figures[name] = {
                "depth": panel.queued.value + panel.delayed.value,
                "in_flight": panel.in_flight.value,
                "dlq": panel.dlq.value,
                "oldest_age": panel.oldest_age_seconds,
            }
        return figures

    def sample(self) -> dict[str, dict[str, float | None]]:
        figures = self.gauges()
        self._sample_occupancy()
        for queue, values in figures.items():
            self.store.record_gauges(queue, values)
        self.store.flush()
        self.count_facts()
        return figures

    def sample_occupancy(self) -> None:
        """The agents counted by status, and the occupancy sample alone (the simulated days
        take it without the queues' gauges), written with this process's next flush."""
        self._agents = self.dashboard.calls_panel().agents
        self._sample_occupancy()

    def _sample_occupancy(self) -> None:
        # Occupancy is sampled, as Amazon Connect defines it: agents busy with a call
        # (ringing, attending or in its wrap-up) over those busy or idle in the queue; an
        # agent not ready (a break, a meeting) or offline is neither.
        agents = self._agents
        busy = sum(agents[status].value for status in AgentStatus.OCCUPIED)
        staffed = busy + sum(agents[status].value for status in (AgentStatus.QUEUED, AgentStatus.AVAILABLE))
        service_level.sample_occupancy(self.db, busy, staffed, moment=self.clock())

    def count_facts(self) -> tally.TallyReport:
        """Count the call facts nobody has counted yet: those of a process that died after
        its change, or that has not flushed since."""
        return tally.Tally(self.db).sweep()
