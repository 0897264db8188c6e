import type { IncomingMessage, ServerResponse } from 'node:http';
import { Pool } from 'undici';
import { fail, floorArgs, readCall, relay, serveFloor } from './floor-shared.js';

/**
 * The minimal floor (issue 32): the cheapest Node proxy for one chat, embeddings or speech
 * call, the one the gateway's CPU per call is judged against. node:http in, one `undici.Pool`
 * for the upstream origin out (no per-call URL parsing, no Agent lookup, no AbortController:
 * a client that leaves is not propagated upstream); the JSON request parsed and re-serialized
 * once (the model's provider prefix dropped, the upstream key put in); JSON answers parsed and
 * re-serialized once; SSE and audio answers piped chunk for chunk (with drain backpressure). No
 * auth, no limits, no billing, no logging. floor-abort.ts is the same with the client's close
 * propagated upstream, as a gateway must.
 *
 *   node --import tsx test/bench/floor-minimal.ts --upstream http://127.0.0.1:PORT --key sim-key [--port 0]
 * Prints `floor listening on http://127.0.0.1:PORT` when ready.
 */

const args = floorArgs();
const upstream = new URL(args.upstream);
/** The upstream's path prefix (the simulator's is empty). */
const base = upstream.pathname.replace(/\/$/, '');
const headers = { authorization: `Bearer ${args.key}`, 'content-type': 'application/json' };
const pool = new Pool(upstream.origin, { keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const call = await readCall(req, res);
  if (!call) return;
  try {
    await relay(res, await pool.request({ path: `${base}${call.path}`, method: 'POST', headers, body: call.body }));
  } catch (error) {
    fail(res, 502, `upstream: ${(error as Error).message}`);
  }
}

serveFloor(args.port, handle);
