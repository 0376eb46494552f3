"""gunicorn's access log in the application's log format (`--logger-class
callcenter.gunicorn_logging.AccessLogger`; `--access-logfile` still turns it on).

Each request is one record of the `gunicorn.access` logger, whose handler and format
(plain, or JSON with LOG_FORMAT=json) settings.LOGGING gives in every worker, like any
other line. It is written once the response is sent, after the request's traced block,
so the trace id is read from the response's X-Trace-Id (tracing.TraceIdMiddleware)."""

from __future__ import annotations

import traceback

from gunicorn.glogging import Logger

from queues_app.tracing import HEADER

TRACE_HEADER = HEADER.lower()


class AccessLogger(Logger):
    def access(self, resp, req, environ, request_time) -> None:
        if not self.access_log_enabled:
            return
        atoms = self.atoms(resp, req, environ, request_time)
        http = {
            "method": atoms["m"],
            "path": atoms["U"],
            "query": atoms["q"] or None,
            "protocol": atoms["H"],
            "status": int(atoms["s"]),
            "bytes": atoms["B"],
            "duration_ms": round(request_time.total_seconds() * 1000, 1),
            "remote_addr": atoms["h"],
            "user_agent": environ.get("HTTP_USER_AGENT"),
            "referer": environ.get("HTTP_REFERER"),
        }
        trace_id = next((value for name, value in resp.headers if name.lower() == TRACE_HEADER), None)
        try:
            self.access_log.info(
                "%s %s %s in %s ms",
                atoms["r"],
                http["status"],
                atoms["b"],
                http["duration_ms"],
                extra={"trace_id": trace_id, "http": http},
            )
        except Exception:
            # As gunicorn's own: a line that cannot be written goes to the error log.
            self.error(traceback.format_exc())
