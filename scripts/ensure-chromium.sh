#!/usr/bin/env bash
# Browser tests drive Debian's Chromium (Playwright cannot download its own browser here).
set -euo pipefail
[ -x /usr/bin/chromium ] && exit 0
echo "Installing Debian's chromium for the browser tests ..."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
if command -v apt-get >/dev/null 2>&1 && $SUDO true 2>/dev/null; then
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
[ -x /usr/bin/chromium ] && exit 0
echo "Could not install /usr/bin/chromium (Debian package 'chromium'); the browser tests need it." >&2
exit 1
