import type { Books, Sample } from './protocol.js';
import type { Outcome } from './traffic.js';

/**
 * The soak's end: the books as both daemons read them, against what every client saw.
 * Each check is a line of the verdict; the soak passes when every one holds.
 */

export interface Account {
  accountId: string;
  keys: { key: string; keyId: string; accountId: string; budget: boolean }[];
  /** Top-ups by reference (µINR), the initial one included. */
  topups: Map<string, number>;
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

export interface Figures {
  calls: number;
  completed: number;
  charges: number;
  chargedMicros: number;
  topupMicros: number;
  faulted: number;
  aborted: number;
  /** Charges of calls whose client left before it saw the request id. */
  unseenCharges: number;
  fiveHundreds: number;
}

export interface Verdict {
  checks: Check[];
  figures: Figures;
}

/** Kinds of call that are never billed. */
const FREE = new Set(['models', 'count_tokens']);

/** RSS growth over the last half of the run: least-squares slope × that half's length, MB. */
export function growthOverLastHalf(samples: readonly Sample[], field: 'rssMb' | 'heapMb'): { growthMb: number; startMb: number } {
  const first = samples[0];
  const last = samples.at(-1);
  if (!first || !last || samples.length < 4) return { growthMb: 0, startMb: first?.[field] ?? 0 };
  const mid = first.at + (last.at - first.at) / 2;
  const half = samples.filter((sample) => sample.at >= mid);
  const n = half.length;
  const meanX = half.reduce((sum, sample) => sum + sample.at, 0) / n;
  const meanY = half.reduce((sum, sample) => sum + sample[field], 0) / n;
  let num = 0;
  let den = 0;
  for (const sample of half) {
    num += (sample.at - meanX) * (sample[field] - meanY);
    den += (sample.at - meanX) ** 2;
  }
  const slope = den === 0 ? 0 : num / den;
  return { growthMb: slope * ((half.at(-1)?.at ?? mid) - (half[0]?.at ?? mid)), startMb: half[0]?.[field] ?? 0 };
}

/** An RSS growth allowance over the last half: 10 MB or 5% of where that half started, whichever is more. */
export const rssAllowanceMb = (startMb: number): number => Math.max(10, startMb * 0.05);

export function checkBooks(accounts: readonly Account[], outcomes: readonly Outcome[], booksA: readonly Books[], booksB: readonly Books[], daemons: readonly { name: string; samples: Sample[]; errors: string[]; crashes: string[] }[]): Verdict {
  const checks: Check[] = [];
  const check = (name: string, problems: string[], detail: string): void => {
    checks.push({ name, ok: problems.length === 0, detail: problems.length === 0 ? detail : `${problems.length} problems: ${problems.slice(0, 8).join('; ')}` });
  };

  // Money per account: the stored balance is the ledger's sum, is the top-ups less the charges.
  const ledgerProblems: string[] = [];
  const overspent: string[] = [];
  const chargeOf = new Map<string, { amount: number; accountId: string; apiKeyId: string | null }>();
  const duplicate: string[] = [];
  let chargedMicros = 0;
  let topupMicros = 0;
  for (const account of accounts) {
    const books = booksA.find((entry) => entry.accountId === account.accountId);
    if (!books) {
      ledgerProblems.push(`${account.accountId}: no books`);
      continue;
    }
    const expectedTopups = [...account.topups.values()].reduce((sum, amount) => sum + amount, 0);
    topupMicros += expectedTopups;
    const topupEntries = books.entries.filter((entry) => entry.kind === 'topup');
    const references = topupEntries.map((entry) => entry.reference ?? '');
    if (references.length !== account.topups.size || new Set(references).size !== references.length || references.some((reference) => account.topups.get(reference) === undefined)) {
      ledgerProblems.push(`${account.accountId}: top-up entries ${references.length} for ${account.topups.size} references`);
    }
    const charges = books.entries.filter((entry) => entry.kind === 'charge');
    const charged = -charges.reduce((sum, entry) => sum + entry.amountMicros, 0);
    chargedMicros += charged;
    if (books.balanceMicros !== books.ledgerSumMicros || books.balanceMicros !== expectedTopups - charged) {
      ledgerProblems.push(`${account.accountId}: balance ${books.balanceMicros}, ledger sum ${books.ledgerSumMicros}, top-ups ${expectedTopups} − charges ${charged} = ${expectedTopups - charged}`);
    }
    if (books.entries.some((entry) => entry.kind !== 'charge' && entry.kind !== 'topup')) ledgerProblems.push(`${account.accountId}: entries of another kind`);
    const lowest = Math.min(books.balanceMicros, ...books.entries.map((entry) => entry.balanceAfterMicros));
    if (lowest < 0) overspent.push(`${account.accountId}: balance down to ${lowest} µINR`);
    for (const entry of charges) {
      if (entry.requestId === null) ledgerProblems.push(`${account.accountId}: a charge without a request id`);
      else if (chargeOf.has(entry.requestId)) duplicate.push(entry.requestId);
      else chargeOf.set(entry.requestId, { amount: -entry.amountMicros, accountId: account.accountId, apiKeyId: entry.apiKeyId });
    }
    // Each charge has its usage row, at its cost.
    const usage = new Map(books.usage.map((row) => [row.requestId, row]));
    for (const entry of charges) {
      const row = entry.requestId ? usage.get(entry.requestId) : undefined;
      if (!row || row.costMicros !== -entry.amountMicros) ledgerProblems.push(`${entry.requestId}: charge ${-entry.amountMicros} µINR, usage row ${row ? row.costMicros : 'missing'}`);
    }
    // Keys: spend is the sum of their charges, within their budgets.
    for (const key of books.keys) {
      const spent = -charges.filter((entry) => entry.apiKeyId === key.keyId).reduce((sum, entry) => sum + entry.amountMicros, 0);
      if (key.spentMicros !== spent) ledgerProblems.push(`key ${key.keyId}: spent ${key.spentMicros}, its charges ${spent}`);
      if (key.budgetMicros !== null && key.spentMicros > key.budgetMicros) overspent.push(`key ${key.keyId}: spent ${key.spentMicros} of a budget of ${key.budgetMicros}`);
    }
  }
  check('balance = top-ups − charges = the ledger\'s sum, for every account; key spend = its charges; every charge has its usage row', ledgerProblems, `${accounts.length} accounts, to the µINR`);
  check('no wallet or key budget overspent', overspent, 'no balance below 0, no key past its budget');
  check('at most one charge per request id', duplicate.map((id) => `${id} charged twice`), `${chargeOf.size} charges, each request id once`);

  // Holds: none left, as either daemon reads them.
  const holds: string[] = [];
  for (const [name, books] of [['a', booksA], ['b', booksB]] as const) {
    for (const account of books) for (const key of account.keys) if (key.heldMicros !== 0 || key.accountHeldMicros !== 0) holds.push(`${name}: key ${key.keyId} holds ${key.heldMicros}, its account ${key.accountHeldMicros}`);
  }
  check('no hold left', holds, 'every key and account holds 0, read by each daemon');

  // What the clients saw, against the charges.
  const seen = new Set<string>();
  const callProblems: string[] = [];
  let completed = 0;
  let aborted = 0;
  for (const outcome of outcomes) {
    if (outcome.plan.abort) aborted++;
    const id = outcome.requestId;
    if (id) seen.add(id);
    const charge = id ? chargeOf.get(id) : undefined;
    const billable = !FREE.has(outcome.plan.kind);
    if (outcome.completed && billable) {
      completed++;
      if (!id) callProblems.push(`${outcome.plan.kind}: completed without a request id`);
      else if (!charge) callProblems.push(`${outcome.plan.kind} ${id}: completed (${outcome.status}) but not charged`);
      else if (charge.accountId !== outcome.plan.key.accountId || charge.apiKeyId !== outcome.plan.key.keyId) callProblems.push(`${id}: charged to another account or key`);
    } else if (outcome.status !== undefined && outcome.status >= 400 && charge) {
      callProblems.push(`${outcome.plan.kind} ${id}: refused (${outcome.status} ${outcome.errorReason}) yet charged ${charge.amount} µINR`);
    } else if (!billable && charge) {
      callProblems.push(`${outcome.plan.kind} ${id}: charged`);
    }
  }
  check('one charge per completed call (none for refusals)', callProblems, `${completed} completed billable calls, each charged once`);
  const earlyLeft = outcomes.filter((outcome) => outcome.plan.abort === 'early' && outcome.status === undefined).length;
  const unseen = [...chargeOf.keys()].filter((id) => !seen.has(id));
  check('charges no client saw belong to clients that left before the answer', unseen.length > earlyLeft ? [`${unseen.length} charges for ${earlyLeft} calls left before their answer`] : [], `${unseen.length} such charges, ${earlyLeft} calls left before their answer`);

  // Statuses: a 5xx only where an upstream failed; a clean call refused only for money.
  const fiveHundreds = outcomes.filter((outcome) => outcome.status !== undefined && outcome.status >= 500);
  check('no 5xx that was not an upstream fault', fiveHundreds.filter((outcome) => !outcome.plan.fault).map((outcome) => `${outcome.plan.kind} ${outcome.plan.model} ${outcome.status} ${outcome.errorReason} (${outcome.requestId})`), `${fiveHundreds.length} answers of 5xx, all to calls whose upstream was made to fail`);
  const refusedClean = outcomes.filter((outcome) => !outcome.plan.fault && outcome.status !== undefined && outcome.status >= 400 && outcome.status < 500 && outcome.status !== 402);
  check('a call without a fault is refused only for money (402)', refusedClean.map((outcome) => `${outcome.plan.kind} ${outcome.plan.model} ${outcome.status} ${outcome.errorReason}`), 'none');
  const transport = outcomes.filter((outcome) => outcome.transportError && !outcome.plan.abort);
  check('every call the client did not leave was answered', transport.map((outcome) => `${outcome.plan.kind} ${outcome.plan.fault ?? ''}: ${outcome.transportError}`), 'no connection cut by the gateway');

  // The daemons: alive, quiet, and flat in memory.
  check('no daemon crash, no error logged', daemons.flatMap((daemon) => [...daemon.crashes.map((stack) => `${daemon.name} crashed: ${stack.slice(0, 600)}`), ...daemon.errors.map((line) => `${daemon.name}: ${line.slice(0, 600)}`)]), 'none');
  const memory: string[] = [];
  for (const daemon of daemons) {
    const rss = growthOverLastHalf(daemon.samples, 'rssMb');
    if (rss.growthMb > rssAllowanceMb(rss.startMb)) memory.push(`${daemon.name}: RSS grew ${rss.growthMb.toFixed(1)} MB over the last half (from ${rss.startMb.toFixed(0)} MB)`);
  }
  check('RSS flat over the last half of the run', memory, daemons.map((daemon) => `${daemon.name}: ${growthOverLastHalf(daemon.samples, 'rssMb').growthMb.toFixed(1)} MB`).join(', '));

  return {
    checks,
    figures: { calls: outcomes.length, completed, charges: chargeOf.size, chargedMicros, topupMicros, faulted: outcomes.filter((outcome) => outcome.plan.fault).length, aborted, unseenCharges: unseen.length, fiveHundreds: fiveHundreds.length },
  };
}
