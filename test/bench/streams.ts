import { Pool } from 'undici';
import { call, specFor, type Target } from './load.js';
import { memory } from './procs.js';

/**
 * Many concurrent slow streams through one target: all of them opened at once, waited for
 * until every one has received content, the RSS of the target (and of the simulator) read,
 * then every stream aborted by the client (the gateway bills those as 499 calls).
 */

export interface SlowStreamsResult {
  target: string;
  requested: number;
  /** Streams that had received content when RSS was read. */
  receiving: number;
  /** Milliseconds until every stream received content (or the wait ran out). */
  openMs: number;
  allReceiving: boolean;
  rssMb: number;
  simRssMb: number;
  /** Most content chunks seen in one network read (1 = nothing held back and coalesced). */
  maxChunksPerRead: number;
  abortedReceiving: number;
  abortedEarly: number;
  failed: number;
  errors: string[];
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A reply of `chunks` text deltas ("tick "), one every `chunkDelayMs`. The text has spaces on
 * purpose: the gateway tokenizes the prompt (this directive included) of an aborted stream,
 * and BPE is quadratic in the length of an unbroken word.
 */
export function slowScenario(chunks: number, chunkDelayMs: number): object {
  return { text: 'tick '.repeat(chunks), chunkSize: 5, chunkDelayMs };
}

export async function slowStreams(target: Target, simPid: number, options: { streams: number; chunkDelayMs: number; waitMs: number; settleMs: number }): Promise<SlowStreamsResult> {
  const n = options.streams;
  const pool = new Pool(target.origin, { connections: n + 16, keepAliveTimeout: 10_000, headersTimeout: 60_000, bodyTimeout: 60_000 });
  const slow: Target = { ...target, pool };
  const spec = specFor(target, 'stream', slowScenario(120, options.chunkDelayMs));
  const controllers: AbortController[] = [];
  let receiving = 0;
  let maxChunksPerRead = 0;
  let allReceived!: () => void;
  const everyone = new Promise<void>((resolve) => (allReceived = resolve));
  const start = performance.now();
  const calls = Array.from({ length: n }, () => {
    const controller = new AbortController();
    controllers.push(controller);
    return call(slow, spec, {
      signal: controller.signal,
      onFirst: () => {
        receiving += 1;
        if (receiving === n) allReceived();
      },
      onRead: (k) => (maxChunksPerRead = Math.max(maxChunksPerRead, k)),
    });
  });
  await Promise.race([everyone, sleep(options.waitMs)]);
  const openMs = performance.now() - start;
  const allReceiving = receiving === n;
  // Let every stream get a few more chunks through before reading memory.
  await sleep(options.settleMs);
  const mem = memory(target.pid);
  const simMem = memory(simPid);
  const receivingAtRead = receiving;
  for (const controller of controllers) controller.abort();
  const outcomes = await Promise.all(calls);
  await pool.destroy();
  const errors = [...new Set(outcomes.filter((o) => o.error && o.error !== 'aborted').map((o) => o.error as string))].slice(0, 5);
  return {
    target: target.id,
    requested: n,
    receiving: receivingAtRead,
    openMs,
    allReceiving,
    rssMb: mem.rssMb,
    simRssMb: simMem.rssMb,
    maxChunksPerRead,
    abortedReceiving: outcomes.filter((o) => o.error === 'aborted' && o.chunks > 0).length,
    abortedEarly: outcomes.filter((o) => o.error === 'aborted' && o.chunks === 0).length,
    failed: outcomes.filter((o) => !o.ok && o.error !== 'aborted').length,
    errors,
  };
}
