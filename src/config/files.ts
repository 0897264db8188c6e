import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from './errors.js';

/** The files configuration is read from: YAML (the parser loaded on first use) and the built-in catalog. */

export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const BUILTIN_CATALOG = resolve(PACKAGE_ROOT, 'config/models.yaml');
/**
 * The built-in catalog as JSON, written by `npm run build` (compileBuiltinCatalog): a start
 * reads it with JSON.parse instead of loading the YAML parser and parsing the catalog (~15 MB
 * of resident memory between them). Used only while it is at least as new as the YAML.
 */
export const BUILTIN_CATALOG_JSON = resolve(PACKAGE_ROOT, 'dist/models.json');

/** The YAML package, loaded by the first YAML file read (a start on the built-in defaults reads none). */
let yaml: typeof import('yaml') | undefined;
function parseDocument(text: string, options: import('yaml').DocumentOptions & import('yaml').ParseOptions & import('yaml').SchemaOptions) {
  yaml ??= createRequire(import.meta.url)('yaml') as typeof import('yaml');
  return yaml.parseDocument(text, options);
}

/** A YAML file as plain data; its syntax errors as a ConfigError with file:line:column each. */
export function parseYamlFile(file: string): unknown {
  const text = readFileSync(file, 'utf8');
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new ConfigError(
      file,
      doc.errors.map((error) => {
        const at = error.linePos?.[0];
        const message = (error.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
        return `${file}:${at ? `${at.line}:${at.col}` : '?'}: ${message}`;
      }),
    );
  }
  return doc.toJS() ?? {};
}

/** Writes BUILTIN_CATALOG_JSON (or `out`) from config/models.yaml; throws on a YAML error. */
export function compileBuiltinCatalog(out = BUILTIN_CATALOG_JSON): void {
  writeFileSync(out, JSON.stringify(parseYamlFile(BUILTIN_CATALOG)));
}

/** A catalog file's content: the built-in one from its compiled JSON when that is current. */
export function readCatalogFile(file: string): unknown {
  if (file === BUILTIN_CATALOG) {
    try {
      if (statSync(BUILTIN_CATALOG_JSON).mtimeMs >= statSync(BUILTIN_CATALOG).mtimeMs) return JSON.parse(readFileSync(BUILTIN_CATALOG_JSON, 'utf8')) as unknown;
    } catch {
      // not built, or unreadable: the YAML below
    }
  }
  return parseYamlFile(file);
}
