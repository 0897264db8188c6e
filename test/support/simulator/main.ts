import { parseArgs } from 'node:util';
import { ProviderSimulator } from './server.js';

/**
 * Standalone provider simulator:
 *   node --import tsx test/support/simulator/main.ts --port 9999 [--key sim-key] [--host 127.0.0.1]
 * Scenarios come from `SIM: {...}` directives in the last user message (chat only: media
 * endpoints play the default scenario).
 */

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '9999' },
    key: { type: 'string', default: 'sim-key' },
    host: { type: 'string', default: '127.0.0.1' },
  },
});

const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`invalid --port: ${values.port}\n`);
  process.exit(2);
}

const sim = await ProviderSimulator.start({ port, apiKey: values.key, host: values.host });
process.stdout.write(
  [
    `Provider simulator listening on ${sim.url} (API key: ${sim.apiKey})`,
    `  OpenAI base URL:    ${sim.openaiBaseUrl}`,
    `  Anthropic base URL: ${sim.anthropicBaseUrl}`,
    `  Gemini base URL:    ${sim.geminiBaseUrl}`,
    `  Groq base URL:      ${sim.groqBaseUrl}`,
    `  Deepgram base URL:  ${sim.deepgramBaseUrl}`,
    `  Media: OpenAI/Groq embeddings, audio/speech, audio/transcriptions, images/generations;`,
    `         Gemini :embedContent, :batchEmbedContents, image generateContent; Deepgram /v1/speak, /v1/listen`,
    `Put 'SIM: {"text":"...","toolCalls":[...],...}' at the end of the last user message to script a reply.`,
    '',
  ].join('\n'),
);

let stopping = false;
const stop = (signal: NodeJS.Signals): void => {
  if (stopping) return;
  stopping = true;
  process.stdout.write(`${signal}: stopping\n`);
  sim.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
