#!/usr/bin/env python
"""Django's command-line utility for Switchboard (installed, the `switchboard` command)."""

from callcenter.cli import main

if __name__ == "__main__":
    main()
