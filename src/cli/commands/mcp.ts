import type { IncomingMessage } from 'node:http';
import type { Command } from 'commander';
import { SseParser } from '../../providers/shared/sse-parser.js';
import { CliError, errorMessageOf, readAll, sendRequest } from '../client.js';
import type { Io } from '../io.js';
import { gatewayUrl, UsageError, withClientOptions, type ClientFlags } from '../options.js';

/**
 * `gateway mcp`: the management MCP server on stdio, for desktop clients (Claude Desktop,
 * Claude Code, Cursor). It holds no rules of its own: it relays each JSON-RPC message between
 * stdio (one message per line) and the running daemon's `/mcp` (Streamable HTTP, with the
 * management key), so both transports have one tool registry, the daemon's, with its role
 * rules and audit log. A relay of bytes, not an MCP client plus an MCP server: no SDK to load
 * (it answers `initialize` in about the time node takes to start) and nothing re-encoded.
 *
 * The client's `initialize` opens a session on the daemon (its `mcp-session-id` is kept and
 * sent with every later message); the daemon's answer, JSON or an SSE stream of messages, is
 * written to stdout message by message. Notifications the daemon accepts (202) write nothing.
 * A request the daemon refuses at the HTTP level (a revoked key, a session that ended) is
 * answered on stdout with a JSON-RPC error carrying the daemon's message. The key is checked
 * at start, so a wrong or non-management key exits 1 at once, with the daemon's reason. At
 * the end of stdin the relay waits for the answers in flight, ends the session and exits.
 */
export function registerMcpCommand(program: Command, io: Io): void {
  withClientOptions(program.command('mcp').description('run the management MCP server on stdio (for Claude Desktop, Claude Code, Cursor), relaying the daemon\'s /mcp')).action(async (flags: ClientFlags) => {
    const key = flags.key ?? io.env.GATEWAY_ADMIN_KEY;
    if (!key) throw new UsageError('no management key: pass --key akm-… or set GATEWAY_ADMIN_KEY');
    const base = await gatewayUrl(flags, io);
    const relay = new McpRelay(new URL('/mcp', base.endsWith('/') ? base : `${base}/`), key, base);
    // The key is checked while stdin is read: a first message waits for nothing.
    const checked = relay.checkKey();
    const failed = checked.then(
      () => new Promise<never>(() => undefined),
      (error: unknown) => Promise.reject(error),
    );
    await Promise.race([relay.run(process.stdin, (line) => process.stdout.write(line)), failed]);
    await checked;
  });
}

interface JsonRpcMessage {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  result?: { protocolVersion?: unknown };
}

class McpRelay {
  private sessionId: string | undefined;
  private protocolVersion: string | undefined;
  /** The session is opened by the first message (initialize): later ones wait for its id. */
  private opened: Promise<void> | undefined;

  constructor(
    private readonly url: URL,
    private readonly key: string,
    private readonly base: string,
  ) {}

  /** A GET without a session: a management key gets 400 (no session), any other 401 or 403. */
  async checkKey(): Promise<void> {
    const response = await this.send('GET', undefined, { accept: 'text/event-stream' });
    const text = await readAll(response);
    if (response.statusCode === 401 || response.statusCode === 403) throw new CliError(`the gateway refused the key (${response.statusCode}): ${errorMessageOf(text) ?? 'not a management key'}`, response.statusCode);
    if (response.statusCode === 404) throw new CliError(`the gateway at ${this.base} has no /mcp endpoint (404)`, 404);
  }

  /** Relays every line of `input` and ends the session when it closes. */
  async run(input: NodeJS.ReadableStream, write: (line: string) => void): Promise<void> {
    const inFlight = new Set<Promise<void>>();
    let buffer = '';
    input.setEncoding('utf8');
    for await (const chunk of input as AsyncIterable<string>) {
      buffer += chunk;
      let end: number;
      while ((end = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, end).trim();
        buffer = buffer.slice(end + 1);
        if (line === '') continue;
        const job = this.relay(line, write).finally(() => inFlight.delete(job));
        inFlight.add(job);
      }
    }
    if (buffer.trim() !== '') await this.relay(buffer.trim(), write);
    await Promise.all(inFlight);
    if (this.sessionId !== undefined) await this.send('DELETE', undefined, {}).then(readAll, () => undefined);
  }

  private async relay(line: string, write: (line: string) => void): Promise<void> {
    let message: JsonRpcMessage | JsonRpcMessage[];
    try {
      message = JSON.parse(line) as JsonRpcMessage | JsonRpcMessage[];
    } catch {
      write(`${JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: a line on stdin is not JSON' } })}\n`);
      return;
    }
    const first = Array.isArray(message) ? message[0] : message;
    const initialize = first?.method === 'initialize';
    let release: (() => void) | undefined;
    if (initialize && !this.opened) this.opened = new Promise<void>((resolve) => (release = resolve));
    else if (this.opened) await this.opened;
    try {
      const response = await this.send('POST', line, { accept: 'application/json, text/event-stream', 'content-type': 'application/json' });
      const session = response.headers['mcp-session-id'];
      if (initialize && typeof session === 'string') this.sessionId = session;
      const type = String(response.headers['content-type'] ?? '');
      if ((response.statusCode ?? 0) >= 400) {
        const text = await readAll(response);
        const requestIds = (Array.isArray(message) ? message : [message]).filter((m) => m.method !== undefined && m.id !== undefined && m.id !== null);
        for (const m of requestIds) {
          write(`${JSON.stringify({ jsonrpc: '2.0', id: m.id, error: { code: -32603, message: `the gateway answered ${response.statusCode}: ${errorMessageOf(text) ?? 'error'}` } })}\n`);
        }
        return;
      }
      if (type.startsWith('text/event-stream')) {
        const parser = new SseParser();
        for await (const chunk of response as AsyncIterable<Buffer>) {
          for (const event of parser.push(chunk)) if (event.data !== '') this.forward(event.data, write);
        }
        return;
      }
      const text = await readAll(response);
      if (text.trim() !== '') this.forward(text, write);
    } finally {
      release?.();
    }
  }

  /** One JSON-RPC message (or batch) to stdout, as one line; the negotiated protocol version is kept for the header. */
  private forward(text: string, write: (line: string) => void): void {
    let parsed: JsonRpcMessage | JsonRpcMessage[];
    try {
      parsed = JSON.parse(text) as JsonRpcMessage | JsonRpcMessage[];
    } catch {
      return;
    }
    for (const m of Array.isArray(parsed) ? parsed : [parsed]) {
      if (typeof m.result?.protocolVersion === 'string') this.protocolVersion = m.result.protocolVersion;
    }
    write(`${JSON.stringify(parsed)}\n`);
  }

  private send(method: string, body: string | undefined, extra: Record<string, string>): Promise<IncomingMessage> {
    const headers: Record<string, string> = { ...extra, authorization: `Bearer ${this.key}` };
    if (this.sessionId !== undefined) headers['mcp-session-id'] = this.sessionId;
    if (this.protocolVersion !== undefined) headers['mcp-protocol-version'] = this.protocolVersion;
    if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
    return sendRequest(this.url, this.base, { method, headers, body });
  }
}
