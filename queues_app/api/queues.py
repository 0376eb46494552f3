"""/api/queues: every skill combination's queue and the callers waiting; with its
outputs."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Router, Schema
from pydantic import Field

from queues_app.api.common import get_call_center
from queues_app.api.openapi import READS, answers
from queues_app.serializers import queue_to_json

router = Router()


class QueueOut(Schema):
    name: str = Field(examples=["Q#English#F"])
    combination: dict[str, str]
    depth: int
    version: int
    oldest_queued_at: str | None
    oldest_age_seconds: float | None


class QueuesOut(Schema):
    queues: list[QueueOut]
    callers_waiting: int
    callers_waiting_capped: bool = Field(description="True: at least this many (the count stops at 1000).")


@router.get(
    "queues",
    url_name="api-queues",
    operation_id="listQueues",
    summary="Queues and callers waiting",
    **answers({200: (QueuesOut, "Every skill combination's queue, and the callers waiting.", ())}, *READS),
)
def list_queues(request: HttpRequest):
    """Every queue combination with its depth and the age of its oldest agent, and the
    number of callers waiting (the count stops at 1000: `callers_waiting_capped`)."""
    center = get_call_center()
    infos = center.queues()
    waiting, more = center.line.count_waiting()
    dimensions = center.catalog.names
    return {
        "queues": [queue_to_json(info, dimensions) for info in infos],
        "callers_waiting": waiting,
        "callers_waiting_capped": more,
    }
