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


def post_worker_init(worker) -> None:
    """Live overviews (queues_app/views/live.py) take at most this worker's threads less
    those kept for requests, and end when the worker is told to stop, so that a graceful
    stop does not wait out every open overview and browsers reconnect to another worker."""
    import signal

    from queues_app.views import live

    live.reserve_threads(getattr(worker.cfg, "threads", 1), int(os.environ.get("WEB_THREADS") or live.REQUEST_THREADS))
    for number in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        handler = signal.getsignal(number)
        if callable(handler):
            signal.signal(number, _closing_streams_then(handler))


def _closing_streams_then(handler):
    def on_signal(number, frame):
        from queues_app.views import live

        live.close_all()
        handler(number, frame)

    return on_signal
