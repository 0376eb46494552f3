from django.utils import timezone

from queues_app.http.roles import can_act


def roles(request):
    user = getattr(request, "user", None)
    return {"can_act": bool(user and can_act(user))}


def centre_time(request):
    """The centre's time zone, which every time on the pages is shown in (settings.TIME_ZONE)."""
    local = timezone.localtime()
    name = timezone.get_current_timezone_name()
    offset = local.strftime("%z")
    utc = f"UTC{offset[0]}{offset[1:3]}:{offset[3:]}" if offset not in ("+0000", "") else "UTC"
    label = name if name == "UTC" else f"{name} ({local.strftime('%Z')}, {utc})"
    return {"centre_zone": name, "centre_zone_label": label}
