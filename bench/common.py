"""What every benchmark's command line does first: Django settings, and a DynamoDB to
measure against (a given endpoint, or an in-memory DynamoDB Local started and stopped
around the run)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "callcenter.settings")
    import django

    django.setup()


def progress(message: str) -> None:
    print(f"  {message}", file=sys.stderr, flush=True)


@contextmanager
def dynamodb_endpoint(endpoint: str | None) -> Iterator[str]:
    if endpoint:
        yield endpoint
        return
    from queues_app.ddb.local import DynamoDBLocal

    server = DynamoDBLocal().start()
    try:
        yield server.endpoint
    finally:
        server.stop()
