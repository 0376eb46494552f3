"""Who may do what: supervisors act, viewers only look, staff reach the admin."""

from __future__ import annotations

from functools import wraps

from django.core.exceptions import PermissionDenied

SUPERVISORS = "supervisors"
VIEWERS = "viewers"


def can_act(user) -> bool:
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    cached = getattr(user, "_switchboard_can_act", None)
    if cached is None:
        cached = user.groups.filter(name=SUPERVISORS).exists()
        user._switchboard_can_act = cached
    return cached


def require_supervisor(request) -> None:
    """For views that show a page to everyone but take a POST only from supervisors."""
    if not can_act(request.user):
        raise PermissionDenied("Only supervisors may change queues.")


def supervisor_required(view):
    """Refuse (403) anyone who is not a supervisor; the page shows them no buttons."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        require_supervisor(request)
        return view(request, *args, **kwargs)

    return wrapper
