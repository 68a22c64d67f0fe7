#!/usr/bin/env bash
# What the test command needs beyond Node, Postgres and Redis: Debian's chromium, in which the
# report.html test of apps/replay renders the page headless. Run by .ci/run only, never by the
# demo: it installs a package as root. Without root it says what to install; the test then fails
# naming it (it is never skipped).
set -euo pipefail

if ! command -v chromium >/dev/null 2>&1 && [ -z "${CHROMIUM_PATH:-}" ]; then
  if [ "$(id -u)" = "0" ]; then
    echo "installing chromium (headless browser for the replay report test)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "ensure-test-tools.sh: chromium is missing; install it (apt-get install -y chromium) or set CHROMIUM_PATH" >&2
  fi
fi
