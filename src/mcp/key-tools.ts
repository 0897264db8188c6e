import { z } from 'zod';
import { parseKeyCreate, parseKeyUpdate } from '../api/key-bodies.js';
import { canSee } from '../api/management/access.js';
import { presentKey } from '../api/presenters.js';
import type { KeyKind } from '../core/keys.js';
import { accountRef, changes, list, result, type ToolKit } from './tool-kit.js';

/** The MCP tools for keys: list, create and revoke sk- API keys and akm- management keys; update an sk- key. */
export function registerKeyTools({ server, app, principal, run, account }: ToolKit): void {
  for (const [kind, noun] of [
    ['api', 'api_key'],
    ['management', 'management_key'],
  ] as const satisfies ReadonlyArray<readonly [KeyKind, string]>) {
    const what = kind === 'api' ? 'API keys (sk-, for inference calls)' : 'management keys (akm-, for the management API and this server)';
    server.registerTool(
      `list_${noun}s`,
      {
        description: `An account's ${what}: masked, with status${kind === 'api' ? ', rate limit, budget and spend' : ''}.`,
        inputSchema: { account_id: accountRef },
        outputSchema: { keys: list },
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      async ({ account_id: ref }) => run(`list_${noun}s`, async () => result({ keys: (await app.keys.list(kind, (await account(ref)).id)).map((key) => presentKey(key, Date.now(), app.config.governance.timeZone)) })),
    );
    server.registerTool(
      `create_${noun}`,
      {
        description:
          kind === 'api'
            ? 'Creates an sk- API key for an account: name, rate_limit (requests per minute, 1 to 10000), budget (INR, 0 = unlimited), expires_at (ISO date), cache (false: the response cache neither serves nor stores its calls), models (catalog ids, aliases or patterns like openai/* the key may call; absent: all), allowed_ips (addresses and CIDRs it may be used from; absent: anywhere), max_parallel (calls in flight at once), tpm_limit (tokens per minute, input + output), budget_period (daily, weekly, monthly or a duration like 30d: the budget renews each period; absent: for the life of the key). The secret is in the answer once and cannot be shown again.'
            : 'Creates an akm- management key for an account (name, expires_at). The secret is in the answer once and cannot be shown again.',
        inputSchema: {
          account_id: accountRef,
          name: z.string().describe('What the key is for'),
          ...(kind === 'api'
            ? {
                rate_limit: z.number().int().optional(),
                budget: z.number().optional(),
                budget_period: z.string().optional(),
                cache: z.boolean().optional(),
                models: z.array(z.string()).optional(),
                allowed_ips: z.array(z.string()).optional(),
                max_parallel: z.number().int().optional(),
                tpm_limit: z.number().int().optional(),
              }
            : {}),
          expires_at: z.string().optional().describe('ISO 8601 date or date-time, in the future'),
        },
        outputSchema: { key: z.record(z.string(), z.unknown()), secret: z.string() },
        annotations: { ...changes, idempotentHint: false },
      },
      async (args: {
        account_id?: string | undefined;
        name: string;
        rate_limit?: number | undefined;
        budget?: number | undefined;
        expires_at?: string | undefined;
        cache?: boolean | undefined;
        models?: string[] | undefined;
        allowed_ips?: string[] | undefined;
        max_parallel?: number | undefined;
        tpm_limit?: number | undefined;
        budget_period?: string | undefined;
      }) =>
        run(`create_${noun}`, async () => {
          const target = await account(args.account_id);
          const now = Date.now();
          const body: Record<string, unknown> = { name: args.name };
          for (const field of ['rate_limit', 'budget', 'budget_period', 'expires_at', 'cache', 'models', 'allowed_ips', 'max_parallel', 'tpm_limit'] as const) if (args[field] !== undefined) body[field] = args[field];
          const { record, secret } = await app.keys.create(kind, target.id, parseKeyCreate(kind, body, now, app.catalog));
          return {
            content: [{ type: 'text' as const, text: `Created ${record.name} (${record.maskedKey}). The secret below is shown once and cannot be recovered: store it now.\n${secret}` }],
            structuredContent: { key: presentKey(record, now, app.config.governance.timeZone), secret },
          };
        }),
    );
    server.registerTool(
      `revoke_${noun}`,
      {
        description: `Revokes one of the ${what} for good: calls with it are refused from now on.`,
        inputSchema: { key_id: z.string() },
        outputSchema: { key: z.record(z.string(), z.unknown()) },
        annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      },
      async ({ key_id: id }) =>
        run(`revoke_${noun}`, async () => {
          const record = await app.keys.get(kind, id, (key) => canSee(principal, key.accountId));
          return result({ key: presentKey(await app.keys.revoke(record), Date.now(), app.config.governance.timeZone) });
        }),
    );
  }

  server.registerTool(
    'update_api_key',
    {
      description:
        'Changes an sk- API key: name, rate_limit (1 to 10000), budget (INR, 0 = unlimited), expires_at (ISO date; null clears it), cache (whether the response cache serves and stores its calls), models and allowed_ips (lists; [] or null clears), max_parallel, tpm_limit and budget_period (null clears).',
      inputSchema: {
        key_id: z.string(),
        name: z.string().optional(),
        rate_limit: z.number().int().optional(),
        budget: z.number().optional(),
        expires_at: z.string().nullable().optional(),
        cache: z.boolean().optional(),
        models: z.array(z.string()).nullable().optional(),
        allowed_ips: z.array(z.string()).nullable().optional(),
        max_parallel: z.number().int().nullable().optional(),
        tpm_limit: z.number().int().nullable().optional(),
        budget_period: z.string().nullable().optional(),
      },
      outputSchema: { key: z.record(z.string(), z.unknown()) },
      annotations: { ...changes, idempotentHint: true },
    },
    async ({ key_id: id, ...fields }) =>
      run('update_api_key', async () => {
        const record = await app.keys.get('api', id, (key) => canSee(principal, key.accountId));
        const body: Record<string, unknown> = {};
        for (const [field, value] of Object.entries(fields)) if (value !== undefined) body[field] = value;
        const now = Date.now();
        return result({ key: presentKey(await app.keys.update(record, parseKeyUpdate('api', body, now, app.catalog)), now, app.config.governance.timeZone) });
      }),
  );
}
