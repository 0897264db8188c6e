import { randomUUID } from 'node:crypto';
import type { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { App } from '../app.js';
import { GatewayError } from '../core/errors.js';
import type { RequestContext, Route } from '../http/server.js';
import type { Router } from '../http/router.js';
import { requireManagementKey } from './guards.js';

/**
 * The MCP server over Streamable HTTP at `/mcp` (issue 14): `Authorization: Bearer akm-…`
 * on every request (none or a bad key 401, an `sk-` key 403, with the error envelope),
 * sessions as the transport defines them (each bound to the key that opened it), and a
 * browser page of another origin refused (DNS rebinding).
 */

interface McpSession {
  transport: StreamableHTTPServerTransport;
  keyId: string;
  lastUsed: number;
}

/** A session unused this long is closed (a client that never sent DELETE). */
const SESSION_IDLE_MS = 30 * 60 * 1000;
/** Sessions kept at most; past it the least recently used is closed. */
const MAX_SESSIONS = 1000;

function refused(status: number, reason: string, message: string): GatewayError {
  return new GatewayError({ status, type: status === 404 ? 'not_found_error' : status === 400 ? 'invalid_request_error' : 'permission_error', reason, message });
}

function checkOrigin(ctx: RequestContext): void {
  const origin = ctx.req.headers.origin;
  if (origin === undefined) return;
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined;
  }
  if (host !== ctx.req.headers.host) throw refused(403, 'origin_not_allowed', `the MCP endpoint refuses requests from another origin (${origin.slice(0, 100)})`);
}

/**
 * The MCP SDK, zod and the tool registry, loaded by the first request to /mcp (they hold ~25 MB
 * resident that a daemon nobody manages over MCP never needs).
 */
let mcpModules: Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('../mcp/tools.js')]> | undefined;
function loadMcp(): NonNullable<typeof mcpModules> {
  mcpModules ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('../mcp/tools.js')]);
  return mcpModules;
}

export function registerMcpRoutes(router: Router<Route>, app: App): void {
  const sessions = new Map<string, McpSession>();
  const close = (id: string): void => {
    const session = sessions.get(id);
    sessions.delete(id);
    if (session) void session.transport.close().catch(() => undefined);
  };
  const sweeper = setInterval(() => {
    const cutoff = Date.now() - SESSION_IDLE_MS;
    for (const [id, session] of sessions) if (session.lastUsed < cutoff) close(id);
  }, 60_000);
  sweeper.unref();
  app.lifecycle.onShutdown(() => {
    clearInterval(sweeper);
    for (const id of [...sessions.keys()]) close(id);
  });

  const handle = async (ctx: RequestContext): Promise<void> => {
    const principal = await requireManagementKey(app, ctx);
    checkOrigin(ctx);
    // The transport builds the request's URL from Host (an HTTP/1.0 client may leave it out).
    if (!ctx.req.headers.host) throw refused(400, 'missing_host', 'header host: required by the MCP endpoint');
    const body = ctx.method === 'POST' ? await ctx.json() : undefined;
    const header = ctx.req.headers['mcp-session-id'];
    const id = Array.isArray(header) ? header[0] : header;
    if (id !== undefined) {
      const session = sessions.get(id);
      if (!session) throw refused(404, 'mcp_session_not_found', 'no such MCP session (it ended or the daemon restarted): initialize a new one');
      if (session.keyId !== principal.key.id) throw refused(403, 'mcp_session_not_yours', 'this MCP session was opened with another management key');
      session.lastUsed = Date.now();
      // Least recently used last: a Map keeps insertion order.
      sessions.delete(id);
      sessions.set(id, session);
      await session.transport.handleRequest(ctx.req, ctx.res, body);
      return;
    }
    if (ctx.method !== 'POST') throw refused(400, 'mcp_session_required', 'mcp-session-id header required: initialize a session with a POST first');
    const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await loadMcp();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        if (sessions.size >= MAX_SESSIONS) {
          const oldest = sessions.keys().next().value;
          if (oldest !== undefined) close(oldest);
        }
        sessions.set(sessionId, { transport, keyId: principal.key.id, lastUsed: Date.now() });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    const server = createMcpServer(app, principal);
    await server.connect(transport);
    await transport.handleRequest(ctx.req, ctx.res, body);
  };
  for (const method of ['POST', 'GET', 'DELETE']) router.add(method, '/mcp', { handle });
}
