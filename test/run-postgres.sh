#!/usr/bin/env bash
# The suite's daemon tests again, on PostgreSQL: every test file that starts a gateway
# (test/support/gateway.ts gives each daemon a scratch database of its own). The other files
# (parsers, pricing, the simulator, the store's own parity tests) do not touch the store
# backend and run once, in `npm test`. Extra arguments go to tap (e.g. --reporter=tap).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(grep -rlE "support/gateway\.js'" test --include='*.test.ts' --include='*.test.tsx' | sort)
GATEWAY_TEST_BACKEND=postgres exec npx tap "$@" "${files[@]}"
