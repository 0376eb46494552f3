#!/usr/bin/env python
"""Django's command-line utility for Switchboard."""

import os
import sys


def main():
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


if __name__ == "__main__":
    main()
