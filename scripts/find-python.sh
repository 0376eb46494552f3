#!/usr/bin/env bash
# Print the path of a Python 3.12+ interpreter that runs (Django 6 needs 3.12 or newer).
ok() { "$1" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }
for candidate in "${PYTHON:-}" python3.13 python3.12 python3; do
  [ -n "$candidate" ] || continue
  path=$(command -v "$candidate" 2>/dev/null) || continue
  if ok "$path"; then echo "$path"; exit 0; fi
done
# pyenv's shims refuse to run versions that are not selected; use the versions directly.
if command -v pyenv >/dev/null 2>&1; then
  for path in $(ls -d "$(pyenv root)"/versions/3.1[2-9]*/bin/python 2>/dev/null | sort -rV); do
    if ok "$path"; then echo "$path"; exit 0; fi
  done
fi
echo "Switchboard needs Python 3.12 or newer, and none was found." >&2
echo "Install one (Debian/Ubuntu: apt-get install python3.12 python3.12-venv; or pyenv install 3.12)," >&2
echo "or point PYTHON at it: make PYTHON=/path/to/python3.12 run" >&2
exit 1
