"""/api/agents: the roster (agents added, renamed or given other skills, removed) and the
changes a phone system makes to one (made available, released from a call, logged off,
not ready), each from the version or call it names, and its client's heartbeats; with its
inputs and outputs."""

from __future__ import annotations

from typing import Annotated, ClassVar, cast

from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Schema, Status
from pydantic import Field, StrictInt

from queues_app import inputs
from queues_app.agents.presence import presence_seconds
from queues_app.agents.records import Agent
from queues_app.api import listing
from queues_app.api.auth import BearerToken
from queues_app.api.common import agent_and_call, api_operations, get_call_center, note_change, replayed
from queues_app.api.openapi import CHANGES, CURSOR, ITEM_CHANGES, READS, answers, per_page
from queues_app.api.schemas import (
    THEN_PROBLEM,
    VERSION_PROBLEM,
    AgentOut,
    AgentStatusName,
    CallEndedOut,
    CallOut,
    Cursor,
    InputSchema,
    ItemId,
    PageSize,
    Then,
    Version,
)
from queues_app.ddb.errors import Conflict
from queues_app.serializers import agent_to_json

router = Router()


# --- inputs and outputs ------------------------------------------------------------------


class VersionIn(InputSchema):
    """The version of the agent the request was decided on, as `GET /api/agents/{agent_id}`
    (or the answer of the last change) showed it: the change is made only from that
    version. Sent again after it took effect, the request is answered as it was
    (`Idempotent-Replayed: true`); after any other change, 409 with the agent as now."""

    version: Version = Field(description="The agent's `version` as you last read it.", examples=[7])

    PROBLEMS: ClassVar[dict[str, str]] = {"version": VERSION_PROBLEM}


LINES_EXAMPLE = {"support": {"priority": 1}, "sales": {"priority": 2, "delay_seconds": 30}}
LINES_PROBLEM = 'the lines served, e.g. {"support": {"priority": 1}, "sales": {"priority": 2, "delay_seconds": 30}}'


class AgentIn(InputSchema):
    """A new agent: their name and skills, and (to make a retry safe) the id to give them."""

    name: str = Field(description=f"As supervisors read it: {inputs.NAME_PROBLEM}.", examples=["Ana Lima"])
    skills: dict[str, list[str] | dict[str, StrictInt]] = Field(
        description="The values of each skill dimension the agent has (the centre's catalog), as a list (each at "
        'level 1) or with their levels 1 to 5 ({"French": 5, "English": 2}).',
        examples=[{"language": {"Spanish": 5, "English": 2}, "gender": ["F"]}],
    )
    agent_id: ItemId | None = Field(
        None,
        description="The id to give the agent (made up when left out). Sent again with the same name and skills, "
        "the agent is answered as made (`Idempotent-Replayed: true`); with others, 409.",
    )
    profile: str | None = Field(
        None, description="A named routing profile (`/api/profiles`) the agent serves lines by.", examples=["blended"]
    )
    lines: dict[str, dict[str, StrictInt]] | None = Field(
        None,
        description="Or the agent's own lines: each with its `priority` (1 first, to 9) and `delay_seconds` (a "
        "caller of that line is offered to this agent once they have waited that long). With neither, every line.",
        examples=[LINES_EXAMPLE],
    )

    PROBLEMS: ClassVar[dict[str, str]] = {
        "name": f"required: the agent's name, {inputs.NAME_PROBLEM}",
        "skills": 'required: values per dimension, e.g. {"language": ["French"]} or {"language": {"French": 5}}',
        "lines": LINES_PROBLEM,
    }


class AgentChangeIn(VersionIn):
    """What changes (a field left out stays as it is), from the version read. Refused
    (409) while the agent is queued or on a call."""

    name: str | None = Field(None, description=f"The agent's new name: {inputs.NAME_PROBLEM}.")
    skills: dict[str, list[str] | dict[str, StrictInt]] | None = Field(
        None, description="The agent's skills, all of them, with their levels or as lists (level 1)."
    )
    profile: str | None = Field(
        None, description="A named routing profile; null (with `lines` left out or null): every line."
    )
    lines: dict[str, dict[str, StrictInt]] | None = Field(
        None,
        description="The agent's own lines with their priority and delay (replacing a profile).",
        examples=[LINES_EXAMPLE],
    )

    PROBLEMS: ClassVar[dict[str, str]] = {**VersionIn.PROBLEMS, "lines": LINES_PROBLEM}


class ReleaseIn(InputSchema):
    """The call to end, and what the agent does once it has ended."""

    call_id: ItemId = Field(
        description="The call you are ending: the agent's `call_id` as you last read it. Only that call is ended; "
        "if it already ended, the request is answered as it was (same `then`) or refused (409).",
        examples=["3f2a9c1e0b7d4a65"],
    )
    then: Then = "queue"

    PROBLEMS: ClassVar[dict[str, str]] = {
        "then": THEN_PROBLEM,
        "call_id": "required: the id of the call you are ending (the agent's call_id as you last read it): "
        + inputs.ID_RULE,
    }


class NotReadyIn(InputSchema):
    """The agent's version as last read, and why they are not ready."""

    version: Version = Field(description="The agent's `version` as you last read it.", examples=[7])
    reason: str = Field(min_length=1, max_length=40, description="One of AGENT_NOT_READY_REASONS.", examples=["break"])

    PROBLEMS: ClassVar[dict[str, str]] = {
        "version": VERSION_PROBLEM,
        "reason": "required: why the agent is not ready, one of AGENT_NOT_READY_REASONS (at most 40 characters)",
    }


class AgentAndCallOut(Schema):
    agent: AgentOut
    call: CallOut | None = Field(description="The call the agent took, or null when they were queued.")


class AgentOnlyOut(Schema):
    agent: AgentOut


class HeartbeatOut(Schema):
    agent_id: str
    status: AgentStatusName
    seen_at: str = Field(description="This heartbeat's time (ISO 8601, UTC).")
    presence_seconds: float | None = Field(
        description="AGENT_PRESENCE_SECONDS: a queued or ringing agent whose client sends no heartbeat for that "
        "long is set not ready (`disconnected`); null: presence is not checked. Send one every third of it."
    )


class AgentsPageOut(Schema):
    agents: list[AgentOut]
    next_cursor: str | None = Field(description="Send as `cursor` for the next page; null on the last page.")


# --- operations ------------------------------------------------------------------------

AGENT_STATUS = Query(None, description="Only agents in this status.")
AGENTS_PER_PAGE = per_page("Agents", "a filtered page may hold fewer")
AGENT_SKILL = Query(
    None, description="Only agents with this skill, as `dimension:value`, e.g. `language:French`.", max_length=200
)


@router.get(
    "agents",
    url_name="api-agents",
    operation_id="listAgents",
    summary="List agents",
    **answers(
        {
            200: (
                AgentsPageOut,
                "A page of agents in the roster's order (by name), and the cursor of the next page.",
                (),
            )
        },
        400,
        *READS,
    ),
)
def list_agents(
    request: HttpRequest,
    status: AgentStatusName | None = AGENT_STATUS,
    skill: str | None = AGENT_SKILL,
    cursor: Cursor | None = CURSOR,
    limit: PageSize = AGENTS_PER_PAGE,
):
    """Agents in the roster's order (by name), a page at a time; filtered by status and
    by skill."""
    center = get_call_center()
    page = listing.agents_page(
        center, status=status, skill=listing.parse_skill(center, skill), cursor=cursor, limit=limit
    )
    return {"agents": [agent_to_json(agent) for agent in page.items], "next_cursor": page.next_cursor}


@router.get(
    "agents/{agent_id}",
    url_name="api-agent",
    operation_id="getAgent",
    summary="Read an agent",
    **answers({200: (AgentOut, "The agent as it is now.", ())}, 400, 404, *READS),
)
def agent_detail(request: HttpRequest, agent_id: ItemId):
    """The agent: status, skills, the call they attend."""
    return agent_to_json(get_call_center().agents.get(agent_id))


@router.post(
    "agents",
    url_name="api-agents",
    operation_id="createAgent",
    summary="Add an agent to the roster",
    **answers(
        {
            201: (AgentOut, "The agent, logged off (version 1).", ("Location", "Idempotent-Replayed")),
            200: (AgentOut, "The agent this very request made already.", ("Location", "Idempotent-Replayed")),
        },
        *ITEM_CHANGES,
    ),
)
def create_agent(request: HttpRequest, payload: AgentIn, response: HttpResponse):
    """Add an agent, logged off, with the skills given (each checked against the centre's
    catalog: 400 naming the one at fault), serving the lines of its `profile`, its own
    `lines`, or every line."""
    ops = api_operations(request)
    serving = {"profile": payload.profile, "lines": payload.lines}
    try:
        agent = ops.create_agent(payload.name, payload.skills, agent_id=payload.agent_id, **serving)
        status = 201
    except Conflict:
        existing = ops.agents.get(payload.agent_id or "")
        asked = ops.agents.build(payload.name, payload.skills, payload.agent_id, **serving)
        if (existing.version, existing.name, existing.skills, existing.levels, existing.profile, existing.lines) != (
            1, asked.name, asked.skills, asked.levels, asked.profile, asked.lines
        ):  # fmt: skip
            raise
        agent, status = existing, 200  # a retry of this very request
    if status == 201:
        note_change(request, "agent.create", agent.agent_id, "created")
    response["Location"] = f"/api/agents/{agent.agent_id}"
    replayed(response, status == 200)
    return Status(status, agent_to_json(agent))


@router.patch(
    "agents/{agent_id}",
    url_name="api-agent",
    operation_id="changeAgent",
    summary="Rename an agent or change their skills",
    **answers(
        {
            200: (
                AgentOut,
                "The agent as changed (`Idempotent-Replayed: true`: made already).",
                ("Idempotent-Replayed",),
            )
        },
        *ITEM_CHANGES,
    ),
)
def change_agent(request: HttpRequest, agent_id: ItemId, payload: AgentChangeIn, response: HttpResponse):
    """Change the agent's name, skills or the lines they serve from the `version` you read
    (409 from another, or while they are queued or on a call)."""
    ops = api_operations(request)
    name, skills = payload.name, cast(dict | None, payload.skills)
    if name is None or skills is None:  # what is left out stays as it is
        now = ops.agents.get(agent_id)
        name = name if name is not None else now.name
        skills = skills if skills is not None else now.skills_with_levels
    # The lines served change when either is sent (null for every line); left out, they stay.
    sent = payload.model_fields_set & {"profile", "lines"}
    serving = {"profile": payload.profile, "lines": payload.lines} if sent else {}
    outcome = ops.update_agent(agent_id, name=name, skills=skills, expected_version=payload.version, **serving)
    if not outcome.replayed:
        note_change(request, "agent.update", agent_id, f"version {payload.version} changed")
    replayed(response, outcome.replayed)
    return agent_to_json(cast(Agent, outcome.agent))


AGENT_VERSION = Query(..., description="The agent's `version` as you last read it.")


@router.delete(
    "agents/{agent_id}",
    url_name="api-agent",
    operation_id="removeAgent",
    summary="Remove an agent from the roster",
    **answers({200: (AgentOut, "The agent as they were.", ())}, *ITEM_CHANGES),
)
def remove_agent(
    request: HttpRequest,
    agent_id: ItemId,
    version: Annotated[int, Field(ge=inputs.VERSION_MIN, le=inputs.VERSION_MAX)] = AGENT_VERSION,
):
    """Remove the agent, from the version you read, while they are logged off or not
    ready (409 while queued, ringing or on a call: log them off first)."""
    agent = api_operations(request).remove_agent(agent_id, expected_version=version)
    note_change(request, "agent.delete", agent_id, "removed")
    return agent_to_json(agent)


@router.post(
    "agents/{agent_id}/available",
    url_name="api-agent-available",
    operation_id="makeAgentAvailable",
    summary="Make an agent available",
    **answers(
        {
            200: (
                AgentAndCallOut,
                "The agent, and the call they took (null when they were queued). `Idempotent-Replayed: true` when "
                "this very request had already made them available.",
                ("Idempotent-Replayed",),
            )
        },
        *ITEM_CHANGES,
    ),
)
def agent_available(request: HttpRequest, agent_id: ItemId, payload: VersionIn, response: HttpResponse):
    """Give the agent the longest-waiting caller they fit, or queue them (`call` null),
    from the `version` named: an agent changed since answers 409 with the agent as now."""
    outcome = api_operations(request).make_available(agent_id, expected_version=payload.version)
    if not outcome.replayed:
        note_change(
            request, "agent.available", agent_id, f"took call {outcome.call.call_id}" if outcome.call else "queued"
        )
    return agent_and_call(response, outcome)


@router.post(
    "agents/{agent_id}/release",
    url_name="api-agent-release",
    operation_id="releaseAgent",
    summary="End an agent's call",
    **answers(
        {
            200: (
                CallEndedOut,
                "The agent, and the next call they took (null when none). `Idempotent-Replayed: true` when the call "
                "had already ended with the same `then`: the answer is the first one's, as things are now.",
                ("Idempotent-Replayed",),
            )
        },
        *ITEM_CHANGES,
    ),
)
def agent_release(request: HttpRequest, agent_id: ItemId, payload: ReleaseIn, response: HttpResponse):
    """End the call named (`call_id`), then queue the agent again (`then`: `queue`, the
    default), or wrap-up, or offline. A call that is not the agent's current call answers
    409 (saying what became of it and what the agent is doing), unless it ended by this
    same request, which is answered as it first was."""
    outcome = api_operations(request).release(agent_id, then=payload.then, call_id=payload.call_id)
    if not outcome.replayed:
        note_change(request, "agent.release", agent_id, f"call {payload.call_id}, then {payload.then}")
    return agent_and_call(response, outcome)


@router.post(
    "agents/{agent_id}/offline",
    url_name="api-agent-offline",
    operation_id="takeAgentOffline",
    summary="Log an agent off",
    **answers(
        {
            200: (
                AgentOnlyOut,
                "The agent, offline. `Idempotent-Replayed: true` when this very request had logged them off already.",
                ("Idempotent-Replayed",),
            )
        },
        *ITEM_CHANGES,
    ),
)
def agent_offline(request: HttpRequest, agent_id: ItemId, payload: VersionIn, response: HttpResponse):
    """Take the agent out of every queue and mark them offline, from the `version` named:
    an agent offline already at that version, attending a call, or changed since answers 409."""
    outcome = api_operations(request).log_off(agent_id, expected_version=payload.version)
    if not outcome.replayed:
        note_change(request, "agent.offline", agent_id, "offline")
    replayed(response, outcome.replayed)
    return {"agent": agent_to_json(cast(Agent, outcome.agent))}


@router.post(
    "agents/{agent_id}/not-ready",
    url_name="api-agent-not-ready",
    operation_id="setAgentNotReady",
    summary="Set an agent not ready, with a reason",
    **answers(
        {
            200: (
                AgentOnlyOut,
                "The agent, not ready: logged in, offered no call. `Idempotent-Replayed: true` when this very "
                "request had set them not ready already.",
                ("Idempotent-Replayed",),
            ),
            202: (
                AgentOnlyOut,
                "The agent is on a call: not ready is their `next_status` (with `next_reason`), applied when the "
                "call ends, whatever the ending's `then`.",
                ("Idempotent-Replayed",),
            ),
        },
        *ITEM_CHANGES,
    ),
)
def agent_not_ready(request: HttpRequest, agent_id: ItemId, payload: NotReadyIn, response: HttpResponse):
    """Take the agent out of every queue, logged in but offered no call, for `reason` (one
    of AGENT_NOT_READY_REASONS), from the `version` named. An agent on a call keeps it and
    goes not ready when it ends (202, `next_status`); `DELETE .../next-status` takes that
    back. Made available again with /available."""
    outcome = api_operations(request).set_not_ready(agent_id, payload.reason, expected_version=payload.version)
    agent = cast(Agent, outcome.agent)
    if not outcome.replayed:
        note_change(
            request, "agent.not_ready", agent_id, payload.reason + (" after this call" if agent.next_status else "")
        )
    replayed(response, outcome.replayed)
    return Status(202 if agent.next_status else 200, {"agent": agent_to_json(agent)})


@router.delete(
    "agents/{agent_id}/next-status",
    url_name="api-agent-next-status",
    operation_id="cancelAgentNextStatus",
    summary="Cancel an agent's next status",
    **answers({200: (AgentOnlyOut, "The agent, with no next status.", ("Idempotent-Replayed",))}, *ITEM_CHANGES),
)
def cancel_next_status(
    request: HttpRequest,
    agent_id: ItemId,
    response: HttpResponse,
    version: Annotated[int, Field(ge=inputs.VERSION_MIN, le=inputs.VERSION_MAX)] = AGENT_VERSION,
):
    """When the agent's call ends, they go where the ending says after all (409 when they
    have no next status, or changed since `version`)."""
    outcome = api_operations(request).cancel_next_status(agent_id, expected_version=version)
    if not outcome.replayed:
        note_change(request, "agent.next_status", agent_id, "cancelled")
    replayed(response, outcome.replayed)
    return {"agent": agent_to_json(cast(Agent, outcome.agent))}


@router.post(
    "agents/{agent_id}/heartbeat",
    url_name="api-agent-heartbeat",
    operation_id="agentHeartbeat",
    summary="Say the agent's client is there",
    auth=BearerToken(counted=False),
    **answers({200: (HeartbeatOut, "Noted: the agent's last sign of life is now.", ())}, *CHANGES, 404),
)
def agent_heartbeat(request: HttpRequest, agent_id: ItemId):
    """The agent's client (or the phone system for them) is there. With
    AGENT_PRESENCE_SECONDS set, a queued or ringing agent without a heartbeat for that long
    is set not ready (`disconnected`), out of every queue, and a call ringing for them goes
    back to its place. One conditional write; changes no version, is not audited, and is
    not counted against API_RATE_LIMIT (counting it would cost a second write)."""
    agent = get_call_center().heartbeat(agent_id)
    return {
        "agent_id": agent.agent_id,
        "status": agent.status,
        "seen_at": agent.seen_at,
        "presence_seconds": presence_seconds(),
    }
