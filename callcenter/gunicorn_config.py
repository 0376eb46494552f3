"""gunicorn's hooks (`make serve` passes `--config callcenter/gunicorn_config.py`, the web
unit `--config python:callcenter.gunicorn_config`, the installed module; the other
settings are on their command lines).

With PROMETHEUS_MULTIPROC_DIR set, every worker keeps its /metrics counters in files
there and a scrape adds them all up (`queues_app/monitoring/prometheus.py`). When a
worker exits, its files of live gauges must go, as prometheus_client's multiprocess mode
asks; its counters stay and still count, so no total goes down when gunicorn replaces
a worker. This runs in the master, which never loads the application.
"""

from __future__ import annotations

import os


def child_exit(server, worker) -> None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)
