import { spawn } from 'node:child_process';
import OpenAI from 'openai';
import t from 'tap';
import { ProviderSimulator } from '../support/simulator/server.js';
import { cliEnv, ROOT, runCli } from '../support/cli.js';
import { fundedKey, simulatedProviders, startTestGateway } from '../support/gateway.js';

t.test('usage list and usage tail against a daemon making real calls', async (t) => {
  const sim = await ProviderSimulator.start();
  const gw = await startTestGateway({ providers: simulatedProviders(sim.url) });
  t.teardown(async () => {
    await gw.stop();
    await sim.close();
  });
  const funded = await fundedKey(gw, { email: 'tail@example.com', balance: 10, key: { name: 'tail app' } });
  const client = new OpenAI({ baseURL: `${gw.url}/v1`, apiKey: funded.key, maxRetries: 0 });

  // tail --json --count 2: one JSON line per settled call, then it exits.
  const tail = spawn(process.execPath, ['bin/gateway.js', 'usage', 'tail', '--json', '--count', '2', '--url', gw.url, '--key', gw.adminKey], { cwd: ROOT, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let opened = false;
  tail.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  const exited = new Promise<number | null>((resolve) => tail.on('close', (code) => resolve(code)));
  // Wait until the tail's stream is subscribed before calling.
  for (let i = 0; i < 200 && !opened; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    opened = gw.app.usage.subscribers > 0;
  }
  t.ok(opened, 'the tail subscribed to the live stream');
  sim.enqueue({ text: 'one', usage: { input: 1000, output: 500 } }, { text: 'two', usage: { input: 10, output: 5 } });
  await client.chat.completions.create({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: 'a' }] });
  await client.chat.completions.create({ model: 'anthropic/claude-haiku-4-5', messages: [{ role: 'user', content: 'b' }], stream: true }).then(async (stream) => {
    for await (const chunk of stream) void chunk;
  });
  t.equal(await exited, 0, 'tail exits 0 after --count calls');
  const lines = out.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  t.equal(lines.length, 2, 'one JSON line per call');
  t.match(lines[0], { model: 'openai/gpt-4o-mini', account_email: 'tail@example.com', api_key_name: 'tail app', input_tokens: 1000, output_tokens: 500, cost: 0.0378, status: 200 });
  t.match(lines[1], { model: 'anthropic/claude-haiku-4-5', stream: true, input_tokens: 10, output_tokens: 5, status: 200 });

  const list = await runCli(['usage', 'list', '--json', '--url', gw.url, '--key', gw.adminKey, '--model', 'openai/gpt-4o-mini']);
  t.equal(list.code, 0);
  const doc = JSON.parse(list.stdout) as { data: { model: string; cost: number }[] };
  t.same(doc.data.map((row) => [row.model, row.cost]), [['openai/gpt-4o-mini', 0.0378]], 'list filters by model');

  const table = await runCli(['usage', 'list', '--url', gw.url, '--key', gw.adminKey]);
  t.equal(table.code, 0);
  t.match(table.stdout, /TIME\s+ACCOUNT\s+KEY\s+MODEL\s+IN\s+OUT\s+COST\s+LATENCY\s+STATUS/);
  t.match(table.stdout, /tail@example\.com\s+tail app\s+openai\/gpt-4o-mini\s+1000\s+500\s+₹0\.0378/);

  // Media calls show their billed units.
  await client.audio.speech.create({ model: 'openai/tts-1', input: 'twelve chars', voice: 'alloy' }).then((res) => res.arrayBuffer());
  await client.images.generate({ model: 'openai/dall-e-2', prompt: 'x', n: 2, size: '256x256' });
  gw.app.settlement.drain();
  const media = await runCli(['usage', 'list', '--url', gw.url, '--key', gw.adminKey]);
  t.match(media.stdout, /openai\/tts-1\s+12 chars\s+₹0\.01512/, 'speech in characters');
  t.match(media.stdout, /openai\/dall-e-2\s+2 img\s+₹2\.688/, 'images counted');
  const mediaJson = JSON.parse((await runCli(['usage', 'list', '--json', '--url', gw.url, '--key', gw.adminKey, '--model', 'openai/tts-1'])).stdout) as { data: Array<Record<string, unknown>> };
  t.match(mediaJson.data[0], { unit: 'characters', units: 12, endpoint: 'audio.speech' });

  const bad = await runCli(['usage', 'list', '--since', 'yesterday', '--url', gw.url, '--key', gw.adminKey]);
  t.equal(bad.code, 2, 'a bad --since is a usage error');
});
