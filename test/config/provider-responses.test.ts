import t from 'tap';
import { buildConfig, ConfigError } from '../../src/config/load.js';

/** `providers.<name>.responses`: an OpenAI-family upstream with its own /v1/responses (issue 27). */

const build = (providers: Record<string, unknown>) => buildConfig({ providers }, { env: {}, baseDir: '/srv/gw', source: 'test.yaml' });

function problems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

t.test('responses: true on an openai provider; off by default', async (t) => {
  const config = build({ openai: { type: 'openai', base_url: 'https://api.openai.com/v1', api_key: 'k', responses: true }, groq: { type: 'openai', base_url: 'https://api.groq.com/openai/v1', api_key: 'k' } });
  t.equal(config.providers.openai?.responses, true);
  t.equal(config.providers.groq?.responses, undefined, 'an OpenAI-compatible vendor is translated to chat completions unless marked');
  t.equal(build({ openai: { type: 'openai', base_url: 'https://api.openai.com/v1', api_key: 'k', responses: false } }).providers.openai?.responses, undefined);
});

t.test('refused on other provider types and when not a boolean, naming the path', async (t) => {
  t.match(problems(() => build({ claude: { type: 'anthropic', base_url: 'https://api.anthropic.com', api_key: 'k', responses: true } })), [/^providers\.claude\.responses: only applies to providers of type openai/]);
  t.match(problems(() => build({ openai: { type: 'openai', base_url: 'https://api.openai.com/v1', api_key: 'k', responses: 'yes' } })), [/^providers\.openai\.responses: must be true or false/]);
});
