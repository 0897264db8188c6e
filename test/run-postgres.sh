#!/usr/bin/env bash
# The suite's daemon tests again, on PostgreSQL: every test file that starts a gateway
# (test/support/gateway.ts gives each daemon a scratch database of its own). The other files
# (parsers, pricing, the simulator, the store's own parity tests) do not touch the store
# backend and run once, in `npm test`. Extra arguments go to tap (e.g. --reporter=tap).
#
# Also run once (in `npm test`), where the backend does not matter or is fixed:
# - test/e2e/postgres-daemons.test.ts, test/e2e/pg-funds-cache.test.ts: PostgreSQL daemons
#   already, in either pass;
# - test/e2e/overload.test.ts: shedding and slow clients, decided before any store is read;
# - test/cli/cli.test.ts: the CLI's commands and output over the management API;
# - test/e2e/metrics.test.ts, test/e2e/traces.test.ts, test/cli/status.test.ts: metrics and
#   traces are recorded above the store (settlement's one hook);
# - test/e2e/auth-flood.test.ts: bcrypt off the event loop; its PostgreSQL pass measured the
#   database server's share of two cores, not the gateway;
# - test/dashboard/browser.test.ts and test/e2e/coding-agents.test.ts: a real Chromium on the
#   dashboard, real Claude Code and Codex binaries through the gateway (the slowest files of the
#   pass): what they check is above the store, whose side the API and e2e files cover here.
set -euo pipefail
cd "$(dirname "$0")/.."
ONCE='^test/(e2e/postgres-daemons|e2e/pg-funds-cache|e2e/overload|e2e/auth-flood|e2e/metrics|e2e/traces|e2e/coding-agents|dashboard/browser|cli/cli|cli/status)\.test\.(ts|tsx)$'
mapfile -t files < <(grep -rlE "support/gateway\.js'" test --include='*.test.ts' --include='*.test.tsx' | grep -vE "$ONCE" | sort)
GATEWAY_TEST_BACKEND=postgres exec npx tap "$@" "${files[@]}"
