"""JSON log lines (`LOG_FORMAT=json`): one object per line, for log shippers
(CloudWatch Logs, Loki, ...), with the same fields as the plain format."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime


class JsonFormatter(logging.Formatter):
    """time (ISO 8601, UTC), level, logger, message, trace_id; the traceback as `exc`;
    `http` for an access log line (callcenter.gunicorn_logging), `status` for Django's
    request lines (django.request, django.server)."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "trace_id": getattr(record, "trace_id", None),
        }
        if entry["trace_id"] == "-":
            entry["trace_id"] = None
        if hasattr(record, "http"):
            entry["http"] = record.http
        elif hasattr(record, "status_code"):
            entry["status"] = record.status_code
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            entry["exc"] = record.exc_text
        return json.dumps(entry, ensure_ascii=False, default=str)
