import OpenAI from 'openai';
import t from 'tap';
import { header, noHolds, postJson } from '../support/e2e.js';
import { fundedKey, simulatedProviders, startTestGateway, type FundedKey, type TestGateway } from '../support/gateway.js';
import { ProviderSimulator } from '../support/simulator/server.js';

/**
 * The three clouds as deployments and fallbacks of one model (issue 29): Claude Sonnet served
 * by Bedrock, Vertex and Azure (a deployment there that does not exist), in priority order;
 * each failure of one cloud (throttled, its credentials refused, its deployment missing) is
 * answered by the next, and the charge is the model's price whichever served.
 */

let sim: ProviderSimulator;
let gw: TestGateway;
let funded: FundedKey;

const PRICE = { input_cost_per_1m: 252, output_cost_per_1m: 1260, context_window: 200000, max_output_tokens: 64000 };

t.before(async () => {
  sim = await ProviderSimulator.start();
  const fast = { connect: '2s', first_byte: '5s', idle: '5s' };
  const vertex = { type: 'vertex', project: 'sim-project', region: 'us-east5', base_url: sim.vertexBaseUrl, credentials: JSON.stringify(sim.vertex.keyFile()), timeouts: fast };
  const bedrock = { type: 'bedrock', region: sim.aws.region, base_url: sim.bedrockBaseUrl, access_key_id: sim.aws.accessKeyId, timeouts: fast };
  gw = await startTestGateway({
    providers: {
      ...simulatedProviders(sim.url),
      bedrock: { ...bedrock, secret_access_key: sim.aws.secretAccessKey },
      'bedrock-wrong': { ...bedrock, secret_access_key: 'wrong' },
      vertex,
      azure: { type: 'azure', base_url: `${sim.url}/azure`, api_key: 'sim-key', timeouts: fast },
    },
    routing: { retries: 2, max_retry_after: '1s', cooldown: { failures: 100, window: '60s', duration: '1s' } },
    models: [
      {
        id: 'anthropic/claude-clouds',
        name: 'Claude, wherever it is',
        ...PRICE,
        deployments: [
          { provider: 'bedrock', upstream_model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' },
          { provider: 'vertex', upstream_model: 'claude-sonnet-4-5@20250929', priority: 2 },
          { provider: 'azure', upstream_model: 'gpt-4o', priority: 3 },
        ],
      },
      {
        id: 'anthropic/claude-broken-first',
        name: 'Claude, first two clouds broken',
        ...PRICE,
        deployments: [
          { provider: 'bedrock-wrong', upstream_model: 'us.anthropic.claude-sonnet-4-5-20250929-v1:0' },
          { provider: 'azure', upstream_model: 'missing-claude', priority: 2 },
          { provider: 'vertex', upstream_model: 'claude-sonnet-4-5@20250929', priority: 3 },
        ],
      },
    ],
  });
  funded = await fundedKey(gw, { balance: 100 });
});
t.teardown(async () => {
  await gw?.stop();
  await sim?.close();
});

const chat = (model: string, content: string) => postJson(`${gw.url}/v1/chat/completions`, { authorization: `Bearer ${funded.key}` }, { model, messages: [{ role: 'user', content }] });

t.test('the first cloud serves while it can', async (t) => {
  sim.reset();
  const res = await chat('anthropic/claude-clouds', 'hello');
  t.equal(res.status, 200);
  t.equal(header(res, 'x-gateway-provider'), 'bedrock');
  t.equal(sim.requests[0]?.family, 'bedrock');
});

t.test('Bedrock throttled: Vertex answers; both throttled: Azure', async (t) => {
  sim.reset();
  sim.enqueue({ error: { status: 429, retryAfterSeconds: 0 } });
  const once = await chat('anthropic/claude-clouds', 'fall over once');
  t.equal(once.status, 200);
  t.equal(header(once, 'x-gateway-provider'), 'vertex');
  t.equal(header(once, 'x-gateway-attempts'), '2');
  t.same(sim.requests.map((request) => request.family), ['bedrock', 'anthropic'], "Bedrock, then Claude's wire on Vertex");
  t.match(sim.requests[1]?.vertex, { publisher: 'anthropic', method: 'rawPredict', region: 'us-east5' });

  sim.reset();
  sim.enqueue({ error: { status: 429, retryAfterSeconds: 0 } }, { error: { status: 529, message: 'Overloaded' } });
  const twice = await chat('anthropic/claude-clouds', 'fall over twice');
  t.equal(twice.status, 200);
  t.equal(header(twice, 'x-gateway-provider'), 'azure');
  t.equal(header(twice, 'x-gateway-attempts'), '3');
  t.match(sim.requests[2]?.azure, { deployment: 'gpt-4o' });
});

t.test('credentials refused and a missing deployment are skipped for the next cloud', async (t) => {
  sim.reset();
  const res = await chat('anthropic/claude-broken-first', 'route me');
  t.equal(res.status, 200);
  t.equal(header(res, 'x-gateway-provider'), 'vertex');
  t.equal(header(res, 'x-gateway-attempts'), '3', 'Bedrock (signature refused), Azure (no such deployment), then Vertex');
  sim.reset();
  const again = await chat('anthropic/claude-broken-first', 'route me again');
  t.equal(header(again, 'x-gateway-provider'), 'vertex');
  t.equal(header(again, 'x-gateway-attempts'), '2', "the refused credentials rest (Azure's missing deployment counts as a failure toward its cooldown): Azure, then Vertex");
  t.notOk(sim.requests.some((request) => request.family === 'bedrock'), 'no request to Bedrock with refused credentials');
  const client = new OpenAI({ apiKey: funded.key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  const stream = await client.chat.completions.create({ model: 'anthropic/claude-broken-first', messages: [{ role: 'user', content: 'and streamed' }], stream: true });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
  t.match(text, /simulator/);
});

t.test('whichever cloud served, the charge is the model\'s price for the call\'s usage', async (t) => {
  gw.app.settlement.drain();
  const rows = await gw.app.store.usage.list({ accountId: funded.accountId, limit: 50 });
  t.ok(rows.length >= 5, `${rows.length} calls recorded`);
  for (const row of rows) {
    const expected = (BigInt(row.inputTokens) * 252_000_000n + BigInt(row.outputTokens) * 1_260_000_000n + 999_999n) / 1_000_000n;
    t.equal(BigInt(row.costMicros), expected, `${row.requestId}: ${row.costMicros} µINR`);
  }
  await noHolds(t, gw, funded);
});
