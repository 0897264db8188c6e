import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t from 'tap';
import { fundedKey, startTestGateway } from '../support/gateway.js';

/** The MCP server over Streamable HTTP, driven by the SDK's own client: auth, tools, role rules. */

async function connect(url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

t.test('MCP over Streamable HTTP: initialize, list tools, read-only tools, refusals', async (t) => {
  const gw = await startTestGateway();
  t.teardown(() => gw.stop());
  const client = await connect(gw.url, gw.adminKey);
  t.teardown(() => client.close());
  t.equal(client.getServerVersion()?.name, 'llm-gateway');

  const tools = await client.listTools();
  const names = tools.tools.map((tool) => tool.name).sort();
  t.same(names, ['estimate_cost', 'get_balance', 'list_models', 'whoami']);
  for (const tool of tools.tools) {
    t.ok(tool.description && tool.outputSchema, `${tool.name}: a description and an output schema`);
    t.equal(tool.annotations?.readOnlyHint, true, `${tool.name}: read-only`);
  }

  const whoami = await client.callTool({ name: 'whoami', arguments: {} });
  t.match(whoami.structuredContent, { email: gw.adminEmail, role: 'admin' });

  const funded = await fundedKey(gw, { balance: 123.45, email: 'mcp@example.com' });
  const balance = await client.callTool({ name: 'get_balance', arguments: { account_id: 'mcp@example.com' } });
  t.match(balance.structuredContent, { account_id: funded.accountId, balance: 123.45, currency: 'INR' });

  const cost = await client.callTool({ name: 'estimate_cost', arguments: { model: 'gpt-4o-mini', input_tokens: 1_000_000, output_tokens: 1000 } });
  t.match(cost.structuredContent, { model: 'openai/gpt-4o-mini', cost: 12.6504, currency: 'INR' }, '₹12.60 per 1M in + ₹50.40 per 1M out');
  const unknown = await client.callTool({ name: 'estimate_cost', arguments: { model: 'nope', input_tokens: 1 } });
  t.equal(unknown.isError, true, 'a bad argument is a tool error, not a protocol failure');
  t.match(JSON.stringify(unknown.content), /model: no catalog model/);
  const invalid = await client.callTool({ name: 'estimate_cost', arguments: { model: 'gpt-4o-mini', input_tokens: -1 } });
  t.equal(invalid.isError, true, 'schema violations too');

  const models = await client.callTool({ name: 'list_models', arguments: { type: 'speech' } });
  t.ok((models.structuredContent as { models: Array<{ type: string }> }).models.every((m) => m.type === 'speech'));

  // A non-admin key sees only its own account.
  const account = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: { email: 'user@example.com', name: 'U' } });
  const userKey = await gw.http('POST', `/api/management/accounts/${account.body.id as string}/management-keys`, { token: gw.adminKey, body: { name: 'user tool' } });
  const user = await connect(gw.url, userKey.body.management_key as string);
  t.teardown(() => user.close());
  t.match((await user.callTool({ name: 'whoami', arguments: {} })).structuredContent, { role: 'user', email: 'user@example.com' });
  const foreign = await user.callTool({ name: 'get_balance', arguments: { account_id: 'mcp@example.com' } });
  t.equal(foreign.isError, true, "another account's balance is refused as a tool error");
  t.match((await user.callTool({ name: 'get_balance', arguments: {} })).structuredContent, { email: 'user@example.com', balance: 0 });

  // Credentials: none 401, an sk- key 403, with the envelope; another origin refused.
  const post = (headers: Record<string, string>) =>
    fetch(`${gw.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }) });
  const none = await post({});
  t.equal(none.status, 401);
  t.match(await none.json(), { error: { code: 401, type: 'authentication_error' } });
  const sk = await post({ authorization: `Bearer ${funded.key}` });
  t.equal(sk.status, 403);
  t.match(await sk.json(), { error: { code: 403, reason: 'api_key_not_allowed' } });
  const rebinding = await post({ authorization: `Bearer ${gw.adminKey}`, origin: 'http://evil.example' });
  t.equal(rebinding.status, 403, 'a page of another origin is refused');
  const stolen = await fetch(`${gw.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${userKey.body.management_key as string}`, 'mcp-session-id': (client.transport as StreamableHTTPClientTransport).sessionId ?? '' }, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
  t.equal(stolen.status, 403, "another key cannot use a session it did not open");
});
