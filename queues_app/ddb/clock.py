"""Time as the tables store it (sortable UTC ISO-8601 strings with microseconds), and the
contact centre's own days: "today" starts at midnight where the centre is."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo


def now() -> datetime:
    return datetime.now(UTC)


def to_iso(moment: datetime) -> str:
    """A sortable UTC timestamp with microseconds: lexical order is time order."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_iso(text: str | None) -> datetime | None:
    if not text:
        return None
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def centre_zone() -> ZoneInfo:
    """The centre's time zone: settings.TIME_ZONE, an IANA name (UTC when unset)."""
    from django.conf import settings

    return ZoneInfo(getattr(settings, "TIME_ZONE", None) or "UTC")


def centre_day_start(moment: datetime) -> datetime:
    """Midnight of the centre's day that holds `moment` (aware, in the centre's zone)."""
    return moment.astimezone(centre_zone()).replace(hour=0, minute=0, second=0, microsecond=0)


def centre_date(moment: datetime) -> str:
    """The centre's date of `moment`, YYYY-MM-DD: the key of its day's figures."""
    return moment.astimezone(centre_zone()).date().isoformat()


def on_the_clock(stamp: str | None) -> str:
    """A moment as the centre's clock says it, for sentences: `29 Nov 10:00 EST`."""
    moment = from_iso(stamp)
    return moment.astimezone(centre_zone()).strftime("%-d %b %H:%M %Z") if moment else "–"
