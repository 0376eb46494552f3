"""Presence: an agent's client (or the phone system for them) sends heartbeats, and with
AGENT_PRESENCE_SECONDS set, a queued or ringing agent whose client went quiet that long is
made not ready (`disconnected`) and taken out of every queue, a ringing call going back
to its place in line: no call is offered to a phone that is gone.

A heartbeat is one UpdateItem of the agent (`seen_at`), which the status index does not
project, so it rewrites no index entry and changes no version. The escalation loop finds
the quiet agents among the queued and ringing ones the status index lists (those queued
longer than the limit), reads them in one BatchGetItem, and settles each change on the
condition that no heartbeat came since: a heartbeat and a disconnection racing end in
one of the two. Cost: docs/scale.md, "Presence".
"""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from queues_app.agents.availability import Availability
from queues_app.agents.records import DISCONNECTED, Agent, AgentStatus, agent_from_item
from queues_app.agents.roster import Agents
from queues_app.calls.offers import Offers
from queues_app.calls.records import Call
from queues_app.calls.store import Calls
from queues_app.centre import keys
from queues_app.centre.table import CallCenterTable
from queues_app.ddb import errors
from queues_app.ddb.clock import to_iso
from queues_app.ddb.codec import marshal, unmarshal

PRESENCE_READ_CAP = 500  # quiet agents read per pass


def presence_seconds() -> float | None:
    """AGENT_PRESENCE_SECONDS: how long a queued or ringing agent's client may stay quiet,
    or None (the default): presence is not checked."""
    from django.conf import settings

    seconds = getattr(settings, "AGENT_PRESENCE_SECONDS", None)
    return float(seconds) if seconds else None


def last_sign(agent: Agent) -> str:
    """When the agent was last known to be there: their last heartbeat, or when they
    joined the queue if later (a client that never sent one has that long from then)."""
    return max(agent.seen_at or "", agent.queued_at or "")


class Presence:
    """Heartbeats, and the disconnection of agents whose clients went quiet."""

    def __init__(
        self, table: CallCenterTable, agents: Agents, calls: Calls, availability: Availability, offers: Offers
    ):
        self.table, self.agents, self.calls = table, agents, calls
        self.availability, self.offers = availability, offers
        self.db = table.db

    def heartbeat(self, agent_id: str) -> Agent:
        """The agent's client is there: one conditional UpdateItem (the agent as it is after)."""
        try:
            response = self.db.call(
                "update_item",
                TableName=self.table.name,
                Key=marshal(keys.agent(agent_id)),
                UpdateExpression="SET seen_at = :now",
                ConditionExpression="attribute_exists(pk)",
                ExpressionAttributeValues=marshal({":now": to_iso(self.table.clock())}),
                ReturnValues="ALL_NEW",
            )
        except errors.Conflict as exc:
            raise errors.NotFound(f"No agent {agent_id}.") from exc
        return agent_from_item(unmarshal(response["Attributes"]))

    def disconnect_absent(self, cap: int = PRESENCE_READ_CAP) -> list[tuple[Agent, Call | None]]:
        """Every queued or ringing agent quiet for AGENT_PRESENCE_SECONDS, made not ready
        (`disconnected`), each once; with the call that rang for them, as it is after
        (back in line, or given to the next agent). Nothing read when presence is off."""
        seconds = presence_seconds()
        if seconds is None:
            return []
        cutoff = to_iso(self.table.clock() - timedelta(seconds=seconds))

        def quiet(agent: Agent) -> bool:  # as the index has it: queued before the cutoff
            return (agent.queued_at or "") <= cutoff

        due = self.agents.ids_where(AgentStatus.QUEUED, quiet, cap)
        due += self.agents.ids_where(AgentStatus.RINGING, quiet, cap - len(due))
        done: list[tuple[Agent, Call | None]] = []
        # Read eventually consistent (half the units): the change's condition decides.
        for agent in self.agents.get_many(due, consistent=False):
            if last_sign(agent) > cutoff:
                continue
            gone = dataclasses.replace(agent, status=AgentStatus.NOT_READY, reason=DISCONNECTED, call_id=None)
            gone.version += 1
            if agent.status == AgentStatus.QUEUED and self.availability.disconnect(agent, cutoff):
                done.append((gone, None))
            elif agent.status == AgentStatus.RINGING and (call := self._rang_for(agent)) is not None:
                back = self.offers.miss_offer(
                    call.call_id, call.offer_sk or "", reason=DISCONNECTED, absent_since=cutoff
                )
                if back is not None:
                    done.append((gone, back))
        return done

    def _rang_for(self, agent: Agent) -> Call | None:
        call = self.calls.find(agent.call_id or "")
        if call is None or call.offer_sk is None or call.agent_id != agent.agent_id:
            return None
        return call
