"""WSGI entry point for Switchboard: every web worker (gunicorn's, runserver's) starts here."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "callcenter.settings")
application = get_wsgi_application()

from queues_app.ddb.client import default  # noqa: E402 - the apps are loaded now
from queues_app.figures import counters  # noqa: E402
from queues_app.routing import dispatch  # noqa: E402

# New callers go to the matcher process (`run_matcher`) that holds the matching
# dispatcher's lease; while none does or it does not answer, this worker matches them
# itself (docs/architecture.md, "Matching topology").
dispatch.send_new_callers()
# What a request counted is written within FLUSH_SECONDS, even when no request follows.
counters.flush_in_background(default())
