import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { App } from '../app.js';
import type { KeyPrincipal } from '../api/guards.js';
import { parseKeyCreate, parseKeyUpdate } from '../api/key-bodies.js';
import { canSee, requireAdmin, scopedAccount } from '../api/management/access.js';
import { positiveAmount } from '../api/management/accounts.js';
import { presentAccount, presentCatalogModel, presentKey, presentLedgerEntry, presentUsage } from '../api/presenters.js';
import { isGatewayError } from '../core/errors.js';
import type { KeyKind } from '../core/keys.js';
import { microsToInr } from '../core/money.js';
import { costMicros, imagePriceMicros, speechCostMicros, transcriptionCostMicros } from '../core/pricing.js';
import { parseIsoDate } from '../core/time.js';
import { requiredEmail, requiredString } from '../core/validate.js';

/**
 * The management tools of the MCP server (issue 14), one registry for every transport: each
 * tool calls the same services the management API does, as the `akm-` key's principal.
 * A rule broken (a role, a field) is a tool error naming it (`isError`), never a protocol
 * failure; every call is logged (tool, key, account; never arguments that hold secrets).
 */

export const SERVER_INFO = { name: 'llm-gateway', version: '0.1.0' };

/** A tool's structured result, also as text (clients that read only text see the same). */
function result<T extends Record<string, unknown>>(value: T) {
  return { content: [{ type: 'text' as const, text: JSON.stringify(value) }], structuredContent: value };
}

export function createMcpServer(app: App, principal: KeyPrincipal): McpServer {
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {}, resources: {} } });

  server.registerResource('catalog', 'gateway://models', { title: 'Model catalog', description: 'Every model with its INR prices (the public catalog, GET /api/models)', mimeType: 'application/json' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ object: 'list', data: app.catalog.models.map(presentCatalogModel) }) }],
  }));
  server.registerResource('balance', 'gateway://balance', { title: 'Wallet balance', description: "The key's own account and its INR balance", mimeType: 'application/json' }, async (uri) => {
    app.store.barrier.pass();
    const view = presentAccount(await app.accounts.get(principal.account.id) ?? principal.account);
    return { contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify({ account_id: view.id, email: view.email, balance: view.balance, currency: 'INR' }) }] };
  });

  server.registerTool(
    'whoami',
    {
      title: 'Who am I',
      description: "The management key's account and role (admin keys manage every account; others only their own).",
      outputSchema: { account_id: z.string(), email: z.string(), name: z.string(), role: z.enum(['admin', 'user']), key_id: z.string(), key_name: z.string() },
      annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
    },
    async () => {
      const { account, key } = principal;
      return result({ account_id: account.id, email: account.email, name: account.name, role: account.role, key_id: key.id, key_name: key.name });
    },
  );

  server.registerTool(
    'get_balance',
    {
      title: 'Wallet balance',
      description: "An account's prepaid wallet balance in INR. Without account_id: the key's own account. Only admin keys may read another account.",
      inputSchema: { account_id: z.string().optional().describe('An account id or e-mail; default: your own account') },
      outputSchema: { account_id: z.string(), email: z.string(), balance: z.number(), currency: z.literal('INR') },
      annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
    },
    async ({ account_id: ref }) => {
      app.store.barrier.pass();
      if (ref !== undefined && principal.account.role !== 'admin' && ref !== principal.account.id && ref.toLowerCase() !== principal.account.email) {
        return { content: [{ type: 'text' as const, text: 'account_id: a non-admin management key can read only its own account' }], isError: true };
      }
      let account;
      try {
        account = ref === undefined ? (await app.accounts.get(principal.account.id) ?? principal.account) : await app.accounts.resolve(ref);
      } catch {
        return { content: [{ type: 'text' as const, text: `account_id: no account '${ref ?? ''}'` }], isError: true };
      }
      const view = presentAccount(account);
      return result({ account_id: view.id, email: view.email, balance: view.balance, currency: 'INR' as const });
    },
  );

  server.registerTool(
    'list_models',
    {
      title: 'Model catalog',
      description: 'The catalog: every model with its type and INR prices (per 1M tokens, per 1M characters, per minute or per image).',
      inputSchema: { type: z.enum(['chat', 'embedding', 'speech', 'transcription', 'image']).optional().describe('Only models of this kind') },
      outputSchema: { models: z.array(z.object({ id: z.string(), name: z.string(), type: z.string(), input_cost_per_1m: z.number(), output_cost_per_1m: z.number() }).passthrough()) },
      annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
    },
    async ({ type }) => result({ models: app.catalog.models.filter((model) => type === undefined || model.type === type).map(presentCatalogModel) }),
  );

  server.registerTool(
    'estimate_cost',
    {
      title: 'Estimate a call cost',
      description:
        'What a call costs on a model, in INR at catalog prices, rounded up to the micro-rupee as billed: chat and embedding models by input_tokens and output_tokens; speech by units = characters; transcription by units = seconds of audio; image models by units = images (optionally size and quality).',
      inputSchema: {
        model: z.string().describe('A catalog model id (openai/gpt-4o-mini) or a short name'),
        input_tokens: z.number().int().min(0).default(0).describe('Prompt tokens (chat, embedding)'),
        output_tokens: z.number().int().min(0).default(0).describe('Completion tokens (chat)'),
        units: z.number().int().min(0).optional().describe('Characters (speech), seconds (transcription) or images (image)'),
        size: z.string().optional().describe('Image size, e.g. 1024x1024'),
        quality: z.string().optional().describe('Image quality, e.g. hd'),
      },
      outputSchema: { model: z.string(), billed_in: z.string(), quantity: z.number(), cost: z.number(), currency: z.literal('INR') },
      annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
    },
    async ({ model: name, input_tokens: inputTokens, output_tokens: outputTokens, units, size, quality }) => {
      const model = app.catalog.get(name) ?? app.catalog.models.find((m) => m.id.slice(m.provider.length + 1) === name);
      if (!model) return { content: [{ type: 'text' as const, text: `model: no catalog model '${name}' (list_models lists them)` }], isError: true };
      let micros: number;
      let billedIn: string;
      let quantity: number;
      if (model.type === 'chat' || model.type === 'embedding') {
        micros = costMicros(model.pricing, { inputTokens, outputTokens, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });
        billedIn = 'tokens';
        quantity = inputTokens + outputTokens;
      } else {
        if (units === undefined) return { content: [{ type: 'text' as const, text: `units: required for ${model.id} (a ${model.type} model: ${model.type === 'speech' ? 'characters' : model.type === 'transcription' ? 'seconds' : 'images'})` }], isError: true };
        quantity = units;
        if (model.type === 'speech') {
          billedIn = 'characters';
          micros = speechCostMicros(model.pricing, units);
        } else if (model.type === 'transcription') {
          billedIn = 'seconds';
          micros = transcriptionCostMicros(model.pricing, units);
        } else {
          billedIn = 'images';
          micros = units * imagePriceMicros(model.pricing, size ?? model.image?.defaultSize ?? '1024x1024', quality ?? model.image?.defaultQuality);
        }
      }
      return result({ model: model.id, billed_in: billedIn, quantity, cost: microsToInr(micros), currency: 'INR' as const });
    },
  );

  const fail = (message: string) => ({ content: [{ type: 'text' as const, text: message }], isError: true });
  /** Runs a tool body: the management API's errors become tool errors; the call is audited. */
  const run = async <T>(tool: string, body: () => T | Promise<T>) => {
    app.logger.info({ mcp_tool: tool, mgmt_key_id: principal.key.id, account_id: principal.account.id }, 'mcp tool call');
    try {
      return await body();
    } catch (error) {
      if (isGatewayError(error)) return fail(error.message);
      throw error;
    }
  };
  const account = async (ref: string | undefined) => (ref === undefined ? principal.account : scopedAccount(app, principal, ref));
  const accountRef = z.string().optional().describe('An account id or e-mail; default: your own account');
  const changes = { readOnlyHint: false, destructiveHint: false, openWorldHint: false } as const;
  const list = z.array(z.record(z.string(), z.unknown()));

  server.registerTool(
    'list_accounts',
    {
      description: 'Every account with its balance in INR (admin keys only).',
      inputSchema: { limit: z.number().int().min(1).max(1000).default(100) },
      outputSchema: { accounts: list },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ limit }) =>
      run('list_accounts', async () => {
        requireAdmin(principal);
        app.store.barrier.pass();
        return result({ accounts: (await app.accounts.list(limit, 0)).map(presentAccount) });
      }),
  );

  server.registerTool(
    'create_account',
    {
      description: 'Creates an account with an empty wallet (admin keys only). Top it up with top_up_wallet, give it keys with create_api_key.',
      inputSchema: { email: z.string().describe('The e-mail, unique'), name: z.string().describe('A display name'), role: z.enum(['user', 'admin']).default('user') },
      outputSchema: { account: z.record(z.string(), z.unknown()) },
      annotations: { ...changes, idempotentHint: false },
    },
    async ({ email, name, role }) =>
      run('create_account', async () => {
        requireAdmin(principal);
        // The management API's own field rules (e-mail format, name length).
        const fields = { email, name };
        const created = await app.accounts.create({ email: requiredEmail(fields), name: requiredString(fields, 'name', { max: 200 }), role });
        return result({ account: presentAccount(created) });
      }),
  );

  server.registerTool(
    'top_up_wallet',
    {
      description: "Adds INR to an account's wallet (admin keys only). Give a reference (an invoice or PO number): a retry with the same reference applies once.",
      inputSchema: { account_id: z.string().describe('Account id or e-mail'), amount: z.number().positive().describe('INR, up to 6 decimals'), reference: z.string().max(200).optional(), note: z.string().max(500).optional() },
      outputSchema: { topup: z.record(z.string(), z.unknown()), balance: z.number(), replayed: z.boolean() },
      annotations: { ...changes, idempotentHint: true },
    },
    async ({ account_id: ref, amount, reference, note }) =>
      run('top_up_wallet', async () => {
        requireAdmin(principal);
        const target = await account(ref);
        const result_ = await app.wallet.topup({ accountId: target.id, amountMicros: positiveAmount({ amount }), createdBy: principal.account.id, ...(reference ? { reference } : {}), ...(note ? { note } : {}) });
        return result({ topup: presentLedgerEntry(result_.entry), balance: microsToInr(result_.balanceMicros), replayed: result_.replayed });
      }),
  );

  server.registerTool(
    'list_ledger',
    {
      description: "An account's wallet ledger, newest first: top-ups, charges and refunds with the balance after each.",
      inputSchema: { account_id: accountRef, limit: z.number().int().min(1).max(1000).default(50) },
      outputSchema: { entries: list },
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    },
    async ({ account_id: ref, limit }) => run('list_ledger', async () => result({ entries: (await app.wallet.ledger((await account(ref)).id, limit)).map(presentLedgerEntry) })),
  );

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
      async ({ account_id: ref }) => run(`list_${noun}s`, async () => result({ keys: (await app.keys.list(kind, (await account(ref)).id)).map((key) => presentKey(key, Date.now())) })),
    );
    server.registerTool(
      `create_${noun}`,
      {
        description:
          kind === 'api'
            ? 'Creates an sk- API key for an account: name, rate_limit (requests per minute, 1 to 10000), budget (INR, 0 = unlimited), expires_at (ISO date), cache (false: the response cache neither serves nor stores its calls). The secret is in the answer once and cannot be shown again.'
            : 'Creates an akm- management key for an account (name, expires_at). The secret is in the answer once and cannot be shown again.',
        inputSchema: {
          account_id: accountRef,
          name: z.string().describe('What the key is for'),
          ...(kind === 'api' ? { rate_limit: z.number().int().optional(), budget: z.number().optional(), cache: z.boolean().optional() } : {}),
          expires_at: z.string().optional().describe('ISO 8601 date or date-time, in the future'),
        },
        outputSchema: { key: z.record(z.string(), z.unknown()), secret: z.string() },
        annotations: { ...changes, idempotentHint: false },
      },
      async (args: { account_id?: string | undefined; name: string; rate_limit?: number | undefined; budget?: number | undefined; expires_at?: string | undefined; cache?: boolean | undefined }) =>
        run(`create_${noun}`, async () => {
          const target = await account(args.account_id);
          const now = Date.now();
          const body: Record<string, unknown> = { name: args.name };
          for (const field of ['rate_limit', 'budget', 'expires_at', 'cache'] as const) if (args[field] !== undefined) body[field] = args[field];
          const { record, secret } = await app.keys.create(kind, target.id, parseKeyCreate(kind, body, now));
          return {
            content: [{ type: 'text' as const, text: `Created ${record.name} (${record.maskedKey}). The secret below is shown once and cannot be recovered: store it now.\n${secret}` }],
            structuredContent: { key: presentKey(record, now), secret },
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
          return result({ key: presentKey(await app.keys.revoke(record), Date.now()) });
        }),
    );
  }

  server.registerTool(
    'update_api_key',
    {
      description: 'Changes an sk- API key: name, rate_limit (1 to 10000), budget (INR, 0 = unlimited), expires_at (ISO date; null clears it), cache (whether the response cache serves and stores its calls).',
      inputSchema: { key_id: z.string(), name: z.string().optional(), rate_limit: z.number().int().optional(), budget: z.number().optional(), expires_at: z.string().nullable().optional(), cache: z.boolean().optional() },
      outputSchema: { key: z.record(z.string(), z.unknown()) },
      annotations: { ...changes, idempotentHint: true },
    },
    async ({ key_id: id, ...fields }) =>
      run('update_api_key', async () => {
        const record = await app.keys.get('api', id, (key) => canSee(principal, key.accountId));
        const body: Record<string, unknown> = {};
        for (const [field, value] of Object.entries(fields)) if (value !== undefined) body[field] = value;
        const now = Date.now();
        return result({ key: presentKey(await app.keys.update(record, parseKeyUpdate('api', body, now)), now) });
      }),
  );

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

  return server;
}
