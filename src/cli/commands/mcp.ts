import type { Command } from 'commander';
import type { Io } from '../io.js';
import { gatewayUrl, UsageError, withClientOptions, type ClientFlags } from '../options.js';

/**
 * `gateway mcp`: the management MCP server on stdio, for desktop clients (Claude Desktop,
 * Claude Code, Cursor). It holds no rules of its own: it connects to the running daemon's
 * `/mcp` with the management key and relays its tools, so both transports have one tool
 * registry, the daemon's, with its role rules and audit log.
 */
export function registerMcpCommand(program: Command, io: Io): void {
  withClientOptions(program.command('mcp').description('run the management MCP server on stdio (for Claude Desktop, Claude Code, Cursor), relaying the daemon\'s /mcp')).action(async (flags: ClientFlags) => {
    const key = flags.key ?? io.env.GATEWAY_ADMIN_KEY;
    if (!key) throw new UsageError('no management key: pass --key akm-… or set GATEWAY_ADMIN_KEY');
    // The MCP SDK (and zod) load only for this command.
    const [{ Client }, { StreamableHTTPClientTransport }, { Server }, { StdioServerTransport }, { CallToolRequestSchema, ListResourcesRequestSchema, ListToolsRequestSchema, ReadResourceRequestSchema }] =
      await Promise.all([
        import('@modelcontextprotocol/sdk/client/index.js'),
        import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
        import('@modelcontextprotocol/sdk/server/index.js'),
        import('@modelcontextprotocol/sdk/server/stdio.js'),
        import('@modelcontextprotocol/sdk/types.js'),
      ]);
    const upstream = new Client({ name: 'gateway-mcp-stdio', version: '0.1.0' });
    await upstream.connect(new StreamableHTTPClientTransport(new URL('/mcp', await gatewayUrl(flags, io)), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    const info = upstream.getServerVersion() ?? { name: 'llm-gateway', version: '0.1.0' };
    const server = new Server({ name: info.name, version: info.version }, { capabilities: { tools: {}, resources: {} } });
    server.setRequestHandler(ListToolsRequestSchema, (request) => upstream.listTools(request.params));
    server.setRequestHandler(CallToolRequestSchema, (request) => upstream.callTool(request.params));
    server.setRequestHandler(ListResourcesRequestSchema, (request) => upstream.listResources(request.params));
    server.setRequestHandler(ReadResourceRequestSchema, (request) => upstream.readResource(request.params));
    const transport = new StdioServerTransport();
    const closed = new Promise<void>((resolve) => {
      transport.onclose = () => resolve();
    });
    await server.connect(transport);
    await closed;
    await upstream.close();
  });
}
