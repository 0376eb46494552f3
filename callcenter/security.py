"""What the settings refuse to start without, and the login throttle's hooks.

`production_problems` runs while the settings load, so this module imports nothing of
Django at the top; django-axes calls `client_ip` and `lockout_response` per request.
See docs/security.md.
"""

from __future__ import annotations

MIN_SECRET_KEY_LENGTH = 50
# Values that have been published with this project: never a production key.
KNOWN_SECRET_KEYS = frozenset(
    {
        "insecure-local-development-key-change-me",
        "change-me-to-a-long-random-string",
        "replace-me-with-a-long-random-string",
    }
)
LOCAL_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

HOW_TO_GENERATE = "python -c 'import secrets; print(secrets.token_urlsafe(50))'"


def production_problems(secret_key: str, allowed_hosts: list[str]) -> list[str]:
    """Why these settings may not serve with DEBUG off; empty when they may."""
    problems = []
    if not secret_key:
        problems.append(f"SECRET_KEY is not set (it needs {MIN_SECRET_KEY_LENGTH} or more random characters)")
    elif secret_key in KNOWN_SECRET_KEYS or secret_key.startswith("django-insecure"):
        problems.append("SECRET_KEY is a published placeholder, not a secret")
    elif len(secret_key) < MIN_SECRET_KEY_LENGTH or len(set(secret_key)) < 5:
        problems.append(
            f"SECRET_KEY is too short or too plain ({len(secret_key)} characters;"
            f" it needs {MIN_SECRET_KEY_LENGTH} or more random ones)"
        )
    if problems:
        problems[-1] += f": generate one with {HOW_TO_GENERATE}"
    if not [host for host in allowed_hosts if host.strip()]:
        problems.append(
            "ALLOWED_HOSTS is empty (name the host names the site answers to, e.g. switchboard.example.com)"
        )
    return problems


def refusal(problems: list[str]) -> str:
    """The message of the ImproperlyConfigured that stops a process with DEBUG off."""
    return (
        "Refusing to start with DEBUG off (the default): "
        + "; ".join(problems)
        + ". For local development set DEBUG=true (`make run` writes a .env that does)."
    )


def client_ip(request) -> str | None:
    """The address a login attempt counts against. The peer's own address, unless a
    trusted TLS proxy stands in front (BEHIND_TLS_PROXY): then the last address of
    X-Forwarded-For, the one that proxy appended (anything to its left came from the
    client and could be anything)."""
    from django.conf import settings

    if getattr(settings, "BEHIND_TLS_PROXY", False):
        forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        if forwarded[-1]:
            return forwarded[-1][:64]
    return request.META.get("REMOTE_ADDR")


def lockout_response(request, original_response=None, credentials=None):
    """The page a locked-out login gets (429), on the site and in the admin alike."""
    from django.conf import settings
    from django.shortcuts import render

    seconds = settings.AXES_COOLOFF_TIME.total_seconds()
    response = render(
        request,
        "registration/locked_out.html",
        {"lockout_minutes": max(1, round(seconds / 60)), "failure_limit": settings.AXES_FAILURE_LIMIT},
        status=429,
    )
    response["Retry-After"] = str(round(seconds))
    return response
