import { availableParallelism } from 'node:os';
import { Problems, readDuration, readInt, type Raw } from './fields.js';
import type { ServerLimits } from './types.js';

/**
 * `server.max_in_flight`, `max_connections`, `headers_timeout`, `request_timeout` and
 * `body_idle_timeout`: how many calls the daemon takes at once, and how long a client may take
 * to send one (load.ts reads the rest of `server`).
 */

/**
 * Calls in flight per CPU core when `max_in_flight` is unset: 256, at least 1,024 and at most
 * 8,192 in all.
 *
 * The limit is there for the moment the CPU is the bottleneck: calls that arrive faster than
 * the event loop serves them would otherwise queue inside the daemon, and every call in the
 * queue waits for all those ahead of it. At the measured 100–300 µs of gateway CPU per call
 * (README, Benchmark; up to ~1.5 ms on PostgreSQL), 1,024 calls waiting for the loop are
 * 0.1–0.3 s of its time: an admitted call is never delayed by more than that by the calls ahead,
 * and the rest are told at once to come back. Calls that wait on the provider (most of a chat
 * call's life, all of a stream's) cost memory rather than CPU: ~190 KB an open stream (1,000
 * slow streams: 257 MB), so 1,024 of them fit a small host and the benchmark's 1,000 slow
 * streams are never refused. A bigger machine runs the rest of the daemon's work beside the
 * loop (GC, TLS, the billing batch, PostgreSQL) and has the memory for more, hence the cores;
 * the cap because the gateway's own loop is one thread however many cores there are.
 */
export const IN_FLIGHT_PER_CORE = 256;
export const MIN_DEFAULT_IN_FLIGHT = 1024;
export const MAX_DEFAULT_IN_FLIGHT = 8192;

export function defaultMaxInFlight(cores = availableParallelism()): number {
  return Math.min(MAX_DEFAULT_IN_FLIGHT, Math.max(MIN_DEFAULT_IN_FLIGHT, IN_FLIGHT_PER_CORE * cores));
}

/**
 * Open connections when `max_connections` is unset: 4 times the default max_in_flight (4,096 on
 * up to 4 cores). Clients keep idle keep-alive connections in their pools beside those carrying
 * calls, and each costs a file descriptor and a few KB (up to 16 KB while its headers arrive),
 * so 4,096 slow or idle sockets stay under ~64 MB. Past it the kernel's accept queue is
 * drained and closed at once instead of exhausting descriptors the providers' and the
 * database's connections need.
 */
export function defaultMaxConnections(cores = availableParallelism()): number {
  return 4 * defaultMaxInFlight(cores);
}

/** The least a timeout may be set to (tests use a few hundred ms; nothing real sends headers faster). */
const MIN_TIMEOUT_MS = 100;

export function readServerLimits(server: Raw, problems: Problems): ServerLimits {
  const maxInFlight = readInt(server, 'max_in_flight', 'server', problems, 1, 1_000_000, defaultMaxInFlight());
  const maxConnections = readInt(server, 'max_connections', 'server', problems, 1, 1_000_000, defaultMaxConnections());
  // 20 s: a client writes its headers in one go (a few hundred bytes to a few KB); even over a
  // lossy mobile link that takes well under a second. Node's default (60 s) lets a slowloris
  // client hold a socket three times as long.
  const headersTimeoutMs = readDuration(server, 'headers_timeout', 'server', problems, 20_000, MIN_TIMEOUT_MS);
  // 300 s (node's default) for the whole request, body included: an audio upload of 25 MB over a
  // 1 Mbit/s uplink takes 200 s. It ends when the request has been received, so a response
  // streamed for an hour is never cut by it. 0: none.
  let requestTimeoutMs = readDuration(server, 'request_timeout', 'server', problems, 300_000, 0);
  if (requestTimeoutMs > 0 && requestTimeoutMs < MIN_TIMEOUT_MS) {
    problems.add('server.request_timeout', `must be 0 (none) or at least ${MIN_TIMEOUT_MS}ms`);
    requestTimeoutMs = 300_000;
  } else if (requestTimeoutMs > 0 && requestTimeoutMs < headersTimeoutMs) {
    // Node refuses to start a server whose headers may take longer than its whole request.
    problems.add('server.request_timeout', `must be 0 (none) or at least server.headers_timeout (${headersTimeoutMs}ms): the headers are part of the request`);
  }
  // 20 s: a client sending a body does not pause between two packets for seconds; one that
  // does holds a socket and a body buffer for nothing. 0: none (request_timeout still applies).
  let bodyIdleTimeoutMs = readDuration(server, 'body_idle_timeout', 'server', problems, 20_000, 0);
  if (bodyIdleTimeoutMs > 0 && bodyIdleTimeoutMs < MIN_TIMEOUT_MS) {
    problems.add('server.body_idle_timeout', `must be 0 (none) or at least ${MIN_TIMEOUT_MS}ms`);
    bodyIdleTimeoutMs = 20_000;
  }
  return { maxInFlight, maxConnections, headersTimeoutMs, requestTimeoutMs, bodyIdleTimeoutMs };
}
