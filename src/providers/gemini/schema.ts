/**
 * JSON Schema → the OpenAPI-subset Schema Gemini's `parameters` and `responseSchema` accept.
 * Gemini answers 400 "Invalid JSON payload received. Unknown name ..." for keys outside its
 * subset ($schema, additionalProperties, $ref ...), so only known keys are kept; type arrays
 * with "null" become `nullable`, and `const` becomes a one-value `enum`.
 * (ai.google.dev/api/caching#Schema; pitfall seen in CLIProxyAPI #97, zed #44875.)
 */

const KEPT = new Set(['type', 'format', 'description', 'nullable', 'enum', 'maxItems', 'minItems', 'properties', 'required', 'items', 'minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'anyOf', 'propertyOrdering', 'title', 'default']);

export function toGeminiSchema(schema: unknown): Record<string, unknown> {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return {};
  const source = schema as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(source)) {
    if (!KEPT.has(key)) continue;
    if (key === 'properties' && typeof value === 'object' && value !== null) {
      out.properties = Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([name, child]) => [name, toGeminiSchema(child)]));
    } else if (key === 'items') out.items = toGeminiSchema(value);
    else if (key === 'anyOf' && Array.isArray(value)) out.anyOf = value.map(toGeminiSchema);
    else if (key === 'type' && Array.isArray(value)) {
      const types = value.filter((t) => t !== 'null');
      if (types.length !== value.length) out.nullable = true;
      if (types[0] !== undefined) out.type = types[0];
    } else out[key] = value;
  }
  if ('const' in source && !('enum' in source)) out.enum = [source.const];
  return out;
}
