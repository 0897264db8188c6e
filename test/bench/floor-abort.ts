import type { IncomingMessage, ServerResponse } from 'node:http';
import { Agent, request } from 'undici';
import { fail, floorArgs, readCall, relay, serveFloor } from './floor-shared.js';

/**
 * The floor with abort propagation: what a Node gateway must at least do for one chat,
 * embeddings or speech call when a client that leaves cancels its upstream call. node:http
 * in, `undici.request` out on a kept-alive Agent with a per-call AbortController aborted on the
 * client's close (issue 32 profiled it at about 30 µs per call more than floor-minimal.ts,
 * the floor the gateway is judged against); the JSON request parsed and re-serialized once
 * (the model's provider prefix dropped, the upstream key put in); JSON answers parsed and
 * re-serialized once; SSE and audio answers piped chunk for chunk (with drain backpressure). No
 * auth, no limits, no billing, no logging: whatever the gateway costs above this is the
 * gateway's own work.
 *
 *   node --import tsx test/bench/floor-abort.ts --upstream http://127.0.0.1:PORT --key sim-key [--port 0]
 * Prints `floor listening on http://127.0.0.1:PORT` when ready.
 */

const args = floorArgs();
const upstream = args.upstream.replace(/\/$/, '');
const upstreamAuth = `Bearer ${args.key}`;
const agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 600_000 });

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const controller = new AbortController();
  res.once('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  const call = await readCall(req, res);
  if (!call) return;
  try {
    const response = await request(`${upstream}${call.path}`, {
      method: 'POST',
      headers: { authorization: upstreamAuth, 'content-type': 'application/json' },
      body: call.body,
      dispatcher: agent,
      signal: controller.signal,
    });
    await relay(res, response);
  } catch (error) {
    if (controller.signal.aborted) {
      res.destroy();
      return;
    }
    fail(res, 502, `upstream: ${(error as Error).message}`);
  }
}

serveFloor(args.port, handle);
