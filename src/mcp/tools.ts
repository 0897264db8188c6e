import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { App } from '../app.js';
import type { KeyPrincipal } from '../api/guards.js';
import { presentAccount, presentCatalogModel } from '../api/presenters.js';
import { microsToInr } from '../core/money.js';
import { costMicros } from '../core/pricing.js';

/**
 * The management tools of the MCP server (issue 14), one registry for every transport: each
 * tool calls the same services the management API does, as the `akm-` key's principal.
 * This first slice has the read-only tools; the changing ones (accounts, top-ups, keys) are
 * to come.
 */

export const SERVER_INFO = { name: 'llm-gateway', version: '0.1.0' };

/** A tool's structured result, also as text (clients that read only text see the same). */
function result<T extends Record<string, unknown>>(value: T) {
  return { content: [{ type: 'text' as const, text: JSON.stringify(value) }], structuredContent: value };
}

export function createMcpServer(app: App, principal: KeyPrincipal): McpServer {
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} } });

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
        account = ref === undefined ? (app.accounts.get(principal.account.id) ?? principal.account) : app.accounts.resolve(ref);
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
      description: 'What a chat or embedding call of the given tokens costs on a model, in INR, at catalog prices (rounded up to the micro-rupee, as billed).',
      inputSchema: {
        model: z.string().describe('A catalog model id (openai/gpt-4o-mini) or a short name'),
        input_tokens: z.number().int().min(0).describe('Prompt tokens'),
        output_tokens: z.number().int().min(0).default(0).describe('Completion tokens'),
      },
      outputSchema: { model: z.string(), input_tokens: z.number(), output_tokens: z.number(), cost: z.number(), currency: z.literal('INR') },
      annotations: { readOnlyHint: true, idempotentHint: true, destructiveHint: false, openWorldHint: false },
    },
    async ({ model: name, input_tokens: inputTokens, output_tokens: outputTokens }) => {
      const model = app.catalog.get(name) ?? app.catalog.models.find((m) => m.id.slice(m.provider.length + 1) === name);
      if (!model) return { content: [{ type: 'text' as const, text: `model: no catalog model '${name}' (list_models lists them)` }], isError: true };
      const micros = costMicros(model.pricing, { inputTokens, outputTokens, cacheReadTokens: 0, cacheWriteTokens: 0, reasoningTokens: 0 });
      return result({ model: model.id, input_tokens: inputTokens, output_tokens: outputTokens, cost: microsToInr(micros), currency: 'INR' as const });
    },
  );

  return server;
}
