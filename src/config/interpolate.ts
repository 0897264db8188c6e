/**
 * `${VAR}` and `${VAR:-default}` interpolation over every string of a parsed YAML tree.
 * `$${` writes a literal `${`. Unset variables without a default become "" and are recorded
 * per path, so the validator can name the variable when a required value came out empty.
 */

export interface Interpolated {
  value: unknown;
  /** path ("providers.openai.api_key") → names of unset variables used there. */
  unset: Map<string, string[]>;
}

const PATTERN = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export function interpolateEnv(tree: unknown, env: NodeJS.ProcessEnv): Interpolated {
  const unset = new Map<string, string[]>();
  const walk = (node: unknown, path: string): unknown => {
    if (typeof node === 'string') return interpolateString(node, env, path, unset);
    if (Array.isArray(node)) return node.map((item, index) => walk(item, `${path}[${index}]`));
    if (node !== null && typeof node === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(node)) out[key] = walk(child, path ? `${path}.${key}` : key);
      return out;
    }
    return node;
  };
  return { value: walk(tree, ''), unset };
}

function interpolateString(text: string, env: NodeJS.ProcessEnv, path: string, unset: Map<string, string[]>): string {
  if (!text.includes('$')) return text;
  return text.replace(PATTERN, (match, name: string | undefined, fallback: string | undefined) => {
    if (match === '$${') return '${';
    const value = env[name as string];
    if (value !== undefined && value !== '') return value;
    if (fallback !== undefined) return fallback;
    const names = unset.get(path) ?? [];
    names.push(name as string);
    unset.set(path, names);
    return '';
  });
}
