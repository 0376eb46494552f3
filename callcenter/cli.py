"""Django's command line for Switchboard: `python manage.py` in a checkout, `switchboard`
when installed from the wheel (the console script pyproject.toml declares)."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "callcenter.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A setting is missing or unsafe: say which in one line (--traceback for the rest).
        if "--traceback" in sys.argv:
            raise
        sys.exit(f"ImproperlyConfigured: {exc}")
