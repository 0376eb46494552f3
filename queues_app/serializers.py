"""Records as the JSON API shows them: plain dicts of JSON types, nothing from DynamoDB.

A preference of "any" (ANY, stored as None) is shown as the string "any", the same
word a request may send.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from queues_app.agents.records import Agent
from queues_app.agents.skills import ANY
from queues_app.calls.records import Call
from queues_app.figures.intervals import ALL, DayReport, IntervalFigures
from queues_app.lines.profiles import lines_as_dict
from queues_app.routing.matching import WHY_OUTCOMES
from queues_app.routing.queues import QueueInfo

ANY_WORD = "any"


def _seconds(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _int_or_none(value) -> int | None:
    return None if value is None else int(value)  # DynamoDB numbers come back as Decimal


def call_to_json(call: Call) -> dict:
    return {
        "call_id": call.call_id,
        "status": call.state,
        "preferences": {name: ANY_WORD if value is ANY else value for name, value in call.preferences.items()},
        "priority": call.priority,
        "order": call.order,
        "arrived_at": call.arrived_at or None,
        "agent_id": call.agent_id,
        "agent_name": call.agent_name,
        "assigned_at": call.assigned_at,
        "ended_at": call.ended_at,
        "relaxed": [dict(entry) for entry in call.relaxed],
        "why": [
            {
                **entry,
                "explanation": WHY_OUTCOMES.get(entry.get("outcome") or "", entry.get("outcome")),
                **({"step": call.matched_step} if n == 0 and "step" in entry else {}),
            }
            for n, entry in enumerate(call.why)
        ],
        "waited_seconds": _seconds(call.waited_seconds),
        "answered_at": call.answered_at,
        "answer_by": call.answer_by,
        "legs": [dict(part) for part in call.legs],
        "line": call.line,
        "overflowed": [dict(move) for move in call.overflowed],
        "end_reason": call.end_reason,
        "steps": [dict(step) for step in call.steps],
        "preferred_agent_id": call.preferred_agent_id,
        "preferred_until": call.preferred_until,
        "callback": (
            {
                "number": call.callback_number,
                "requested_at": call.callback_requested_at,
                "attempts": [dict(result) for result in call.callback_results],
                "retry_at": call.callback_retry_at,
            }
            if call.callback_number
            else None
        ),
    }


def agent_to_json(agent: Agent) -> dict:
    return {
        "agent_id": agent.agent_id,
        "name": agent.name,
        "skills": {name: list(values) for name, values in agent.skills.items()},
        "levels": agent.skills_with_levels,
        "status": agent.status,
        "status_label": agent.status_label,
        "version": agent.version,
        "queued_at": agent.queued_at,
        "call_id": agent.call_id,
        "updated_at": agent.updated_at or None,
        "reason": agent.reason,
        "status_since": agent.status_since,
        "profile": agent.profile,
        "lines": lines_as_dict(agent.lines),
        "next_status": agent.next_status,
        "next_reason": agent.next_reason,
    }


def queue_to_json(info: QueueInfo, dimensions: tuple[str, ...]) -> dict:
    return {
        "name": info.name,
        "combination": dict(zip(dimensions, info.combination, strict=True)),
        "depth": info.depth,
        "version": info.version,
        "oldest_queued_at": info.oldest_queued_at,
        "oldest_age_seconds": _seconds(info.oldest_age_seconds),
    }


def shipment_to_json(shipment) -> dict:
    return {
        "shipment_id": shipment.shipment_id,
        "state": shipment.state,
        "status": shipment.status,
        "queue": shipment.queue,
        "tenant": shipment.tenant,
        "priority": shipment.priority,
        "data": shipment.data,
        "enqueued_at": shipment.enqueued_at,
        "visible_at": shipment.visible_at,
        "attempts": shipment.attempts,
        "receive_count": shipment.receive_count,
        "failures": [
            {"at": entry.get("at"), "reason": entry.get("reason") or "", "receive": _int_or_none(entry.get("receive"))}
            for entry in shipment.failure_reasons
        ],
        "dlq_reason": shipment.dlq_reason,
        "trace_id": shipment.trace_id,
        "version": shipment.version,
    }


SERIALIZERS: dict[str, Callable[[Any], dict]] = {
    "agent": agent_to_json,
    "call": call_to_json,
    "shipment": shipment_to_json,
}


def current_json(now: dict) -> dict | None:
    """The items a refused request named, as they are now (`Conflict.now`), by kind."""
    shown = {kind: SERIALIZERS[kind](record) for kind, record in now.items() if kind in SERIALIZERS and record}
    return shown or None


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


def interval_rows(report: DayReport, combination: str | None = None, *, line: str | None = None) -> list[dict]:
    """The rows of an interval report (figures.intervals.DayReport): for each interval,
    the whole centre (`"all"`) then each combination, or only `combination` when given.
    A figure with nothing to average is None."""
    rows = []
    for interval in report.intervals:
        if line is not None:  # a line's report: its callers, every interval
            shown = [(ALL, interval.by_combination.get(line, IntervalFigures()))]
        elif combination is None:
            shown = [(ALL, interval.overall), *sorted(interval.by_combination.items())]
        elif combination == ALL:
            shown = [(ALL, interval.overall)]
        else:  # every interval, a quiet one as zeros
            shown = [(combination, interval.by_combination.get(combination, IntervalFigures()))]
        for name, entry in shown:
            figures = entry.figures
            occupancy = interval.overall.occupancy.share if name == ALL and line is None else None
            rows.append(
                {
                    "start": interval.start.isoformat(),
                    "combination": name,
                    "line": line,
                    "offered": entry.offered,
                    "answered": figures.answered,
                    "answered_within": figures.answered_within,
                    "abandoned": figures.abandoned,
                    "short_abandoned": figures.short_abandoned,
                    "overflowed": figures.overflowed,
                    "refused": figures.refused,
                    "callbacks_requested": figures.callbacks_requested,
                    "callbacks_connected": figures.callbacks_connected,
                    "callbacks_failed": figures.callbacks_failed,
                    "callback_connect_seconds": _round(figures.average_callback_connect_time),
                    "in_queue_at_end": entry.in_queue,
                    "service_level": _round(figures.service_level, 4),
                    "asa_seconds": _round(figures.average_speed_of_answer),
                    "aht_seconds": _round(figures.average_handle_time),
                    "longest_wait_seconds": _round(figures.wait_max),
                    "occupancy": _round(occupancy, 4),
                }
            )
    return rows


def interval_report_json(
    report: DayReport, combination: str | None = None, *, line: str | None = None, threshold: float | None = None
) -> dict:
    seconds = report.threshold_seconds if threshold is None else threshold
    return {
        "date": report.day.isoformat(),
        "time_zone": report.zone,
        "interval_minutes": report.interval_minutes,
        "service_level_seconds": int(seconds) if float(seconds).is_integer() else seconds,
        "line": line,
        "intervals": interval_rows(report, combination, line=line),
    }
