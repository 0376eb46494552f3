"""What the call center's sides (`Availability`, `Arrivals`) share: its parts, which
`CallCenter.__init__` builds."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from queues_app.agents.roster import Agents
from queues_app.agents.skills import SkillCatalog
from queues_app.calls.store import Calls
from queues_app.centre.table import CallCenterTable
from queues_app.ddb.client import Dynamo
from queues_app.routing.escalation import Escalator
from queues_app.routing.line import WaitingLine
from queues_app.routing.matching import Matcher


class Parts:
    """What the call center's sides share (set by `CallCenter.__init__`)."""

    db: Dynamo
    catalog: SkillCatalog
    clock: Callable[[], datetime]
    default_order: str
    writes: CallCenterTable
    agents: Agents
    calls: Calls
    line: WaitingLine
    matcher: Matcher
    escalator: Escalator

    @property
    def table_name(self) -> str:
        return self.writes.name
