import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { newRequestId } from '../../../src/core/ids.js';
import { chargeOf } from '../../../src/store/ledger.js';
import { SqliteStore } from '../../../src/store/store.js';
import type { NewUsage } from '../../../src/store/usage.js';

/**
 * What settlement's SQLite writes cost per call, without HTTP around them: batches of settled
 * calls (a charge and a usage row each) through SqliteStore.settle, as Settlement.apply writes
 * them, on a fresh database file with the daemon's pragmas and its checkpointer; then the
 * usage rows alone. Prints wall and CPU µs per call for each batch size (CPU includes the
 * checkpointer's thread).
 *
 *   node --import tsx test/bench/diag/sqlite-settle.ts [calls per size, default 100000]
 */
const calls = Number(process.argv[2] ?? 100_000);

/** A fresh database file for each measurement (a long WAL left by the one before would weigh on the next). */
function freshStore(): { store: SqliteStore; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-settle-'));
  const store = SqliteStore.open(join(dir, 'gateway.db'));
  const now = Date.now();
  store.accounts.insert({ id: 'acct_bench', email: 'bench@example.test', name: 'bench', passwordHash: null, role: 'user', now });
  store.apiKeys.insert({ id: 'key_bench', accountId: 'acct_bench', name: 'bench', keyHash: 'hash', maskedKey: 'sk-…bench', expiresAt: null, now, rateLimit: 10_000, budgetMicros: null });
  store.ledger.credit('topup', { accountId: 'acct_bench', amountMicros: 1e15, now });
  return { store, dir };
}

const row = (): NewUsage => ({
  requestId: newRequestId(),
  accountId: 'acct_bench',
  apiKeyId: 'key_bench',
  model: 'openai/gpt-4o-mini',
  provider: 'openai',
  endpoint: 'chat.completions',
  stream: false,
  inputTokens: 14,
  outputTokens: 9,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  unit: 'tokens',
  units: 23,
  costMicros: 123,
  unchargedMicros: 0,
  status: 200,
  errorType: null,
  latencyMs: 1,
  createdAt: Date.now(),
});

async function measure(label: string, batch: number, write: (store: SqliteStore, rows: NewUsage[]) => void): Promise<void> {
  const { store, dir } = freshStore();
  const batches = Math.max(1, Math.round(calls / batch));
  const run = (n: number): void => {
    for (let i = 0; i < n; i++) write(store, Array.from({ length: batch }, row));
  };
  run(Math.max(1, Math.round(batches / 10))); // warm-up
  const wall0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  run(batches);
  const wall = Number(process.hrtime.bigint() - wall0) / 1e3;
  const cpu = process.cpuUsage(cpu0);
  const n = batches * batch;
  console.log(`${label.padEnd(28)} batch ${String(batch).padStart(4)}: ${(wall / n).toFixed(2)} µs wall, ${((cpu.user + cpu.system) / n).toFixed(2)} µs CPU per call`);
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}

for (const batch of [1, 16, 64, 256]) {
  await measure('charge + usage row (settle)', batch, (store, rows) => {
    const charges = rows.map((r) => chargeOf(r.costMicros, r)).filter((c) => c !== undefined);
    store.settle(charges, rows);
  });
}
await measure('usage row alone', 64, (store, rows) => {
  store.transaction(() => {
    for (const r of rows) store.usage.insert(r);
  });
});
