"""Small display filters: ages, capped figures, timestamps, and text a person typed set
apart from the page around it."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from django import template
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from queues_app.agents.skills import SkillCatalog, describe_levels
from queues_app.ddb.clock import from_iso, now
from queues_app.lines import profiles as routing_profiles
from queues_app.steps import describe_all
from queues_app.text import visible

register = template.Library()


@register.filter
def isolate(value) -> str:
    """A name, a reason or a sentence holding one, as data: in `<bdi>`, so that a
    right-to-left name leaves the text around it in its order, and without the embeddings
    and overrides an earlier version let in (queues_app/text.py). Empty stays empty."""
    if value is None or value == "":
        return value
    return format_html("<bdi>{}</bdi>", visible(str(value)))


@register.filter
def plain(value) -> str:
    """`isolate` where no element may stand (an attribute, an option, the title)."""
    return visible(str(value)) if value else value


@register.filter
def centre_input(stamp) -> str:
    """A moment as a `datetime-local` input's value on the centre's clock (2026-11-30T10:00)."""
    moment = _moment(stamp)
    return timezone.localtime(moment).strftime("%Y-%m-%dT%H:%M") if moment else ""


@register.filter
def words(value) -> str:
    """A status as words: `callback_waiting` is "callback waiting"."""
    return str(value).replace("_", " ")


@register.filter
def age(seconds) -> str:
    """3.2 -> "3 s", 200 -> "3 min 20 s", 7300 -> "2 h 1 min"; None -> "-"."""
    if seconds is None:
        return "–"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min"
    return f"{hours // 24} d {hours % 24} h"


@register.filter
def combination(name: str) -> str:
    """A stored combination as people read it: "Spanish#F" -> "Spanish · F"."""
    return str(name).replace("#", " · ")


@register.filter
def stopwatch(seconds) -> str:
    """A wait as a wallboard shows it, short enough for large type: 275 -> "4:35",
    3723 -> "1:02:03"; None -> "-"."""
    if seconds is None:
        return "–"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


@register.filter
def hms(seconds) -> str:
    """A duration as a report shows it, hours always: 3723 -> "1:02:03", 75 -> "0:01:15",
    100000 -> "27:46:40"; None -> "-"."""
    if seconds is None:
        return "–"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


@register.filter
def since(stamp) -> str:
    """How long ago an ISO timestamp was."""
    moment = from_iso(stamp) if stamp else None
    return age((now() - moment).total_seconds()) if moment else "–"


@register.filter
def until(stamp) -> str:
    """How long until an ISO timestamp ("overdue 3 s" once it has passed)."""
    moment = from_iso(stamp) if stamp else None
    if not moment:
        return "–"
    left = (moment - now()).total_seconds()
    return f"in {age(left)}" if left >= 0 else f"overdue {age(-left)}"


@register.filter
def countdown(stamp) -> str:
    """An offer's deadline as a countdown that the page ticks each second (switchboard.js):
    `<time datetime=... data-countdown>in 18 s</time>`."""
    if not stamp:
        return "–"
    return format_html('<time datetime="{}" data-countdown>{}</time>', stamp, until(stamp))


@register.filter
def figure(value) -> str:
    """A Figure (value, capped) as "1,234" or "10,000+"."""
    if value is None:
        return "–"
    number = getattr(value, "value", value)
    text = f"{number:,}"
    return text + "+" if getattr(value, "capped", False) else text


# How a moment reads at each precision, in the centre's time zone (settings.TIME_ZONE): the
# time of day alone when it is today there, with the day before it otherwise.
PRECISIONS = {
    "second": "%H:%M:%S",
    "minute": "%H:%M",
    "time": "%H:%M:%S",  # the time of day even on another day (the title has the date)
    "ms": "%H:%M:%S.{ms}",  # to tell apart moments of one second (who was queued first)
}


def _moment(stamp) -> datetime | None:
    """A datetime, a stored ISO timestamp or a stored minute ("2026-11-21T17:03"), in UTC."""
    if not stamp:
        return None
    if isinstance(stamp, datetime):
        return stamp.astimezone(UTC) if stamp.tzinfo else stamp.replace(tzinfo=UTC)
    try:
        return from_iso(stamp)
    except ValueError:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M").replace(tzinfo=UTC)


def _day(local: datetime, today: datetime) -> str:
    """ "24 Nov " for another day of this year, "24 Nov 2025 " for another year, "" for today."""
    if local.date() == today.date():
        return ""
    return local.strftime("%-d %b " if local.year == today.year else "%-d %b %Y ")


@register.filter
def clock(stamp, precision: str = "second") -> str:
    """A moment as `<time datetime="2026-11-21T17:03:12Z" title="21 Nov 2026 12:03:12 EST">12:03:12</time>`:
    the text in the centre's time zone (the time of day when it is today there, with the
    day otherwise), the full date and the zone in the title. `precision` is "second" (the
    default), "minute", "time" (the time of day alone) or "ms" (with milliseconds)."""
    moment = _moment(stamp)
    if moment is None:
        return "–"
    if precision not in PRECISIONS:
        raise template.TemplateSyntaxError(f"clock: precision is one of {', '.join(PRECISIONS)}, not {precision!r}")
    local = timezone.localtime(moment)
    day = "" if precision == "time" else _day(local, timezone.localtime(now()))
    text = day + local.strftime(PRECISIONS[precision].format(ms=f"{local.microsecond // 1000:03d}"))
    return format_html(
        '<time datetime="{}" title="{}">{}</time>',
        moment.strftime("%Y-%m-%dT%H:%M:%S") + (f".{moment.microsecond // 1000:03d}Z" if precision == "ms" else "Z"),
        local.strftime("%-d %b %Y %H:%M:%S %Z"),
        text,
    )


def _in_catalog_order(skills: dict) -> dict:
    """An agent's skills in the catalog's order of dimensions (as stored, any order)."""
    names = SkillCatalog.from_settings().names
    return {name: skills[name] for name in sorted(skills, key=lambda n: names.index(n) if n in names else len(names))}


@register.filter
def skills_text(agent) -> str:
    """An agent's skills with their levels above 1: "English, French 5, F". An agent read
    from an index that leaves levels out shows their values alone."""
    return describe_levels(_in_catalog_order(agent.skills), getattr(agent, "levels", None) or {})


@register.filter
def skill_chips(agent) -> list[str]:
    """An agent's skill values one by one, each with its level above 1: ["French 5", "F"]."""
    levels = getattr(agent, "levels", None) or {}
    skills = _in_catalog_order(agent.skills)
    return [describe_levels({name: [value]}, levels) for name, values in skills.items() for value in values]


@register.filter
def lines_text(serving) -> str:
    """The lines a routing profile serves in words: "support (1), sales (2, after 30 s)"."""
    return routing_profiles.describe(serving)


@register.filter
def lines_served(agent, profiles) -> str:
    """The lines an agent serves in words: their routing profile's name and its lines,
    their own lines, or every line. `profiles`: the named profiles by id."""
    if agent.profile:
        profile = (profiles or {}).get(agent.profile)
        if profile is None:
            return f"Every line (their routing profile {agent.profile} was removed)"
        return f"{profile.name}: {routing_profiles.describe(profile.lines)}"
    return f"Their own: {routing_profiles.describe(agent.lines)}" if agent.lines else "Every line"


@register.filter
def steps_text(steps) -> str:
    """A caller's routing steps in words (queues_app/steps.py); empty without steps."""
    return describe_all(steps or [])


@register.filter
def get(mapping, key):
    return mapping.get(key) if mapping else None


@register.filter
def epoch_until(epoch) -> str:
    """How long until a Unix time (a TTL attribute)."""
    if not epoch:
        return "–"
    left = float(epoch) - now().timestamp()
    return f"in {age(left)}" if left >= 0 else f"{age(-left)} ago"


@register.filter
def as_json(value) -> str:
    """A payload as compact JSON (escaped by the template like any text)."""
    return json.dumps(value, default=str, ensure_ascii=False, separators=(", ", ": "))


@register.simple_tag
def poll(panel: str, every: str = "2s", on_change: bool = True):
    """The htmx attributes of an overview panel that refreshes itself: every `every`
    while the tab is visible, at once when the tab comes back, and after any change.
    No trigger filter (htmx would eval it, which the CSP forbids): static/js/switchboard.js
    holds back a `data-poll` panel's requests while the tab is hidden or the polling is
    paused, fires `switchboard-visible` when it comes back, and marks a panel stale when
    two of its intervals (`data-poll`) pass without an answer."""
    triggers = [f"every {every}", "switchboard-visible from:body"]
    if on_change:
        triggers.append("queues-changed from:body")
    return format_html(
        'hx-get="{}?panel={}" hx-swap="outerHTML" hx-trigger="{}" data-poll="{}"',
        reverse("home"),
        panel,
        ", ".join(triggers),
        every,
    )
