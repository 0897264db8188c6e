import t from 'tap';
import type { DaemonFinal } from './daemon.js';
import { build, buildSweep, fixedInputs, type SweepItem, sweepItems } from './inputs.js';
import { Rng, SEED } from './rng.js';
import { CONCURRENCY, type Crash, type CrashEvent, Daemon, type Finding, signature, sleep, type Tally } from './run.js';
import { type Fixture, type Spec, specs } from './specs.js';
import { type Answer, checkEnvelope, describeInput, type FuzzInput, send } from './wire.js';

/**
 * Issue 28, "A fuzzer over every endpoint": a daemon (SQLite) with the provider simulator, an
 * admin `akm-` key, a funded `sk-` key and a dashboard session, and at least 10,000 generated
 * bad inputs over every endpoint the router registers (inference, auth, session keys, the
 * dashboard's and the admin pages' API, the management API, the public catalog, MCP): wrong
 * JSON types for every known field, fields missing and extra, huge strings and arrays, JSON
 * nested 10,000 levels, numbers at the edges, invalid UTF-8, wrong content types, broken
 * multipart bodies, oversized and malformed headers, bad credentials, empty bodies and bodies
 * past the limit, junk query strings, and requests no HTTP client would write (raw sockets).
 *
 * Each endpoint's fields are also swept one by one (a wrong type, then 10,000 levels of
 * nesting, at every field of its bodies). The daemon runs in a worker thread (daemon.ts) with a
 * daemon's stack size: an uncaught exception there is a crash the test records, replays to find
 * its culprit, and survives.
 *
 * Seeded: FUZZ_SEED (default fixed; `random` for a fresh one) and FUZZ_INPUTS (random inputs,
 * default 10,000; the sweep and a few fixed inputs come on top) reproduce a run;
 * FUZZ_ONLY=<index,...> sends just those inputs (each is generated from the seed and its index
 * alone). Checked: no answer of 5xx (the simulator only sees what the
 * gateway lets through, so no upstream fault can excuse one), the daemon answers /health after
 * every batch, every refusal is in the error envelope with `code` the integer status, no error
 * logged as unhandled, and the funded account charged for nothing but the inputs the gateway
 * accepted (2xx, tracked by request id).
 */

/** Random inputs (the sweep of every known field and a few fixed inputs come on top). */
const TOTAL = Number(process.env.FUZZ_INPUTS ?? 10_000);
const ONLY = process.env.FUZZ_ONLY?.split(',').map(Number);
const BATCH = 500;

t.test('a fuzzer over every endpoint: no 5xx, no crash, every refusal in the envelope, nothing charged', async (t) => {
  t.comment(`seed ${SEED} (FUZZ_SEED=${SEED} reproduces this run; FUZZ_ONLY=<index,...> sends chosen inputs)`);
  const started = Date.now();

  const crashes: Crash[] = [];
  const inFlight = new Map<number, { input: FuzzInput; daemon: Daemon }>();
  /** While inputs are sent again to find a crash's culprit: the crashes they cause. */
  let replayCrashes: CrashEvent[] | undefined;
  let restarting: Promise<void> | undefined;
  const onCrash = (daemon: Daemon, event: CrashEvent): void => {
    if (replayCrashes && !event.fatal) {
      replayCrashes.push(event);
      return;
    }
    crashes.push({ ...event, generation: daemon.generation, inFlight: [...inFlight].filter(([, item]) => item.daemon === daemon).map(([index, item]) => ({ index, input: item.input })) });
    if (!event.fatal) return;
    // The thread is gone: the next daemon takes over once the dead one's requests have come back.
    restarting = (async () => {
      while ([...inFlight.values()].some((item) => item.daemon === daemon)) await sleep(10);
      await daemon.stop();
      current = await Daemon.start(daemon.generation + 1, onCrash);
      restarting = undefined;
    })();
  };
  let current = await Daemon.start(0, onCrash);
  t.teardown(async () => {
    await restarting?.catch(() => undefined);
    await current.stop();
  });

  // The schedule: each index's endpoint by weight (from the seed), then its input from the seed and its index.
  const all = specs();
  const weights = all.reduce((sum, spec) => sum + spec.weight, 0);
  const scheduleRng = new Rng(SEED);
  const specOf = (): Spec => {
    let pick = (scheduleRng.next() / 0x1_0000_0000) * weights;
    for (const spec of all) {
      pick -= spec.weight;
      if (pick < 0) return spec;
    }
    return all.at(-1) as Spec;
  };
  const schedule = Array.from({ length: TOTAL }, specOf);
  // Inputs 0..TOTAL-1 are random; then the sweep of every known field; then the fixed ones.
  const sweep = sweepItems(all, current.fixture);
  const fixedCount = fixedInputs(current.fixture).length;
  const indices = ONLY ?? Array.from({ length: TOTAL + sweep.length + fixedCount }, (_, i) => i);
  const inputAt = (index: number, f: Fixture): FuzzInput => {
    if (index < TOTAL) return build(schedule[index] as Spec, index, f);
    if (index < TOTAL + sweep.length) return buildSweep(sweep[index - TOTAL] as SweepItem, index, f);
    return fixedInputs(f)[index - TOTAL - sweep.length] as FuzzInput;
  };

  const tallies = new Map<string, Tally>();
  const fiveHundreds: Finding[] = [];
  const envelopeProblems: Finding[] = [];
  const cuts: Finding[] = [];
  const acceptedSamples: Finding[] = [];
  /** Billable inputs the gateway accepted, by endpoint and the first kind of change made to them. */
  const acceptedKinds = new Map<string, number>();
  /** Request ids of billable inputs the gateway accepted, per daemon. */
  const acceptedIds = new Map<number, Set<string>>();
  /** Every answer's request id: what a stray charge belonged to. */
  const byRequestId = new Map<string, { index: number; input: FuzzInput; status: number }>();
  const jsonRpc = new Map<number, number>();
  let sent = 0;
  let healthChecks = 0;
  let healthFailures = 0;

  const record = (index: number, input: FuzzInput, answer: Answer, generation: number): void => {
    sent++;
    const tally = tallies.get(input.endpoint) ?? { count: 0, statuses: new Map(), accepted: 0 };
    tallies.set(input.endpoint, tally);
    tally.count++;
    const key = answer.status ?? 'cut';
    tally.statuses.set(key, (tally.statuses.get(key) ?? 0) + 1);
    const requestId = typeof answer.headers['x-request-id'] === 'string' ? answer.headers['x-request-id'] : undefined;
    if (requestId && answer.status !== undefined) byRequestId.set(requestId, { index, input, status: answer.status });
    const finding = (problem: string): Finding => ({ index, input, answer, problem, logs: requestId ? [requestId] : [], generation });
    if (answer.status === undefined) {
      if (!input.mayBeCut) cuts.push(finding(answer.error ?? 'no answer'));
      return;
    }
    if (answer.status >= 500) {
      fiveHundreds.push(finding(`status ${answer.status}: ${answer.body.subarray(0, 500).toString('utf8')}`));
      return;
    }
    if (answer.status < 300) {
      tally.accepted++;
      if (input.billable && requestId) {
        const ids = acceptedIds.get(generation) ?? new Set();
        acceptedIds.set(generation, ids.add(requestId));
        if (acceptedSamples.length < 40) acceptedSamples.push(finding(`accepted (${answer.status})`));
        const kind = `${input.endpoint} ${input.mutation.replace(/[:=].*$/s, '')}`;
        acceptedKinds.set(kind, (acceptedKinds.get(kind) ?? 0) + 1);
      }
      return;
    }
    if (answer.status < 400) return; // no redirects are expected; nothing to check
    const verdict = checkEnvelope(input, answer);
    if (verdict.jsonRpc) jsonRpc.set(answer.status, (jsonRpc.get(answer.status) ?? 0) + 1);
    if (!verdict.ok) envelopeProblems.push(finding(verdict.problem));
  };

  const health = async (): Promise<boolean> => {
    healthChecks++;
    const answer = await send(current.pool, current.fixture.url, { endpoint: 'health', mutation: 'check', method: 'GET', path: '/health', headers: {}, billable: false, shape: 'openai' });
    if (answer.status === 200) return true;
    healthFailures++;
    return false;
  };

  for (let start = 0; start < indices.length; start += BATCH) {
    const batch = indices.slice(start, start + BATCH);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < batch.length) {
        const index = batch[next++] as number;
        while (restarting) await restarting;
        const daemon = current;
        const input = inputAt(index, daemon.fixture);
        inFlight.set(index, { input, daemon });
        const answer = await send(daemon.pool, daemon.fixture.url, input);
        inFlight.delete(index);
        record(index, input, answer, daemon.generation);
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    while (restarting) await restarting;
    if (!(await health())) {
      // A thread that ended is reported a moment after its sockets closed: the next daemon carries on.
      await sleep(200);
      while (restarting) await restarting;
      if (crashes.some((crash) => crash.fatal) && (await health())) continue;
      t.fail(`the daemon did not answer /health after inputs ${batch[0]}..${batch.at(-1)}`);
      break;
    }
  }
  const elapsed = (Date.now() - started) / 1000;

  // Billing: every charge of the funded account belongs to an input the gateway accepted.
  const final = await current.ask<DaemonFinal>('final');
  const accepted = acceptedIds.get(current.generation) ?? new Set();
  const strayEntries = final.entries.filter((entry) => entry.kind !== 'charge' || entry.requestId === null || !accepted.has(entry.requestId));
  const charged = final.entries.reduce((sum, entry) => sum + entry.amountMicros, 0);
  // The daemon's log lines for each 5xx (a dead thread's log went with it).
  for (const finding of fiveHundreds) finding.logs = finding.generation === current.generation && finding.logs.length > 0 ? await current.ask<string[]>('logs', finding.logs) : [];

  // Each kind of crash: its culprit, found by sending the inputs that were in flight again, one at a time.
  const signatures = new Map<string, Crash[]>();
  for (const crash of crashes) signatures.set(signature(crash.stack), [...(signatures.get(signature(crash.stack)) ?? []), crash]);
  for (const [sig, list] of [...signatures].slice(0, 6)) {
    const first = list[0] as Crash;
    if (first.fatal) continue;
    for (const candidate of first.inFlight) {
      replayCrashes = [];
      await send(current.pool, current.fixture.url, inputAt(candidate.index, current.fixture));
      await sleep(30);
      if (replayCrashes.some((event) => signature(event.stack) === sig)) {
        first.culprit = candidate;
        break;
      }
    }
    replayCrashes = undefined;
  }

  // The report.
  t.comment(`${sent} inputs sent in ${elapsed.toFixed(1)} s (${indices.length} scheduled: ${TOTAL} random, ${sweep.length} in the sweep of every known field, ${fixedCount} fixed; ${healthChecks} health checks; ${crashes.length} crashes); ${final.upstreamRequests} requests reached the provider simulator (last daemon)`);
  t.comment('inputs by endpoint (status: count; "cut": the connection closed without an answer, allowed for bodies past the limit and cut requests):');
  for (const [endpoint, tally] of [...tallies].sort((a, b) => b[1].count - a[1].count)) {
    const statuses = [...tally.statuses].sort((a, b) => String(a[0]).localeCompare(String(b[0]))).map(([status, n]) => `${status}:${n}`).join(' ');
    t.comment(`  ${endpoint.padEnd(58)} ${String(tally.count).padStart(5)}  ${statuses}`);
  }
  const acceptedBillable = [...tallies].filter(([endpoint]) => all.find((spec) => spec.name === endpoint)?.billable).reduce((sum, [, tally]) => sum + tally.accepted, 0);
  t.comment(`billable inputs the gateway accepted (2xx: charged, as valid calls are): ${acceptedBillable}; the funded account's ledger entries since the start: ${final.entries.length}, ${charged} µINR in all`);
  t.comment(`  by input: ${[...acceptedKinds].sort((a, b) => b[1] - a[1]).map(([kind, n]) => `${kind}: ${n}`).join('; ')}`);
  for (const sample of acceptedSamples.slice(0, 10)) t.comment(`  accepted #${sample.index}: ${sample.input.endpoint} ${sample.input.mutation.slice(0, 160)}`);
  if (jsonRpc.size > 0) t.comment(`MCP transport refusals as JSON-RPC 2.0 errors (the protocol's own error object, not the gateway's envelope): ${[...jsonRpc].map(([status, n]) => `${status}:${n}`).join(' ')}`);

  const show = (finding: Finding): string => [`#${finding.index} ${finding.problem}`, describeInput(finding.input), ...finding.logs.map((line) => `log: ${line.trim().slice(0, 4000)}`)].join('\n');
  for (const [sig, list] of signatures) {
    const first = list[0] as Crash;
    const culprit = first.culprit ? `culprit (replayed alone, it crashes the daemon again; FUZZ_ONLY=${first.culprit.index}):\n${describeInput(first.culprit.input, 600)}` : `inputs in flight (one of them did it; FUZZ_ONLY=${first.inFlight.map((item) => item.index).join(',')}):\n${first.inFlight.map((item) => describeInput(item.input, 200)).join('\n')}`;
    t.comment(`CRASH (${list.length}x, ${first.kind}${first.fatal ? ', the thread ended' : ''}): ${sig}\n${first.stack}\n${culprit}`);
  }
  const group = (findings: Finding[], key: (finding: Finding) => string): Map<string, Finding[]> => {
    const groups = new Map<string, Finding[]>();
    for (const finding of findings) groups.set(key(finding), [...(groups.get(key(finding)) ?? []), finding]);
    return groups;
  };
  // 5xx by where they came from: the endpoint and the first frames in src/ of the logged stack.
  const origin = (finding: Finding): string => {
    const frames: string[] = [];
    for (const line of finding.logs) {
      try {
        const stack = String((JSON.parse(line) as { err?: { stack?: string } }).err?.stack ?? '');
        frames.push(...(stack.match(/\/src\/[^):]+:\d+/g) ?? []).slice(0, 3));
        frames.unshift(stack.split('\n')[0] ?? '');
      } catch {
        // not a JSON line
      }
    }
    return `${finding.input.endpoint} | ${frames.join(' < ') || 'no stack logged'}`;
  };
  for (const [key, findings] of group(fiveHundreds, origin)) {
    const mutations = [...new Set(findings.map((finding) => finding.input.mutation.replace(/=.*$/s, '')))];
    t.comment(`5xx (${findings.length}x): ${key}\n  inputs: ${mutations.slice(0, 10).join(', ')}${mutations.length > 10 ? ', …' : ''}\n${show(findings[0] as Finding)}`);
  }
  for (const [key, findings] of group(envelopeProblems, (finding) => finding.problem.replace(/:.*$/s, ''))) {
    const endpoints = [...new Set(findings.map((finding) => finding.input.endpoint))];
    const mutations = [...new Set(findings.map((finding) => finding.input.mutation.replace(/:.*$/s, '')))];
    t.comment(`no envelope (${findings.length}x): ${key}\n  on ${endpoints.length} endpoints (${endpoints.slice(0, 6).join(', ')}${endpoints.length > 6 ? ', …' : ''}); inputs: ${mutations.slice(0, 12).join(', ')}\n${show(findings[0] as Finding)}`);
  }
  // A cut from a daemon whose thread ended is the crash's doing, not a finding of its own.
  const deadGenerations = new Set(crashes.filter((crash) => crash.fatal).map((crash) => crash.generation));
  const unexpectedCuts = cuts.filter((finding) => !deadGenerations.has(finding.generation));
  for (const [key, findings] of group(unexpectedCuts, (finding) => `${finding.input.endpoint} | ${finding.input.mutation.replace(/[:+ ].*$/s, '')}`)) t.comment(`cut without an answer (${findings.length}x) ${key}\n${show(findings[0] as Finding)}`);
  for (const entry of strayEntries) {
    const origin = entry.requestId ? byRequestId.get(entry.requestId) : undefined;
    t.comment(`charge not matched to an accepted input: ${JSON.stringify(entry)}${origin ? `\nanswered ${origin.status} to #${origin.index}\n${describeInput(origin.input)}` : ' (no answer carried that request id)'}`);
  }
  for (const line of final.errors.slice(0, 10)) t.comment(`error logged: ${line.slice(0, 4000)}`);

  t.ok(sent >= (ONLY ? ONLY.length : 10_000), `at least 10,000 inputs (${sent})`);
  t.equal(crashes.length, 0, 'no daemon crash (uncaught exception or unhandled rejection)');
  t.equal(fiveHundreds.length, 0, 'no answer of 5xx');
  t.equal(healthFailures, 0, 'the daemon answered /health after every batch');
  t.equal(envelopeProblems.length, 0, 'every refusal carries the error envelope, code = status');
  t.equal(unexpectedCuts.length, 0, 'every input within the limits gets an answer');
  t.equal(final.errors.length, 0, 'no error logged by the daemon');
  t.same(strayEntries, [], 'the funded account: charges only for inputs the gateway accepted');
  t.equal(final.balanceAfter, final.balanceBefore + charged, 'the funded balance moved by those charges alone');
  t.same(final.held, { accountHeldMicros: 0, keyHeldMicros: 0 }, 'no hold left');
});
