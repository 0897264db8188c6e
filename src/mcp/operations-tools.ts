import { z } from 'zod';
import { requireAdmin } from '../api/management/access.js';
import { presentUsage } from '../api/presenters.js';
import { microsToInr } from '../core/money.js';
import { routesFor } from '../core/routing/view.js';
import { parseIsoDate } from '../core/time.js';
import { accountRef, fail, list, result, type ToolKit } from './tool-kit.js';

/** The MCP tools for running the gateway: usage, the response cache, the router's routes. */
export function registerOperationsTools({ server, app, principal, run, account }: ToolKit): void {
  server.registerTool(
    'query_usage',
    {
      description: 'Billed calls, newest first, or their totals grouped by day, model or key. Filters: account (admins: any), key, model, endpoint, time range (ISO dates).',
      inputSchema: {
        account_id: accountRef,
        api_key_id: z.string().optional(),
        model: z.string().optional(),
        endpoint: z.string().optional(),
        since: z.string().optional().describe('ISO date or date-time, inclusive'),
        until: z.string().optional().describe('ISO date or date-time, exclusive'),
        group_by: z.enum(['day', 'model', 'key']).optional().describe('Totals instead of rows'),
        limit: z.number().int().min(1).max(1000).default(100),
      },
      outputSchema: { rows: list },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async (args) =>
      run('query_usage', async () => {
        const time = (field: 'since' | 'until'): number | undefined => {
          const text = args[field];
          if (text === undefined) return undefined;
          const parsed = parseIsoDate(text);
          if (!parsed.ok) throw Object.assign(new Error(), { gateway: `${field}: ${parsed.rule}` });
          return parsed.ms;
        };
        let since: number | undefined;
        let until: number | undefined;
        try {
          since = time('since');
          until = time('until');
        } catch (error) {
          return fail((error as { gateway: string }).gateway);
        }
        const target = await account(args.account_id);
        const rows = await app.usage.list({
          accountId: target.id,
          limit: args.group_by ? 100_000 : args.limit,
          ...(args.api_key_id ? { apiKeyId: args.api_key_id } : {}),
          ...(args.model ? { model: args.model } : {}),
          ...(args.endpoint ? { endpoint: args.endpoint } : {}),
          ...(since !== undefined ? { since } : {}),
          ...(until !== undefined ? { until } : {}),
        });
        if (!args.group_by) return result({ rows: rows.map((row) => presentUsage(row)) });
        const groups = new Map<string, { calls: number; errors: number; micros: number }>();
        for (const row of rows) {
          const group = args.group_by === 'day' ? new Date(row.createdAt).toISOString().slice(0, 10) : args.group_by === 'model' ? row.model : (row.apiKeyId ?? '(none)');
          const entry = groups.get(group) ?? { calls: 0, errors: 0, micros: 0 };
          entry.calls += 1;
          entry.errors += row.status >= 400 ? 1 : 0;
          entry.micros += row.costMicros;
          groups.set(group, entry);
        }
        return result({ rows: [...groups].map(([group, totals]) => ({ [args.group_by as string]: group, calls: totals.calls, errors: totals.errors, cost: microsToInr(totals.micros) })) });
      }),
  );

  server.registerTool(
    'purge_cache',
    {
      description:
        "Removes cached answers from the gateway's response cache, so that the next calls go to the providers: one account's (account_id; a non-admin key only its own), or every account's (all: true, admin keys only).",
      inputSchema: { account_id: accountRef, all: z.boolean().optional().describe('Every account (admins only)') },
      outputSchema: { removed: z.number(), account_id: z.string().nullable() },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ account_id: ref, all }) =>
      run('purge_cache', async () => {
        if (!app.cache) return fail('the response cache is not enabled on this gateway (cache.enabled in its config)');
        if (all === true && ref !== undefined) return fail('give account_id or all, not both');
        if (all === true && principal.account.role !== 'admin') return fail('all: only admin keys may empty the whole cache');
        const target = all === true ? undefined : await account(ref);
        const removed = await app.cache.purge(target?.id);
        app.logger.info({ account: target?.id ?? 'all', removed, by: principal.key.id }, 'response cache purged');
        return result({ removed, account_id: target?.id ?? null });
      }),
  );

  const rest = { state: z.enum(['ok', 'resting']), resting_until: z.string().nullable(), reason: z.enum(['failures', 'auth', 'quota', 'retry-after']).nullable() };
  const deployment = z
    .object({
      id: z.string(),
      provider: z.string(),
      upstream_model: z.string(),
      weight: z.number(),
      priority: z.number(),
      ...rest,
      keys: z.array(z.object({ index: z.number(), fingerprint: z.string(), ...rest }).passthrough()),
      in_flight: z.number(),
      calls: z.number(),
      failures: z.number(),
      latency_ms: z.number().nullable(),
    })
    .passthrough();

  server.registerTool(
    'list_routes',
    {
      title: 'Routes',
      description:
        "How the gateway routes each model (admin keys only): its deployments in the order they are tried (provider, upstream model, priority, weight), each one's state (ok, or resting until when and why: failures, auth, quota, retry-after), its provider's keys (fingerprints, never the keys), calls in flight, calls and failed attempts in the last window, and recent latency; the model's fallbacks; the strategy, retries and cooldown. Without model: only the active models (several deployments, fallbacks, a rest or traffic), or every model with all: true.",
      inputSchema: {
        model: z.string().optional().describe('A model id (openai/gpt-4o-mini) or short name: only this model, active or not'),
        all: z.boolean().optional().describe('Every model of the catalog, not only the active ones'),
      },
      outputSchema: {
        object: z.literal('routes'),
        strategy: z.string(),
        retries: z.number(),
        window_seconds: z.number(),
        cooldown: z.object({ failures: z.number(), window_seconds: z.number(), duration_seconds: z.number() }),
        data: z.array(z.object({ model: z.string(), type: z.string(), deployments: z.array(deployment), fallbacks: z.array(z.string()) }).passthrough()),
      },
      annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
    },
    async ({ model, all }) =>
      run('list_routes', () => {
        requireAdmin(principal);
        // As GET /api/management/routes: ?model= one model (active or not), else ?active=true unless all.
        return result({ ...routesFor(app.config, app.catalog, app.routes, { model, activeOnly: all !== true }) });
      }),
  );
}
