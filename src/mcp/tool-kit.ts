import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { App } from '../app.js';
import type { KeyPrincipal } from '../api/guards.js';
import { scopedAccount } from '../api/management/access.js';
import { isGatewayError } from '../core/errors.js';

/** What every group of MCP tools shares (tools.ts, key-tools.ts, operations-tools.ts): one principal, one audit, one error shape. */

/** A tool's structured result, also as text (clients that read only text see the same). */
export function result<T extends Record<string, unknown>>(value: T) {
  return { content: [{ type: 'text' as const, text: JSON.stringify(value) }], structuredContent: value };
}

/** A rule broken: a tool error naming it (`isError`), never a protocol failure. */
export const fail = (message: string) => ({ content: [{ type: 'text' as const, text: message }], isError: true });

export const accountRef = z.string().optional().describe('An account id or e-mail; default: your own account');
export const changes = { readOnlyHint: false, destructiveHint: false, openWorldHint: false } as const;
export const list = z.array(z.record(z.string(), z.unknown()));

export interface ToolKit {
  server: McpServer;
  app: App;
  principal: KeyPrincipal;
  /** Runs a tool body: the management API's errors become tool errors; the call is audited. */
  run<T>(tool: string, body: () => T | Promise<T>): Promise<T | ReturnType<typeof fail>>;
  /** The account a tool names (an admin any, a user its own), or the key's own without one. */
  account(ref: string | undefined): Promise<KeyPrincipal['account']>;
}

export function toolKit(server: McpServer, app: App, principal: KeyPrincipal): ToolKit {
  return {
    server,
    app,
    principal,
    run: async (tool, body) => {
      app.logger.info({ mcp_tool: tool, mgmt_key_id: principal.key.id, account_id: principal.account.id }, 'mcp tool call');
      try {
        return await body();
      } catch (error) {
        if (isGatewayError(error)) return fail(error.message);
        throw error;
      }
    },
    account: async (ref) => (ref === undefined ? principal.account : scopedAccount(app, principal, ref)),
  };
}
