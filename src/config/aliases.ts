import { isRecord, type Problems } from './fields.js';
import type { ModelAlias, ModelConfig } from './types.js';

/**
 * `aliases:`: names clients may use for catalog models, e.g. Claude Code's default model names
 * mapped to whatever a team runs:
 *
 *     aliases:
 *       claude-opus-5-5: anthropic/claude-sonnet-4-5
 *       claude-haiku-5-5: openai/gpt-4o-mini
 *       claude-*-haiku-*: openai/gpt-4o-mini     # a pattern: * is any run of characters
 *
 * Each target is a catalog model id (in full: not a short name, not another alias). An exact
 * alias may not take a name the catalog already answers to (a model id or a short name): a
 * model would silently stop being reachable. A pattern may match catalog names, but never
 * takes them (the catalog's own names win over patterns; see src/core/catalog.ts).
 */

/** Letters, digits and the punctuation of model ids; `*` only in patterns. */
const ALIAS_NAME = /^[A-Za-z0-9*][A-Za-z0-9._:/@+*-]{0,199}$/;

export function readAliases(raw: unknown, models: readonly ModelConfig[], problems: Problems): ModelAlias[] {
  const out: ModelAlias[] = [];
  if (raw === undefined || raw === null) return out;
  if (!isRecord(raw)) {
    problems.add('aliases', 'must be a mapping of alias to catalog model id (e.g. claude-opus-5-5: anthropic/claude-sonnet-4-5)');
    return out;
  }
  const byId = new Map(models.map((model) => [model.id, model]));
  const shortNames = new Map<string, string[]>();
  for (const model of models) {
    const short = model.id.slice(model.provider.length + 1);
    shortNames.set(short, [...(shortNames.get(short) ?? []), model.id]);
  }
  const names = new Set(Object.keys(raw));
  for (const [name, value] of Object.entries(raw)) {
    const path = `aliases.${name}`;
    if (!ALIAS_NAME.test(name)) {
      problems.add(path, 'an alias is 1-200 characters of letters, digits and . _ : / @ + - (and * in a pattern), starting with a letter, a digit or *');
      continue;
    }
    const pattern = name.includes('*');
    if (!pattern) {
      if (byId.has(name)) {
        problems.add(path, `'${name}' is a catalog model id: an alias cannot take the name of a model`);
        continue;
      }
      const owners = shortNames.get(name);
      if (owners) {
        problems.add(path, `'${name}' is the short name of ${owners.join(', ')}: an alias cannot take the name of a model`);
        continue;
      }
    }
    if (typeof value !== 'string' || value.trim() === '') {
      problems.add(path, 'must be the catalog model id the alias stands for (e.g. anthropic/claude-sonnet-4-5)');
      continue;
    }
    const target = value.trim();
    if (!byId.has(target)) {
      const owners = shortNames.get(target);
      if (owners?.length === 1) problems.add(path, `'${target}' is a short name: write the catalog model id in full (${owners[0]})`);
      else if (names.has(target)) problems.add(path, `'${target}' is an alias: an alias names a catalog model id, not another alias`);
      else problems.add(path, `'${target}' is not a model of the catalog (GET /api/models lists them; a model added under models: counts)`);
      continue;
    }
    out.push({ name, target, pattern });
  }
  return out;
}
