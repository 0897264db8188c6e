/**
 * A small router: static paths in a Map (one lookup on the hot path), parameterised paths
 * (`/api/api-keys/:id`, `/v1/models/*id`) in a list. Knows 404 from 405.
 */

export type RouteMatch<H> =
  | { kind: 'found'; handler: H; params: Record<string, string>; /** The route as registered (`/api/api-keys/:id`): a bounded label for metrics and spans. */ pattern?: string }
  | { kind: 'method_not_allowed'; allowed: string[]; /** A handler of the path, for the path's own error format. */ sibling: H; pattern?: string }
  | { kind: 'not_found' };

interface DynamicRoute<H> {
  pattern: string;
  segments: string[];
  handlers: Map<string, H>;
}

export class Router<H> {
  private readonly staticRoutes = new Map<string, Map<string, H>>();
  private readonly dynamicRoutes: DynamicRoute<H>[] = [];

  add(method: string, pattern: string, handler: H): this {
    const isDynamic = pattern.includes('/:') || pattern.includes('/*');
    if (!isDynamic) {
      const handlers = this.staticRoutes.get(pattern) ?? new Map<string, H>();
      if (handlers.has(method)) throw new Error(`duplicate route ${method} ${pattern}`);
      handlers.set(method, handler);
      this.staticRoutes.set(pattern, handlers);
      return this;
    }
    const segments = pattern.split('/').slice(1);
    let route = this.dynamicRoutes.find((r) => r.segments.join('/') === segments.join('/'));
    if (!route) {
      route = { pattern, segments, handlers: new Map() };
      this.dynamicRoutes.push(route);
    }
    if (route.handlers.has(method)) throw new Error(`duplicate route ${method} ${pattern}`);
    route.handlers.set(method, handler);
    return this;
  }

  match(method: string, path: string): RouteMatch<H> {
    const normalized = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const exact = this.staticRoutes.get(normalized);
    if (exact) return pick(exact, method, {}, normalized);
    const parts = normalized.split('/').slice(1);
    for (const route of this.dynamicRoutes) {
      const params = matchSegments(route.segments, parts);
      if (params) return pick(route.handlers, method, params, route.pattern);
    }
    return { kind: 'not_found' };
  }
}

function pick<H>(handlers: Map<string, H>, method: string, params: Record<string, string>, pattern: string): RouteMatch<H> {
  const handler = handlers.get(method) ?? (method === 'HEAD' ? handlers.get('GET') : undefined);
  if (handler) return { kind: 'found', handler, params, pattern };
  return { kind: 'method_not_allowed', allowed: [...handlers.keys()], sibling: handlers.values().next().value as H, pattern };
}

function matchSegments(pattern: string[], parts: string[]): Record<string, string> | null {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const segment = pattern[i] as string;
    if (segment.startsWith('*')) {
      const rest = parts.slice(i);
      if (rest.length === 0 || rest.some((part) => part === '')) return null;
      params[segment.slice(1)] = decode(rest.join('/'));
      return params;
    }
    const part = parts[i];
    if (part === undefined || part === '') return null;
    if (segment.startsWith(':')) params[segment.slice(1)] = decode(part);
    else if (segment !== part) return null;
  }
  return parts.length === pattern.length ? params : null;
}

function decode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
