import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { PACKAGE_ROOT } from '../../src/config/load.js';
import { build, problemsOf } from '../support/config.js';
import { Catalog } from '../../src/core/catalog.js';

/** `aliases:` (issue 27): names clients may use for catalog models, validated at load with the path and the rule. */

t.test('none by default; exact names and patterns kept in file order', async (t) => {
  t.same(build({}).aliases, []);
  const config = build({
    aliases: {
      'claude-opus-5-5': 'anthropic/claude-sonnet-4-5',
      'claude-haiku-5-5': 'openai/gpt-4o-mini',
      'claude-*-haiku-*': 'openai/gpt-4o-mini',
      'claude-*': 'anthropic/claude-sonnet-4-5',
    },
  });
  t.same(config.aliases, [
    { name: 'claude-opus-5-5', target: 'anthropic/claude-sonnet-4-5', pattern: false },
    { name: 'claude-haiku-5-5', target: 'openai/gpt-4o-mini', pattern: false },
    { name: 'claude-*-haiku-*', target: 'openai/gpt-4o-mini', pattern: true },
    { name: 'claude-*', target: 'anthropic/claude-sonnet-4-5', pattern: true },
  ]);
  t.ok(Object.isFrozen(config.aliases), 'frozen with the rest of the config');
  t.same(build({ aliases: null }).aliases, [], 'an empty section is none');
  t.same(build({ aliases: { team: 'team/chat' }, models: [{ id: 'team/chat', name: 'Team chat', upstream_model: 'llama', input_cost_per_1m: 1, output_cost_per_1m: 2, deployments: [{ provider: 'groq' }] }] }).aliases, [{ name: 'team', target: 'team/chat', pattern: false }], 'a model added under models: is a target too');
});

t.test('every problem named with its path and the rule', async (t) => {
  t.same(problemsOf({ aliases: ['claude-opus-5-5'] }), ['aliases: must be a mapping of alias to catalog model id (e.g. claude-opus-5-5: anthropic/claude-sonnet-4-5)']);
  t.same(
    problemsOf({
      aliases: {
        'claude-opus-5-5': 'anthropic/claude-opus-9',
        'claude-haiku-5-5': 'gpt-4o-mini',
        'openai/gpt-4o-mini': 'anthropic/claude-haiku-4-5',
        'gpt-4o': 'openai/gpt-4o-mini',
        fast: 'claude-haiku-5-5',
        empty: '',
        number: 42,
        'has space': 'openai/gpt-4o-mini',
        '-dash': 'openai/gpt-4o-mini',
      },
    }),
    [
      "aliases.claude-opus-5-5: 'anthropic/claude-opus-9' is not a model of the catalog (GET /api/models lists them; a model added under models: counts)",
      "aliases.claude-haiku-5-5: 'gpt-4o-mini' is a short name: write the catalog model id in full (openai/gpt-4o-mini)",
      "aliases.openai/gpt-4o-mini: 'openai/gpt-4o-mini' is a catalog model id: an alias cannot take the name of a model",
      "aliases.gpt-4o: 'gpt-4o' is the short name of openai/gpt-4o: an alias cannot take the name of a model",
      "aliases.fast: 'claude-haiku-5-5' is an alias: an alias names a catalog model id, not another alias",
      'aliases.empty: must be the catalog model id the alias stands for (e.g. anthropic/claude-sonnet-4-5)',
      'aliases.number: must be the catalog model id the alias stands for (e.g. anthropic/claude-sonnet-4-5)',
      'aliases.has space: an alias is 1-200 characters of letters, digits and . _ : / @ + - (and * in a pattern), starting with a letter, a digit or *',
      'aliases.-dash: an alias is 1-200 characters of letters, digits and . _ : / @ + - (and * in a pattern), starting with a letter, a digit or *',
    ],
  );
  t.same(problemsOf({ aliases: { 'claude-*-haiku-*': 'claude-haiku-4-5' } }), ["aliases.claude-*-haiku-*: 'claude-haiku-4-5' is a short name: write the catalog model id in full (anthropic/claude-haiku-4-5)"], 'a pattern\'s target too');
  t.same(problemsOf({ aliases: { 'gpt-*': 'openai/gpt-4o-mini' } }), [], 'a pattern may match catalog names (they win over it)');
  t.same(problemsOf({ aliases: { claude: 'anthropic/claude-sonnet-4-5' }, catalog: { path: 'none' }, models: [] }), ["aliases.claude: 'anthropic/claude-sonnet-4-5' is not a model of the catalog (GET /api/models lists them; a model added under models: counts)"], 'checked against the catalog in use');
  t.match(problemsOf({ aliase: {} }), [/^aliase: unknown key \(expected one of: .*aliases\)$/], 'a typo of the section is named');
});

t.test('resolution: exact names first, then the catalog\'s own names, then patterns in file order', async (t) => {
  const config = build({
    aliases: {
      'claude-opus-5-5': 'anthropic/claude-sonnet-4-5',
      'claude-*-haiku-*': 'openai/gpt-4o-mini',
      'claude-*': 'gemini/gemini-2.5-flash',
      'claude-haiku-5-5': 'openai/gpt-4o',
    },
  });
  const catalog = new Catalog(config.models, config.aliases);
  t.equal(catalog.alias('claude-opus-5-5'), 'anthropic/claude-sonnet-4-5', 'an exact alias');
  t.equal(catalog.alias('claude-haiku-5-5'), 'openai/gpt-4o', 'an exact name wins over a pattern written before it');
  t.equal(catalog.alias('claude-3-7-haiku-20250219'), 'openai/gpt-4o-mini', 'the first pattern that matches, in file order');
  t.equal(catalog.alias('claude-sonnet-9'), 'gemini/gemini-2.5-flash', 'then the next');
  t.equal(catalog.alias('claude-3-5-haiku-latest'), undefined, 'a catalog short name is never taken by a pattern');
  t.equal(catalog.alias('anthropic/claude-haiku-4-5'), undefined, 'nor a catalog id');
  t.equal(catalog.alias('gpt-4o-mini'), undefined, 'a name no alias matches');
  t.equal(catalog.alias('claude--haiku-'), 'openai/gpt-4o-mini', '* matches an empty run');
  t.equal(catalog.alias('Claude-opus-5-5'), undefined, 'names are case-sensitive, as model ids are');
  const literal = new Catalog(config.models, [{ name: 'a.b*', target: 'openai/gpt-4o-mini', pattern: true }]);
  t.equal(literal.alias('a.b1'), 'openai/gpt-4o-mini');
  t.equal(literal.alias('axb1'), undefined, 'only * is special: a dot is a dot');
});

t.test('gateway.example.yaml: its commented aliases are a valid section', async (t) => {
  const text = readFileSync(join(PACKAGE_ROOT, 'gateway.example.yaml'), 'utf8');
  const block = /^# aliases:\n((?:#   .*\n)+)/m.exec(text);
  t.ok(block, 'the example has an aliases section');
  const yaml = `aliases:\n${(block?.[1] ?? '').replace(/^# /gm, '')}`;
  const raw = parse(yaml) as Record<string, unknown>;
  t.same(build(raw).aliases.map((alias) => alias.name), ['claude-opus-5-5', 'claude-haiku-5-5', 'claude-*-haiku-*', 'claude-*']);
});
