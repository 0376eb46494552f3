"""Error reports to Sentry, when `SENTRY_DSN` is set: sentry-sdk is an optional extra
(`switchboard[sentry]`), imported only then."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

from queues_app.tracing import current_trace_id

if TYPE_CHECKING:
    from sentry_sdk.types import Event


def init_sentry(dsn: str) -> None:
    try:
        import sentry_sdk
        from sentry_sdk.integrations.django import DjangoIntegration
    except ImportError as exc:
        # A DSN without the library would drop every report without a word.
        raise ImproperlyConfigured(
            "SENTRY_DSN is set but sentry-sdk is not installed: pip install 'switchboard[sentry]'."
        ) from exc
    # The environment and release come from SENTRY_ENVIRONMENT and SENTRY_RELEASE, as sentry-sdk reads them.
    sentry_sdk.init(dsn=dsn, integrations=[DjangoIntegration()], send_default_pii=False, before_send=tag_trace_id)


def tag_trace_id(event: Event, hint: dict[str, Any]) -> Event:
    """The request's trace id as a tag, to find its log lines from a report."""
    trace_id = current_trace_id.get()
    if trace_id:
        event.setdefault("tags", {})["trace_id"] = trace_id
    return event
