import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import t from 'tap';
import { cliEnv, ROOT } from '../support/cli.js';
import { fundedKey, startTestGateway } from '../support/gateway.js';

/** `gateway mcp` on stdio, spawned as a desktop client would, relaying the daemon's tools. */

t.test('gateway mcp: the same tools and rules over stdio', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const funded = await fundedKey(gw, { balance: 42, email: 'stdio@example.com' });
  const transport = new StdioClientTransport({ command: process.execPath, args: ['bin/gateway.js', 'mcp', '--url', gw.url], cwd: ROOT, env: { ...cliEnv(), GATEWAY_ADMIN_KEY: gw.adminKey } as Record<string, string>, stderr: 'pipe' });
  const client = new Client({ name: 'desktop', version: '1.0.0' });
  await client.connect(transport);
  t.teardown(() => client.close());
  const tools = await client.listTools();
  t.ok(tools.tools.some((tool) => tool.name === 'top_up_wallet' && tool.annotations?.idempotentHint === true), 'the daemon tools, annotations kept');
  t.match((await client.callTool({ name: 'whoami', arguments: {} })).structuredContent, { role: 'admin', email: gw.adminEmail });
  const topup = await client.callTool({ name: 'top_up_wallet', arguments: { account_id: funded.accountId, amount: 8, reference: 'stdio-1' } });
  t.match(topup.structuredContent, { balance: 50, replayed: false });
  t.match((await client.callTool({ name: 'top_up_wallet', arguments: { account_id: funded.accountId, amount: 8, reference: 'stdio-1' } })).structuredContent, { balance: 50, replayed: true });
  const balance = await client.readResource({ uri: 'gateway://balance' });
  t.match(JSON.parse((balance.contents[0] as { text: string }).text), { email: gw.adminEmail }, 'resources relayed too');
  const refused = await client.callTool({ name: 'get_balance', arguments: { account_id: 'nobody@example.com' } });
  t.equal(refused.isError, true, 'tool errors pass through');

  // A line that is not JSON gets a JSON-RPC parse error; the relay goes on (raw stdio, as a buggy client would write).
  const { spawn } = await import('node:child_process');
  const raw = spawn(process.execPath, ['bin/gateway.js', 'mcp', '--url', gw.url], { cwd: ROOT, env: { ...cliEnv(), GATEWAY_ADMIN_KEY: gw.adminKey }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  raw.stdout.setEncoding('utf8').on('data', (text: string) => (out += text));
  raw.stdin.end('not json\n{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}\n');
  const rawCode = await new Promise<number | null>((resolve) => raw.once('close', resolve));
  const answers = out.trim().split('\n').map((line) => JSON.parse(line) as { id: unknown; error?: { code: number }; result?: { serverInfo?: { name?: string } } });
  t.equal(rawCode, 0, 'stdin closed: the relay ends its session and exits 0');
  t.match(answers.find((a) => a.id === null)?.error, { code: -32700 }, 'a line that is not JSON: parse error');
  t.ok(answers.find((a) => a.id === 7)?.result?.serverInfo?.name, 'the next line is relayed: the daemon answers initialize');

  const { runCli } = await import('../support/cli.js');
  const sk = await runCli(['mcp', '--url', gw.url, '--key', funded.key]);
  t.not(sk.code, 0, 'an sk- key cannot start it');
  t.match(sk.stderr, /403|API keys cannot use the management API/);
  t.notMatch(sk.stderr + sk.stdout, new RegExp(funded.key.slice(3)), 'the key is never printed');
});

t.test('gateway mcp without a key is a usage error', async (t) => {
  const { runCli } = await import('../support/cli.js');
  const run = await runCli(['mcp', '--url', 'http://127.0.0.1:9']);
  t.equal(run.code, 2);
  t.match(run.stderr, /no management key/);
});
