import { Option, type Command } from 'commander';
import { emit, inr, when, type Ui } from '../render.js';
import type { Io } from '../io.js';
import { dateArg, inrArg, intArg, managementClient, withClientOptions, type ClientFlags } from '../options.js';
import type { KeyView, ListOf } from './types.js';

/** A key's budget: 0 (or none, for a management key) is unlimited. */
const budgetText = (budget: number | undefined): string => (budget ? inr(budget) : 'unlimited');

interface KeyFlags extends ClientFlags {
  email?: string;
  name?: string;
  rateLimit?: number;
  budget?: number;
  expiresAt?: string;
  /** create: --no-cache sets false; update: --cache on|off. */
  cache?: boolean | string;
}

type Kind = 'api' | 'management';
const SEGMENT: Record<Kind, string> = { api: 'api-keys', management: 'management-keys' };

function keyBody(kind: Kind, flags: KeyFlags): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (flags.name !== undefined) body.name = flags.name;
  if (flags.expiresAt !== undefined) body.expires_at = flags.expiresAt === 'never' ? null : flags.expiresAt;
  if (kind === 'api') {
    if (flags.rateLimit !== undefined) body.rate_limit = flags.rateLimit;
    if (flags.budget !== undefined) body.budget = flags.budget;
    if (flags.cache === false || flags.cache === 'off') body.cache = false;
    else if (flags.cache === 'on') body.cache = true;
  }
  return body;
}

function keyEntries(key: KeyView): [string, string][] {
  const entries: [string, string][] = [
    ['id', key.id],
    ['name', key.name],
    ['account', key.account_id],
  ];
  if (key.object === 'api_key') {
    entries.push(['rate limit', `${key.rate_limit} requests/minute`], ['budget', budgetText(key.budget)], ['spent', inr(key.spent)]);
    if (key.cache !== undefined) entries.push(['response cache', key.cache ? 'on' : 'off (opted out)']);
  }
  entries.push(['expires', when(key.expires_at, 'never')], ['status', key.status]);
  return entries;
}

function KeyTable({ keys, ui }: { keys: KeyView[]; ui: Ui }) {
  const api = keys.some((key) => key.object === 'api_key');
  return (
    <ui.Table
      rows={keys}
      empty="no keys"
      columns={[
        { title: 'ID', value: (k) => k.id },
        { title: 'NAME', value: (k) => k.name },
        { title: 'KEY', value: (k) => k.masked_key },
        ...(api
          ? [
              { title: 'RPM', value: (k: KeyView) => String(k.rate_limit ?? ''), align: 'right' as const },
              { title: 'BUDGET', value: (k: KeyView) => budgetText(k.budget), align: 'right' as const },
              { title: 'SPENT', value: (k: KeyView) => inr(k.spent), align: 'right' as const },
            ]
          : []),
        { title: 'STATUS', value: (k) => k.status },
        { title: 'EXPIRES', value: (k) => when(k.expires_at, 'never') },
        { title: 'LAST USED', value: (k) => when(k.last_used_at, 'never') },
      ]}
    />
  );
}

/** `gateway keys …` (sk- API keys) and `gateway mgmt-keys …` (akm- management keys). */
export function registerKeyCommands(program: Command, io: Io, kind: Kind): void {
  const label = kind === 'api' ? 'API key' : 'management key';
  const aLabel = kind === 'api' ? 'an API key' : 'a management key';
  const group =
    kind === 'api'
      ? program.command('keys').description('issue, list, update and revoke sk- API keys')
      : program.command('mgmt-keys').description('issue, list and revoke akm- management keys');
  const accountPath = (email: string | undefined): string => `/api/management/accounts/${encodeURIComponent(email ?? 'me')}/${SEGMENT[kind]}`;

  const create = withClientOptions(group.command('create').description(`issue a new ${label} (shown once)`))
    .option('--email <email>', 'the account (default: the management key\'s own account)')
    .requiredOption('--name <name>', 'a name to recognise the key by')
    .option('--expires-at <when>', 'ISO 8601 date-time or YYYY-MM-DD', dateArg);
  if (kind === 'api') {
    create
      .option('--rate-limit <rpm>', 'requests per minute, 1-10000 (default 10000)', intArg(1, 10_000))
      .option('--budget <inr>', 'spending limit in INR (0 = unlimited)', inrArg)
      .option('--no-cache', 'the response cache neither serves nor stores this key\'s calls');
  }
  create.action(async (flags: KeyFlags) => {
    const key = await (await managementClient(flags, io)).post<KeyView>(accountPath(flags.email), keyBody(kind, flags));
    const secret = (kind === 'api' ? key.api_key : key.management_key) ?? '';
    await emit(io, flags.json, key, (ui) => <ui.SecretReveal label={`New ${label}`} secret={secret} entries={keyEntries(key)} />);
  });

  withClientOptions(group.command('list').description(`list ${label}s (no secrets)`))
    .option('--email <email>', 'the account (default: the management key\'s own account)')
    .action(async (flags: KeyFlags) => {
      const list = await (await managementClient(flags, io)).get<ListOf<KeyView>>(accountPath(flags.email));
      await emit(io, flags.json, list, (ui) => <KeyTable ui={ui} keys={list.data} />);
    });

  if (kind === 'api') {
    withClientOptions(group.command('update').description('change a key\'s name, rate limit, budget or expiry').argument('<id>', 'key id (key_…)'))
      .option('--name <name>', 'new name')
      .option('--rate-limit <rpm>', 'requests per minute, 1-10000', intArg(1, 10_000))
      .option('--budget <inr>', 'spending limit in INR (0 = unlimited)', inrArg)
      .option('--expires-at <when>', 'ISO 8601 date-time, YYYY-MM-DD, or "never"', dateArg)
      .addOption(new Option('--cache <on|off>', 'whether the response cache serves and stores this key\'s calls').choices(['on', 'off']))
      .action(async (id: string, flags: KeyFlags) => {
        const key = await (await managementClient(flags, io)).patch<KeyView>(`/api/management/${SEGMENT[kind]}/${encodeURIComponent(id)}`, keyBody(kind, flags));
        await emit(io, flags.json, key, (ui) => (
          <>
            <ui.Success message={`${label} ${key.id} updated`} />
            <KeyTable ui={ui} keys={[key]} />
          </>
        ));
      });
  }

  withClientOptions(group.command('revoke').description(`revoke ${aLabel} at once`).argument('<id>', kind === 'api' ? 'key id (key_…)' : 'key id (mk_…)')).action(
    async (id: string, flags: KeyFlags) => {
      const key = await (await managementClient(flags, io)).delete<KeyView>(`/api/management/${SEGMENT[kind]}/${encodeURIComponent(id)}`);
      await emit(io, flags.json, key, (ui) => <ui.Success message={`${label} ${key.id} (${key.masked_key}) revoked`} />);
    },
  );
}
