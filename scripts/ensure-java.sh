#!/usr/bin/env bash
# DynamoDB Local needs Java 17+. Install Debian's headless JRE when it is missing.
set -euo pipefail
java_major() {
  java -version 2>&1 | awk -F'"' '/version/ {split($2, v, "."); print (v[1] == "1" ? v[2] : v[1]); exit}'
}
if command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ] 2>/dev/null; then
  exit 0
fi
echo "Java 17+ is needed for DynamoDB Local; installing openjdk-17-jre-headless ..."
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo -n"
if command -v apt-get >/dev/null 2>&1 && $SUDO true 2>/dev/null; then
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
if command -v java >/dev/null 2>&1 && [ "$(java_major)" -ge 17 ] 2>/dev/null; then
  exit 0
fi
echo "Could not install Java 17+. Install a Java runtime 17 or newer (Debian/Ubuntu: openjdk-17-jre-headless) and run make again." >&2
exit 1
