#!/usr/bin/env bash
# The several-hosts tests (tests/integration/test_several_hosts.py) start a throwaway
# PostgreSQL and Redis of their own: install Debian's when either server is missing.
set -euo pipefail
have() {
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && command -v redis-server >/dev/null 2>&1
}
have && exit 0
echo "Installing Debian's postgresql and redis-server for the several-hosts tests ..."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
if command -v apt-get >/dev/null 2>&1 && $SUDO true 2>/dev/null; then
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql redis-server >/dev/null
fi
have && exit 0
echo "Could not install PostgreSQL and Redis (Debian packages 'postgresql' and 'redis-server'); the several-hosts tests need them." >&2
exit 1
