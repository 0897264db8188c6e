import { InvalidArgumentError, type Command } from 'commander';
import { parseInr } from '../core/money.js';
import { parseIsoDate } from '../core/time.js';
import { ManagementClient } from './client.js';
import type { Io } from './io.js';

/** Options every client command takes, and turning them into a client. */

export interface ClientFlags {
  url?: string;
  key?: string;
  config?: string;
  json?: boolean;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

export function withClientOptions(command: Command): Command {
  return command
    .option('--url <url>', 'gateway address (default: $GATEWAY_URL, else the config file\'s server address)')
    .option('--key <akm-key>', 'management key (default: $GATEWAY_ADMIN_KEY)')
    .option('--config <file>', 'config file, used for the default --url')
    .option('--json', 'print one JSON document on stdout');
}

/** --url, else $GATEWAY_URL, else the config file's server address (the config loader loads only then). */
export async function gatewayUrl(flags: ClientFlags, io: Io): Promise<string> {
  if (flags.url) return flags.url;
  if (io.env.GATEWAY_URL) return io.env.GATEWAY_URL;
  const { loadConfig } = await import('../config/load.js');
  const config = loadConfig({ ...(flags.config ? { file: flags.config } : {}), env: io.env });
  const host = config.server.host === '0.0.0.0' || config.server.host === '::' ? '127.0.0.1' : config.server.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.server.port}`;
}

export async function managementClient(flags: ClientFlags, io: Io): Promise<ManagementClient> {
  const key = flags.key ?? io.env.GATEWAY_ADMIN_KEY;
  if (!key) throw new UsageError('no management key: pass --key akm-… or set GATEWAY_ADMIN_KEY');
  return new ManagementClient({ url: await gatewayUrl(flags, io), key });
}

export async function publicClient(flags: ClientFlags, io: Io): Promise<ManagementClient> {
  return new ManagementClient({ url: await gatewayUrl(flags, io) });
}

// Argument parsers: a bad value is a usage error (exit 2) with the rule in the message.

export function inrArg(value: string): number {
  const parsed = parseInr(value);
  if (!parsed.ok) throw new InvalidArgumentError(`${parsed.rule}`);
  return Number(value);
}

export function intArg(min: number, max: number) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new InvalidArgumentError(`must be an integer from ${min} to ${max}`);
    return Number(value);
  };
}

/** A limit: an integer from 1 to `max`, or "none" (null: no limit). */
export function limitArg(max: number) {
  const int = intArg(1, max);
  return (value: string): number | null => (value === 'none' ? null : int(value));
}

export function dateArg(value: string): string {
  if (value === 'never') return value;
  const parsed = parseIsoDate(value);
  if (!parsed.ok) throw new InvalidArgumentError(parsed.rule);
  return value;
}
