#!/usr/bin/env bash
# Quick start, step 1 of 2: install if needed, make sure Postgres and Redis run, run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d node_modules ] || npm ci --no-audit --no-fund
bash scripts/ensure-services.sh
npm run --silent demo -- "$@"
