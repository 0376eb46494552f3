"""Trace ids: an id given by the API caller (`X-Trace-Id`), or made up, that travels
with the request into every audit entry and log line, and with the items it creates
(shipments and tasks keep it), so one enqueue can be followed through the logs."""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from contextlib import contextmanager

HEADER = "X-Trace-Id"
VALID = re.compile(r"[A-Za-z0-9._:-]{1,64}")

current_trace_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("trace_id", default=None)


def new_trace_id() -> str:
    return uuid.uuid4().hex[:16]


@contextmanager
def traced(trace_id: str | None):
    """Log lines written inside the block carry `trace_id`."""
    token = current_trace_id.set(trace_id)
    try:
        yield
    finally:
        current_trace_id.reset(token)


class TraceIdMiddleware:
    """Takes the caller's trace id when it is well formed (made up otherwise), puts it
    on the request and in the logging context, and echoes it in the response."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        given = request.headers.get(HEADER, "").strip()
        request.trace_id = given if VALID.fullmatch(given) else new_trace_id()
        with traced(request.trace_id):
            response = self.get_response(request)
        response[HEADER] = request.trace_id
        return response


class TraceIdFilter(logging.Filter):
    """Adds `trace_id` to every log record ("-" outside a traced block)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.trace_id = current_trace_id.get() or "-"
        return True
