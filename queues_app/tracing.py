"""Trace ids: an id given by the API caller (`X-Trace-Id`, else the trace id of a W3C
`traceparent`), or made up, that travels with the request into every audit entry and
log line, and with the items it creates (shipments and tasks keep it), so one enqueue
can be followed through the logs."""

from __future__ import annotations

import contextvars
import logging
import re
import uuid
from contextlib import contextmanager

HEADER = "X-Trace-Id"
VALID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
# W3C Trace Context, version 00: version-trace_id-parent_id-flags, lowercase hex.
TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}")

current_trace_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("trace_id", default=None)


def new_trace_id() -> str:
    return uuid.uuid4().hex[:16]


def trace_id_of(headers) -> str:
    """The caller's `X-Trace-Id` when well formed, else the trace id of a valid
    `traceparent` (so a request traced upstream keeps its id here), else a new one."""
    given = headers.get(HEADER, "").strip()
    if VALID.fullmatch(given):
        return given
    parent = TRACEPARENT.fullmatch(headers.get("traceparent", "").strip())
    # The spec makes all-zero ids invalid: such a header is ignored, like a malformed one.
    if parent and parent[1] != "0" * 32 and parent[2] != "0" * 16:
        return parent[1]
    return new_trace_id()


@contextmanager
def traced(trace_id: str | None):
    """Log lines written inside the block carry `trace_id`."""
    token = current_trace_id.set(trace_id)
    try:
        yield
    finally:
        current_trace_id.reset(token)


class TraceIdMiddleware:
    """Takes the caller's trace id (`trace_id_of`), puts it on the request and in the
    logging context, and echoes it in the response."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.trace_id = trace_id_of(request.headers)
        with traced(request.trace_id):
            response = self.get_response(request)
        response[HEADER] = request.trace_id
        return response


class TraceIdFilter(logging.Filter):
    """Adds `trace_id` to every log record ("-" outside a traced block), unless the record
    carries one already (gunicorn's access log: it is written after the request's block)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not getattr(record, "trace_id", None):
            record.trace_id = current_trace_id.get() or "-"
        return True
