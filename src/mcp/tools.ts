import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { App } from '../app.js';
import type { KeyPrincipal } from '../api/guards.js';
import { requireAdmin } from '../api/management/access.js';
import { positiveAmount } from '../api/management/accounts.js';
import { presentAccount, presentCatalogList, presentCatalogModel, presentLedgerEntry } from '../api/presenters.js';
import { microsToInr } from '../core/money.js';
import { costMicros, imagePriceMicros, speechCostMicros, transcriptionCostMicros } from '../core/pricing.js';
import { requiredEmail, requiredString } from '../core/validate.js';
import { parseAccountUpdate } from '../api/account-bodies.js';
import { registerKeyTools } from './key-tools.js';
import { registerOperationsTools } from './operations-tools.js';
import { accountRef, changes, list, result, toolKit } from './tool-kit.js';

/**
 * The management tools of the MCP server (issue 14), one registry for every transport: each
 * tool calls the same services the management API does, as the `akm-` key's principal.
 * A rule broken (a role, a field) is a tool error naming it (`isError`), never a protocol
 * failure; every call is logged (tool, key, account; never arguments that hold secrets).
 * Here the resources, the catalog and wallet tools; the key tools in key-tools.ts, usage,
 * the response cache and the routes in operations-tools.ts.
 */

export const SERVER_INFO = { name: 'llm-gateway', version: '0.1.0' };

export function createMcpServer(app: App, principal: KeyPrincipal): McpServer {
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {}, resources: {} } });

  server.registerResource('catalog', 'gateway://models', { title: 'Model catalog', description: 'Every model with its INR prices (the public catalog, GET /api/models)', mimeType: 'application/json' }, async (uri) => ({
    contents: [{ uri: uri.href, mimeType: 'application/json', text: JSON.stringify(presentCatalogList(app.catalog)) }],
  }));
  server.registerResource('balance', 'gateway://balance', { title: 'Wallet balance', description: "The key's own account and its INR balance", mimeType: 'application/json' }, async (uri) => {
    app.store.barrier.pass();
    const view = presentAccount(await app.accounts.get(principal.account.id) ?? principal.account, { timeZone: app.config.governance.timeZone });
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
      const view = presentAccount(account, { timeZone: app.config.governance.timeZone });
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

  const kit = toolKit(server, app, principal);
  const { run, account } = kit;

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
        return result({ accounts: (await app.accounts.list(limit, 0)).map((account) => presentAccount(account, { timeZone: app.config.governance.timeZone })) });
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
        return result({ account: presentAccount(created, { timeZone: app.config.governance.timeZone }) });
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
    'update_account',
    {
      description:
        "Sets an account's spend limit (admin keys only): spend_limit, what all of its keys together may spend per spend_period (INR; 0 or null removes it), spend_period (daily, weekly, monthly in the gateway's time zone, or a duration like 30d counted from the account's creation; absent: for the account's life). Calls past it are refused with 402 account_spend_limit, whatever the wallet holds.",
      inputSchema: { account_id: z.string().describe('Account id or e-mail'), spend_limit: z.number().nullable().optional(), spend_period: z.string().nullable().optional() },
      outputSchema: { account: z.record(z.string(), z.unknown()) },
      annotations: { ...changes, idempotentHint: true },
    },
    async ({ account_id: ref, ...fields }) =>
      run('update_account', async () => {
        requireAdmin(principal);
        const target = await account(ref);
        const body: Record<string, unknown> = {};
        for (const [field, value] of Object.entries(fields)) if (value !== undefined) body[field] = value;
        const updated = await app.accounts.setSpendLimit(target, parseAccountUpdate(body));
        return result({ account: presentAccount(updated, { timeZone: app.config.governance.timeZone }) });
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

  registerKeyTools(kit);
  registerOperationsTools(kit);
  return server;
}
