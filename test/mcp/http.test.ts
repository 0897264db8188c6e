import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import t from 'tap';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/** The MCP server over Streamable HTTP, driven by the SDK's own client: auth, tools, role rules. */

async function connect(url: string, key: string): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
  return client;
}

t.test('MCP over Streamable HTTP: initialize, list tools, read-only tools, refusals', async (t) => {
  const sim = await ProviderSimulator.start();
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  const client = await connect(gw.url, gw.adminKey);
  t.teardown(() => client.close());
  t.equal(client.getServerVersion()?.name, 'llm-gateway');

  const tools = await client.listTools();
  const names = tools.tools.map((tool) => tool.name).sort();
  t.same(names, [
    'create_account',
    'create_api_key',
    'create_management_key',
    'estimate_cost',
    'get_balance',
    'list_accounts',
    'list_api_keys',
    'list_ledger',
    'list_management_keys',
    'list_models',
    'list_routes',
    'purge_cache',
    'query_usage',
    'revoke_api_key',
    'revoke_management_key',
    'top_up_wallet',
    'update_account',
    'update_api_key',
    'whoami',
  ]);
  for (const tool of tools.tools) {
    t.ok(tool.description && tool.outputSchema && tool.inputSchema, `${tool.name}: a description, input and output schemas`);
    const readOnly = tool.name.startsWith('list_') || ['whoami', 'get_balance', 'estimate_cost', 'query_usage'].includes(tool.name);
    t.equal(tool.annotations?.readOnlyHint, readOnly, `${tool.name}: readOnlyHint ${readOnly}`);
    t.equal(tool.annotations?.destructiveHint ?? false, tool.name.startsWith('revoke_') || tool.name === 'purge_cache', `${tool.name}: destructiveHint`);
  }

  const resources = await client.listResources();
  t.same(resources.resources.map((r) => r.uri).sort(), ['gateway://balance', 'gateway://models']);
  const catalog = await client.readResource({ uri: 'gateway://models' });
  t.ok(JSON.parse((catalog.contents[0] as { text: string }).text).data.some((m: { id: string }) => m.id === 'openai/gpt-4o-mini'), 'the catalog as a resource');
  const own = await client.readResource({ uri: 'gateway://balance' });
  t.match(JSON.parse((own.contents[0] as { text: string }).text), { email: gw.adminEmail, currency: 'INR' });

  const whoami = await client.callTool({ name: 'whoami', arguments: {} });
  t.match(whoami.structuredContent, { email: gw.adminEmail, role: 'admin' });

  const funded = await fundedKey(gw, { balance: 123.45, email: 'mcp@example.com' });
  const balance = await client.callTool({ name: 'get_balance', arguments: { account_id: 'mcp@example.com' } });
  t.match(balance.structuredContent, { account_id: funded.accountId, balance: 123.45, currency: 'INR' });

  const cost = await client.callTool({ name: 'estimate_cost', arguments: { model: 'gpt-4o-mini', input_tokens: 1_000_000, output_tokens: 1000 } });
  t.match(cost.structuredContent, { model: 'openai/gpt-4o-mini', cost: 12.6504, currency: 'INR' }, '₹12.60 per 1M in + ₹50.40 per 1M out');
  t.match((await client.callTool({ name: 'estimate_cost', arguments: { model: 'openai/tts-1', units: 1000 } })).structuredContent, { billed_in: 'characters', cost: 1.26 }, 'speech per character');
  t.match((await client.callTool({ name: 'estimate_cost', arguments: { model: 'whisper-1', units: 60 } })).structuredContent, { billed_in: 'seconds', cost: 0.504 }, 'transcription per second');
  t.match((await client.callTool({ name: 'estimate_cost', arguments: { model: 'dall-e-3', units: 2, size: '1792x1024', quality: 'hd' } })).structuredContent, { billed_in: 'images', cost: 20.16 }, 'images by size and quality');
  t.equal((await client.callTool({ name: 'estimate_cost', arguments: { model: 'openai/tts-1' } })).isError, true, 'units required for a media model');
  const unknown = await client.callTool({ name: 'estimate_cost', arguments: { model: 'nope', input_tokens: 1 } });
  t.equal(unknown.isError, true, 'a bad argument is a tool error, not a protocol failure');
  t.match(JSON.stringify(unknown.content), /model: no catalog model/);
  const invalid = await client.callTool({ name: 'estimate_cost', arguments: { model: 'gpt-4o-mini', input_tokens: -1 } });
  t.equal(invalid.isError, true, 'schema violations too');

  const models = await client.callTool({ name: 'list_models', arguments: { type: 'speech' } });
  t.ok((models.structuredContent as { models: Array<{ type: string }> }).models.every((m) => m.type === 'speech'));

  // Changing tools: a top-up replayed with its reference applies once; a key made here works.
  const topup = await client.callTool({ name: 'top_up_wallet', arguments: { account_id: 'mcp@example.com', amount: 500, reference: 'INV-9' } });
  t.match(topup.structuredContent, { balance: 623.45, replayed: false });
  const replay = await client.callTool({ name: 'top_up_wallet', arguments: { account_id: 'mcp@example.com', amount: 500, reference: 'INV-9' } });
  t.match(replay.structuredContent, { balance: 623.45, replayed: true }, 'the same reference applies once');
  const created = await client.callTool({ name: 'create_api_key', arguments: { account_id: 'mcp@example.com', name: 'from mcp', budget: 100, rate_limit: 60 } });
  const secret = (created.structuredContent as { secret: string }).secret;
  t.match(secret, /^sk-[0-9a-f]{64}$/);
  t.match(JSON.stringify(created.content), /shown once/, 'the text warns the secret is shown once');
  const credits = await fetch(`${gw.url}/v1/credits`, { headers: { authorization: `Bearer ${secret}` } });
  t.match(await credits.json(), { balance: 623.45 }, 'the key works');
  const chat = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) });
  t.equal(chat.status, 200, 'a key created over MCP makes chat completions');
  await chat.json();
  const keyId = ((created.structuredContent as { key: { id: string } }).key).id;
  const badUpdate = await client.callTool({ name: 'update_api_key', arguments: { key_id: keyId, rate_limit: 20000 } });
  t.equal(badUpdate.isError, true);
  t.match(JSON.stringify(badUpdate.content), /rate_limit/, 'the error names the field');
  t.match((await client.callTool({ name: 'update_api_key', arguments: { key_id: keyId, budget: 50 } })).structuredContent, { key: { budget: 50 } });
  t.match(
    (await client.callTool({ name: 'update_api_key', arguments: { key_id: keyId, max_parallel: 3, tpm_limit: 9000, budget_period: 'weekly' } })).structuredContent,
    { key: { max_parallel: 3, tpm_limit: 9000, budget_period: 'weekly' } },
    'max_parallel, tpm_limit and budget_period over MCP',
  );
  const owner = ((await client.callTool({ name: 'update_api_key', arguments: { key_id: keyId, max_parallel: null } })).structuredContent as { key: { account_id: string; max_parallel: unknown } }).key;
  t.equal(owner.max_parallel, null, 'null clears');
  t.match((await client.callTool({ name: 'update_account', arguments: { account_id: owner.account_id, spend_limit: 1000, spend_period: 'monthly' } })).structuredContent, { account: { spend_limit: 1000, spend_period: 'monthly' } }, 'update_account sets a spend limit');
  const badAccount = await client.callTool({ name: 'update_account', arguments: { account_id: owner.account_id, spend_period: 'sometimes' } });
  t.equal(badAccount.isError, true);
  t.match(JSON.stringify(badAccount.content), /spend_period/, 'the error names the field');
  t.match((await client.callTool({ name: 'update_api_key', arguments: { key_id: keyId, models: ['anthropic/*'], allowed_ips: ['127.0.0.0/8'] } })).structuredContent, { key: { models: ['anthropic/*'], allowed_ips: ['127.0.0.0/8'] } }, 'models and allowed_ips over MCP');
  const outside = await fetch(`${gw.url}/v1/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' }, body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) });
  t.equal(outside.status, 403, 'a model outside the list is refused');
  await outside.json();
  const badList = await client.callTool({ name: 'update_api_key', arguments: { key_id: keyId, allowed_ips: ['nowhere'] } });
  t.equal(badList.isError, true);
  t.match(JSON.stringify(badList.content), /allowed_ips\[0\]/, 'the error names the entry');
  t.match((await client.callTool({ name: 'revoke_api_key', arguments: { key_id: keyId } })).structuredContent, { key: { status: 'revoked' } });
  t.equal((await fetch(`${gw.url}/v1/credits`, { headers: { authorization: `Bearer ${secret}` } })).status, 401, 'revoked');
  const ledger = await client.callTool({ name: 'list_ledger', arguments: { account_id: 'mcp@example.com' } });
  t.equal((ledger.structuredContent as { entries: Array<{ kind: string }> }).entries.filter((e) => e.kind === 'topup').length, 2, 'two top-ups in the ledger, not three');
  t.match((await client.callTool({ name: 'query_usage', arguments: { account_id: 'mcp@example.com', group_by: 'model' } })).structuredContent, { rows: [{ model: 'openai/gpt-4o-mini', calls: 1, errors: 0 }] }, 'usage totals by model');

  // The router's view, as GET /api/management/routes: the model just called is active, a rest shows.
  gw.app.routes.restDeployment('openai:gpt-4o-mini', 30_000, 'quota', Date.now());
  const routes = await client.callTool({ name: 'list_routes', arguments: {} });
  t.notOk(routes.isError, 'list_routes answers an admin key');
  t.same(routes.structuredContent, (await gw.http('GET', '/api/management/routes?active=true', { token: gw.adminKey })).body, 'the same document as the management API');
  t.match(routes.structuredContent, { object: 'routes', strategy: 'weighted', retries: 2, data: [{ model: 'openai/gpt-4o-mini', deployments: [{ id: 'openai:gpt-4o-mini', state: 'resting', reason: 'quota', calls: 1, failures: 0 }] }] });
  t.equal((routes.structuredContent as { data: unknown[] }).data.length, 1, 'only the active model by default');
  t.same(JSON.parse((routes.content as Array<{ text: string }>)[0]?.text ?? ''), routes.structuredContent, 'the text is the same document');
  const idle = await client.callTool({ name: 'list_routes', arguments: { model: 'gpt-4o' } });
  t.match(idle.structuredContent, { data: [{ model: 'openai/gpt-4o', deployments: [{ state: 'ok', calls: 0 }] }] }, 'model: that model, active or not');
  t.equal(((await client.callTool({ name: 'list_routes', arguments: { all: true } })).structuredContent as { data: unknown[] }).data.length, gw.app.catalog.models.length, 'all: every model');
  const noModel = await client.callTool({ name: 'list_routes', arguments: { model: 'no-such-model' } });
  t.equal(noModel.isError, true, 'an unknown model is a tool error');
  t.match(JSON.stringify(noModel.content), /no-such-model/);

  // Every remaining tool's success.
  const team = await client.callTool({ name: 'create_account', arguments: { email: 'team-mcp@example.com', name: 'Team' } });
  t.match(team.structuredContent, { account: { email: 'team-mcp@example.com', balance: 0 } });
  const badEmail = await client.callTool({ name: 'create_account', arguments: { email: 'not-an-email', name: 'X' } });
  t.equal(badEmail.isError, true);
  t.match(JSON.stringify(badEmail.content), /email: must be an email address/, "the management API's rule, naming the field");
  t.ok((await client.callTool({ name: 'list_accounts', arguments: {} })).structuredContent && !(await client.callTool({ name: 'list_accounts', arguments: {} })).isError);
  const akm = await client.callTool({ name: 'create_management_key', arguments: { account_id: 'team-mcp@example.com', name: 'team bot' } });
  t.match((akm.structuredContent as { secret: string }).secret, /^akm-/);
  const akmId = (akm.structuredContent as { key: { id: string } }).key.id;
  t.equal(((await client.callTool({ name: 'list_management_keys', arguments: { account_id: 'team-mcp@example.com' } })).structuredContent as { keys: unknown[] }).keys.length, 1);
  t.match((await client.callTool({ name: 'revoke_management_key', arguments: { key_id: akmId } })).structuredContent, { key: { status: 'revoked' } });
  t.equal(((await client.callTool({ name: 'list_api_keys', arguments: { account_id: 'mcp@example.com' } })).structuredContent as { keys: unknown[] }).keys.length, 2, 'the funded key and the one made over MCP');
  t.equal(((await client.callTool({ name: 'query_usage', arguments: { account_id: 'mcp@example.com' } })).structuredContent as { rows: unknown[] }).rows.length, 1, 'usage rows');
  t.match((await client.callTool({ name: 'query_usage', arguments: { since: 'yesterday' } })), { isError: true }, 'a bad date names the field');

  // A non-admin key sees only its own account.
  const account = await gw.http('POST', '/api/management/accounts', { token: gw.adminKey, body: { email: 'user@example.com', name: 'U' } });
  const userKey = await gw.http('POST', `/api/management/accounts/${account.body.id as string}/management-keys`, { token: gw.adminKey, body: { name: 'user tool' } });
  const user = await connect(gw.url, userKey.body.management_key as string);
  t.teardown(() => user.close());
  t.match((await user.callTool({ name: 'whoami', arguments: {} })).structuredContent, { role: 'user', email: 'user@example.com' });
  const foreign = await user.callTool({ name: 'get_balance', arguments: { account_id: 'mcp@example.com' } });
  t.equal(foreign.isError, true, "another account's balance is refused as a tool error");
  t.match((await user.callTool({ name: 'get_balance', arguments: {} })).structuredContent, { email: 'user@example.com', balance: 0 });
  const notAdmin = await user.callTool({ name: 'top_up_wallet', arguments: { account_id: 'user@example.com', amount: 1 } });
  t.equal(notAdmin.isError, true, 'a user key cannot top up');
  t.match(JSON.stringify(notAdmin.content), /admin/);
  t.equal((await user.callTool({ name: 'list_accounts', arguments: {} })).isError, true);
  const userRoutes = await user.callTool({ name: 'list_routes', arguments: {} });
  t.equal(userRoutes.isError, true, 'list_routes is for admin keys');
  t.match(JSON.stringify(userRoutes.content), /admin/);
  t.equal((await user.callTool({ name: 'list_api_keys', arguments: { account_id: 'mcp@example.com' } })).isError, true, "another account's keys are not found");
  const mine = await user.callTool({ name: 'create_api_key', arguments: { name: 'mine' } });
  t.notOk(mine.isError, 'a user key makes keys for its own account');

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
