#!/usr/bin/env bash
# Quick start, step 1 of 2: install if needed, start this machine's Postgres and Redis if they are
# not running, then run the demo (scripts/demo.ts: the API, workers and LLM stub as processes).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d node_modules ] || npm ci --no-audit --no-fund
# Best effort: the demo checks both services itself and says how to start the one that is missing.
bash scripts/ensure-services.sh || echo "demo.sh: could not start the local services; checking them anyway" >&2
exec npm run --silent demo -- "$@"
