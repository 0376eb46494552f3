"""Health checks for load balancers and orchestrators: no login, no CSRF, GET and HEAD.

- `/healthz`: the process is up and answers requests; it asks DynamoDB nothing.
- `/readyz`: DynamoDB answers and every table of the project exists and is ACTIVE: one
  DescribeTable per table at most (it stops at the first failure), the answer kept for
  a few seconds per process so that frequent probes cost nothing more; otherwise 503
  with Retry-After naming the missing tables. It never names the endpoint or an ARN.
  When ready it lists the workers' heartbeats too (`workers`: kind, host, pid, state,
  age of the last beat, stale; one Query): for people and dashboards, not a condition
  of readiness, since the web serves whether or not a worker runs.
"""

from __future__ import annotations

import logging
import threading
import time

from django.contrib.auth.decorators import login_not_required
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_safe

from queues_app.ddb.client import Dynamo, default
from queues_app.ddb.errors import DynamoError, TableMissing
from queues_app.ddb.tables import TABLES
from queues_app.figures import heartbeats

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
READY_CACHE_SECONDS = 3.0
_cache: dict[tuple[str, str], tuple[float, tuple[int, dict]]] = {}
_lock = threading.Lock()


@csrf_exempt
@login_not_required
@require_safe
def healthz(request):
    return _no_store(JsonResponse({"status": "ok"}))


@csrf_exempt
@login_not_required
@require_safe
def readyz(request):
    db = default()
    key = (db.endpoint, db.prefix)
    with _lock:
        cached = _cache.get(key)
        if cached is None or time.monotonic() - cached[0] >= READY_CACHE_SECONDS:
            cached = _cache[key] = (time.monotonic(), _readiness(db))
    status, body = cached[1]
    response = _no_store(JsonResponse(body, status=status))
    if status != 200:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def forget() -> None:
    """Drop the kept answers (tests; a deploy that just created the tables)."""
    with _lock:
        _cache.clear()


def _readiness(db: Dynamo) -> tuple[int, dict]:
    names = [db.table(name) for name in TABLES]
    missing = []
    for name in names:
        try:
            table = db.call("describe_table", TableName=name)["Table"]
        except TableMissing:
            missing.append(name)
            continue
        except DynamoError as exc:
            log.warning("readyz: DynamoDB does not answer: %s", exc)
            return 503, {"status": "unavailable", "reason": "DynamoDB does not answer"}
        if table.get("TableStatus") not in ("ACTIVE", "UPDATING"):
            missing.append(name)
    if missing:
        return 503, {"status": "unavailable", "reason": "tables missing or not active", "missing": missing}
    try:
        workers: list[dict] | None = [w.as_json() for w in heartbeats.workers(db)]
    except DynamoError as exc:
        log.warning("readyz: the workers' heartbeats could not be read: %s", exc)
        workers = None
    return 200, {"status": "ok", "tables": names, "workers": workers}


def _no_store(response: JsonResponse) -> JsonResponse:
    response["Cache-Control"] = "no-store"
    return response
