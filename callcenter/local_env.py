"""A `.env` for local development: DEBUG on and a random SECRET_KEY of this machine.

`make run` writes it when there is none (`python -m callcenter.local_env .env`), so
that the dashboard and every `python manage.py <command>` typed afterwards start in
development mode; production never has this file (see `.env.example`). Imports nothing
of Django: it runs before the settings can load.
"""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

HEADER = (
    "# Local development values, written by `make run` (python -m callcenter.local_env).\n"
    "# Not for production: see .env.example. Variables set in the environment win over this file.\n"
)


def contents() -> str:
    return f"{HEADER}DEBUG=true\nSECRET_KEY={secrets.token_urlsafe(50)}\n"


def write(path: Path) -> bool:
    """Writes the file unless it exists (a developer's own values stay); True if written."""
    try:
        with open(path, "x", encoding="utf-8") as handle:
            handle.write(contents())
    except FileExistsError:
        return False
    path.chmod(0o600)
    return True


def main(argv: list[str]) -> int:
    path = Path(argv[0] if argv else ".env")
    if write(path):
        print(f"Wrote {path} for local development (DEBUG=true, a random SECRET_KEY).")
    else:
        print(f"{path} exists; left as it is.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
