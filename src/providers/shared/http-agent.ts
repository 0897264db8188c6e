import type { Dispatcher } from 'undici';
import Agent from 'undici/lib/dispatcher/agent.js';
import apiRequest from 'undici/lib/api/api-request.js';

/**
 * undici's Agent and its request() API, loaded from their own modules: the package index
 * also loads fetch, WebSocket, EventSource, caches and mocks, about 8 MB of a daemon's idle
 * RSS (its target is under 80 MB) for code the gateway never runs. undici is pinned by the
 * lockfile; test/providers/http-agent.test.ts fails if an upgrade moves these modules.
 */
export { Agent };

/** `agent.request(options)`, which undici's index would have put on Dispatcher.prototype. */
export function requestVia(agent: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData> {
  return apiRequest.call(agent, options);
}
